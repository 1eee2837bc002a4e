#include "trace/writer.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "base/text.h"
#include "trace/format.h"
#include "trace/record_codec.h"
#include "trace/shared_stats.h"
#include "trace/step_digest.h"
#include "trace/unread_tally.h"
#include "trace/trace_checks.h"
#include "trace/varint.h"

namespace upguard {

namespace {

// The largest Stopped frame (trace.md §5.7): the room a byte budget keeps for it (and for End).
constexpr uint64_t kStoppedFrameBytes = kFrameOverheadBytes + 5 + 1 + kMaxStopMessageBytes;

}  // namespace

// Every record is encoded into `frame_` (cleared, never shrunk: no allocation per record once it
// has grown) and handed to the buffered OutputFile. The first write error is sticky: Intern
// cannot return it, so the next Status-returning call does.
class TraceWriter::Impl {
 public:
  Impl(std::unique_ptr<OutputFile> file, uint64_t max_bytes)
      : file_(std::move(file)), max_bytes_(max_bytes) {}

  // Nothing is written after the first failure: the file ends at the last whole record before it.
  Status WriteFrame(RecordType type) {
    if (!error_.ok()) return error_;
    FinishFrame(type, &frame_);
    if (max_bytes_ > 0 &&
        file_->bytes_written() + frame_.size() + kStoppedFrameBytes > max_bytes_) {
      return Remember(FailedPrecondition(file_->path() + ": reached its byte budget of " +
                                         HumanBytes(max_bytes_) +
                                         " (record --max-bytes, upguard.record(max_bytes=))"),
                      StopReason::kMaxBytes);
    }
    return RememberWrite(file_->Write(frame_.data(), frame_.size()));
  }
  Status Remember(Status status, StopReason reason = StopReason::kError) {
    if (!status.ok() && error_.ok()) {
      error_ = status;
      reason_ = reason;
    }
    return status;
  }
  // A file operation's status: when the system refused a write, the file is cut back to its
  // last whole record at once, so the trace reads to its end and the disk gets the space back.
  Status RememberWrite(Status status) {
    if (status.ok()) return status;
    (void)file_->CutToLastWhole();
    return Remember(status, StopReasonOfErrno(file_->write_errno()));
  }
  // The End or Stopped record (encoded in frame_) after the last whole record: written
  // through, or cut off again.
  bool WriteLast(RecordType type) {
    FinishFrame(type, &frame_);
    Status status = file_->Write(frame_.data(), frame_.size());
    if (status.ok()) status = file_->Flush();
    if (!status.ok()) (void)RememberWrite(status);
    return status.ok();
  }
  // After a refused write the room left may be too small for the Stopped record (a size limit
  // gives nothing back): it is tried again without its message, then with the last whole write
  // cut off too. A trace that ends without it still ends with a whole record.
  void WriteStopped(const StoppedRecord& stopped) {
    StoppedRecord bare = stopped;
    bare.message.clear();
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (attempt == 2 && !file_->CutToEarlierWhole().ok()) return;
      BeginFrame(&frame_);
      EncodeStopped(attempt == 0 ? stopped : bare, &frame_);
      if (WriteLast(RecordType::kStopped)) return;
    }
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
  const uint64_t max_bytes_;  // 0: no budget
  Status error_;
  StopReason reason_ = StopReason::kError;  // of error_
  bool closed_ = false;
};

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceWriter::~TraceWriter() =
    default;  // OutputFile flushes; no End record: the trace is incomplete

StatusOr<std::unique_ptr<TraceWriter>> TraceWriter::Create(const std::string& path,
                                                           std::string_view meta_json,
                                                           uint64_t max_bytes) {
  const nlohmann::json meta = nlohmann::json::parse(meta_json, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) {
    return InvalidArgument(path + ": run metadata must be a JSON object, got: " +
                           std::string(meta_json.substr(0, 80)));
  }
  if (meta_json.size() > kMaxPayloadBytes) {
    return InvalidArgument(path + ": run metadata exceeds " + std::to_string(kMaxPayloadBytes) +
                           " bytes");
  }
  const uint64_t least_bytes =
      kFileHeaderBytes + kFrameOverheadBytes + meta_json.size() + kStoppedFrameBytes;
  if (max_bytes > 0 && max_bytes < least_bytes) {
    return InvalidArgument(path + ": a byte budget of " + std::to_string(max_bytes) +
                           " bytes leaves no room for the trace's header and metadata; give at "
                           "least " +
                           std::to_string(least_bytes) + " bytes (record --max-bytes)");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<OutputFile> file, OutputFile::Create(path));
  auto impl = std::make_unique<Impl>(std::move(file), max_bytes);
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
  return impl_->RememberWrite(impl_->file_->Flush());
}

Status TraceWriter::Close(const StoppedRecord* stopped) {
  Impl& impl = *impl_;
  if (impl.closed_) return impl.error_;
  impl.closed_ = true;
  if (stopped != nullptr) {
    impl.WriteStopped(*stopped);
  } else if (impl.error_.ok()) {
    BeginFrame(&impl.frame_);
    EncodeEnd(ops_written_, &impl.frame_);
    impl.WriteLast(RecordType::kEnd);
  }
  (void)impl.RememberWrite(impl.file_->Close());
  return impl.error_;
}

StopReason TraceWriter::failure_reason() const { return impl_->reason_; }

uint64_t TraceWriter::bytes_written() const { return impl_->file_->bytes_written(); }

}  // namespace upguard
