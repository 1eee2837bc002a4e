#include "recorder/deferred_ops.h"

#include "digest/hash_pool.h"

namespace upguard {
namespace {

bool Done(const std::vector<ArgRecord>& args) {
  for (const ArgRecord& arg : args) {
    if (arg.pending != nullptr && !arg.pending->done()) return false;
  }
  return true;
}

}  // namespace

Status ResolvePendingArg(ArgRecord* arg) {
  const StatusOr<TensorDigest>& digest = arg->pending->Wait();
  if (!digest.ok()) return digest.status();
  arg->digest = digest->digest;
  arg->has_stats = digest->has_stats;
  arg->stats = digest->stats;
  arg->pending.reset();
  return Status::Ok();
}

Status ResolvePending(const char* side, std::vector<ArgRecord>* args) {
  for (size_t arg_idx = 0; arg_idx < args->size(); ++arg_idx) {
    ArgRecord& arg = (*args)[arg_idx];
    if (arg.pending == nullptr) continue;
    const Status status = ResolvePendingArg(&arg);
    if (!status.ok()) {
      return Status(status.code(), std::string("digest of ") + side + " " +
                                       std::to_string(arg_idx) + ": " + status.message());
    }
  }
  return Status::Ok();
}

bool DeferredOps::HasPending(const OpRecord& record) {
  for (const std::vector<ArgRecord>* args : {&record.inputs, &record.outputs}) {
    for (const ArgRecord& arg : *args) {
      if (arg.pending != nullptr) return true;
    }
  }
  return false;
}

Status DeferredOps::WriteReady(TraceWriter* writer, bool all) {
  const size_t keep = ops_.size() > kMaxRecords ? kMaxRecords / 2 : kMaxRecords;
  while (!ops_.empty()) {
    OpRecord& front = ops_.front();
    const bool wait = all || ops_.size() > keep;
    if (!wait && !(Done(front.inputs) && Done(front.outputs))) break;
    Status status = ResolvePending("input", &front.inputs);
    if (status.ok()) status = ResolvePending("output", &front.outputs);
    if (status.ok()) status = writer->WriteOp(front);
    ops_.pop_front();
    RETURN_IF_ERROR(status);
  }
  return Status::Ok();
}

}  // namespace upguard
