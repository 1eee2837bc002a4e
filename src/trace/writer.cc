#include "trace/writer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "trace/format.h"
#include "trace/record_codec.h"
#include "trace/shared_stats.h"
#include "trace/step_digest.h"
#include "trace/unread_tally.h"
#include "trace/trace_checks.h"
#include "trace/varint.h"

namespace upguard {

// Every record is encoded into `frame_` (cleared, never shrunk: no allocation per record once it
// has grown) and handed to the buffered OutputFile. The first write error is sticky: Intern
// cannot return it, so the next Status-returning call does.
class TraceWriter::Impl {
 public:
  explicit Impl(std::unique_ptr<OutputFile> file) : file_(std::move(file)) {}

  Status WriteFrame(RecordType type) {
    FinishFrame(type, &frame_);
    return Remember(file_->Write(frame_.data(), frame_.size()));
  }
  Status Remember(Status status) {
    if (!status.ok() && error_.ok()) error_ = status;
    return status;
  }

  std::unique_ptr<OutputFile> file_;
  StringTable strings_;
  StepDigester step_digester_;
  UnreadTally unread_;        // the open step's (§5.4)
  UnreadTally unread_total_;  // every ended step's
  SharedStats shared_stats_;
  CollectivePlacement placement_;
  // The Collective records since the last EndStep, folded into its digest after the ops.
  std::vector<std::pair<uint64_t, CollectiveInfo>> collectives_;
  std::string frame_;
  Status error_;
  bool closed_ = false;
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceWriter::~TraceWriter() =
    default;  // OutputFile flushes; no End record: the trace is incomplete

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path,
                                                           std::string_view meta_json) {
  const nlohmann::json meta = nlohmann::json::parse(meta_json, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) {
    return InvalidArgument(path + ": run metadata must be a JSON object, got: " +
                           std::string(meta_json.substr(0, 80)));
  }
  if (meta_json.size() > kMaxPayloadBytes) {
    return InvalidArgument(path + ": run metadata exceeds " + std::to_string(kMaxPayloadBytes) +
                           " bytes");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Create(path));
  auto impl = std::make_unique<Impl>(std::move(file));
  const std::string header = EncodeFileHeader(MakeFileHeader());
  RETURN_IF_ERROR(impl->file_->Write(header.data(), header.size()));
  BeginFrame(&impl->frame_);
  impl->frame_.append(meta_json.data(), meta_json.size());
  RETURN_IF_ERROR(impl->WriteFrame(RecordType::kRunMeta));
  // On disk before the first op, so even a trace of a process killed at once names its run.
  RETURN_IF_ERROR(impl->file_->Flush());
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
}

StringId TraceWriter::Intern(std::string_view s) {
  Impl& impl = *impl_;
  bool added = false;
  const StringId id = impl.strings_.Intern(s, &added);
  if (!added) return id;
  if (s.size() + kMaxVarintBytes > kMaxPayloadBytes) {
    (void)impl.Remember(InvalidArgument(impl.file_->path() + ": string of " +
                                        std::to_string(s.size()) +
                                        " bytes exceeds the record limit"));
    return id;
  }
  BeginFrame(&impl.frame_);
  EncodeString(id, s, &impl.frame_);
  (void)impl.WriteFrame(RecordType::kString);
  return id;
}

Status TraceWriter::WriteOp(const OpRecord& op) {
  Impl& impl = *impl_;
  RETURN_IF_ERROR(impl.error_);
  if (impl.closed_) return Internal(impl.file_->path() + ": WriteOp after Close");
  BeginFrame(&impl.frame_);
  impl.shared_stats_.Enter(op.step);
  RETURN_IF_ERROR(EncodeOp(op, ops_written_, impl.strings_, &impl.frame_, &impl.shared_stats_));
  RETURN_IF_ERROR(impl.WriteFrame(RecordType::kOp));
  impl.step_digester_.AddOp(op, impl.strings_);
  impl.unread_.AddOp(op, impl.strings_);
  impl.placement_.OnOp(ops_written_, op.step);
  ++ops_written_;
  return Status::Ok();
}

Status TraceWriter::WriteCollective(uint64_t op_seq, const CollectiveInfo& info) {
  Impl& impl = *impl_;
  RETURN_IF_ERROR(impl.error_);
  if (impl.closed_) return Internal(impl.file_->path() + ": WriteCollective after Close");
  BeginFrame(&impl.frame_);
  RETURN_IF_ERROR(EncodeCollective(op_seq, info, impl.strings_, &impl.frame_));
  RecordError error;
  if (!impl.placement_.Place(op_seq, &error)) {
    return InvalidArgument(impl.file_->path() + ": cannot write collective: " + error.detail);
  }
  RETURN_IF_ERROR(impl.WriteFrame(RecordType::kCollective));
  impl.collectives_.emplace_back(op_seq, info);
  return Status::Ok();
}

Status TraceWriter::EndStep(uint32_t step, uint64_t flags) {
  return EndStepWith(step, nullptr, flags);
}

Status TraceWriter::EndStepWithDigest(uint32_t step, const Digest128& digest, uint64_t flags) {
  return EndStepWith(step, &digest, flags);
}

Status TraceWriter::EndStepWith(uint32_t step, const Digest128* digest, uint64_t flags) {
  Impl& impl = *impl_;
  RETURN_IF_ERROR(impl.error_);
  if (impl.closed_) return Internal(impl.file_->path() + ": EndStep after Close");
  const uint64_t first_seq = ops_written_ - impl.step_digester_.op_count();
  std::sort(impl.collectives_.begin(), impl.collectives_.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [op_seq, info] : impl.collectives_) {
    impl.step_digester_.AddCollective(op_seq - first_seq, info, impl.strings_);
    impl.unread_.AddCollective(info, impl.strings_);
  }
  impl.collectives_.clear();
  StepEndRecord step_end{step, impl.step_digester_.op_count(),
                         digest != nullptr ? *digest : impl.step_digester_.Finish(), flags,
                         impl.unread_.Take()};
  impl.unread_total_.Merge(step_end.unread);
  impl.step_digester_.Reset();
  impl.shared_stats_.EndStep();
  impl.placement_.OnStepEnd();
  BeginFrame(&impl.frame_);
  EncodeStepEnd(step_end, &impl.frame_);
  return impl.WriteFrame(RecordType::kStepEnd);
}

std::vector<UnreadCount> TraceWriter::UnreadTotal() const {
  UnreadTally total;
  total.Merge(impl_->unread_total_.counts());
  return total.Take();
}

Status TraceWriter::Flush() {
  RETURN_IF_ERROR(impl_->error_);
  if (impl_->closed_) return Status::Ok();
  return impl_->Remember(impl_->file_->Flush());
}

Status TraceWriter::Close() {
  Impl& impl = *impl_;
  if (impl.closed_) return impl.error_;
  impl.closed_ = true;
  if (impl.error_.ok()) {
    BeginFrame(&impl.frame_);
    EncodeEnd(ops_written_, &impl.frame_);
    (void)impl.WriteFrame(RecordType::kEnd);
  }
  (void)impl.Remember(impl.file_->Close());
  return impl.error_;
}

uint64_t TraceWriter::bytes_written() const { return impl_->file_->bytes_written(); }

}  // namespace upguard
