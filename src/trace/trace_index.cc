#include "trace/trace_index.h"

#include <algorithm>

#include "base/file.h"
#include "trace/format.h"
#include "trace/record_codec.h"
#include "trace/shared_stats.h"
#include "trace/trace_checks.h"
#include "trace/varint.h"

namespace upguard {
namespace {

constexpr uint64_t kReleaseBytes = 8u << 20;   // kept mapped behind the indexing, at least
constexpr uint64_t kPopulateBytes = 4u << 20;  // mapped ahead of the scan at a time

}  // namespace

StatusOr<std::unique_ptr<TraceIndex>> TraceIndex::Open(const std::string& path) {
  if (IsDirectory(path)) {
    return InvalidArgument(path + " is a directory, not a trace file; pass a rank file such as " +
                           path + "/rank0.ugt");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  std::unique_ptr<TraceIndex> index(new TraceIndex(std::move(file)));
  index->path_ = path;
  RETURN_IF_ERROR(index->OpenRecords());
  return index;
}

void TraceIndex::Damage(const RecordError& error) {
  damage_ = MakeTraceDamage(path_, offset_, error, records_, op_count_);
  done_ = true;
  file_->Release(released_, file_->size());
}

namespace {

// The frame at `offset` of a file of `size` bytes, checked in TraceReader's order: complete
// header, length limit, complete frame, CRC. False at the end of the file (`error` empty) or
// on damage.
bool CheckedFrame(const char* data, uint64_t size, uint64_t offset, uint8_t* type,
                  std::string_view* payload, RecordError* error) {
  const uint64_t left = size - offset;
  if (left == 0) return false;
  if (left < kFrameHeaderBytes) {
    *error = TruncatedRecord();
    return false;
  }
  const uint32_t length = LoadLe32(data + offset);
  if (!CheckFrameLength(length, error)) return false;
  if (left < kFrameOverheadBytes + length) {
    *error = TruncatedRecord();
    return false;
  }
  if (!CheckFrameCrc(data + offset, length, error)) return false;
  *type = static_cast<uint8_t>(data[offset + 4]);
  *payload = std::string_view(data + offset + kFrameHeaderBytes, length);
  return true;
}

}  // namespace

Status TraceIndex::OpenRecords() {
  const char* const data = file_->data();
  const uint64_t size = file_->size();
  RETURN_IF_ERROR(CheckFileHeader(path_, data, std::min<uint64_t>(size, kFileHeaderBytes)));
  version_ = DecodeFileHeader(data).version;
  offset_ = kFileHeaderBytes;
  uint8_t type = 0;
  std::string_view payload;
  RecordError error;
  const bool has_meta = CheckedFrame(data, size, offset_, &type, &payload, &error);
  if (!has_meta && !error.reason.empty()) {
    Damage(error);
    return Status::Ok();
  }
  if (!CheckRunMeta(type, payload, !has_meta, &error)) {
    Damage(error);
    return Status::Ok();
  }
  meta_json_.assign(payload);
  offset_ += kFrameOverheadBytes + payload.size();
  ++records_;
  next_begin_ = offset_;
  next_records_ = records_;
  next_strings_ = static_cast<uint32_t>(strings_.size());
  return Status::Ok();
}

StatusOr<bool> TraceIndex::IndexStep(size_t step_idx) {
  while (!done_ && final_steps() <= step_idx) IndexFrame();
  RETURN_IF_ERROR(error_);
  return step_idx < final_steps();
}

Status TraceIndex::IndexThrough(uint32_t step) {
  while (!done_ && (final_steps() == 0 || steps_[final_steps() - 1].step <= step)) IndexFrame();
  return error_;
}

Status TraceIndex::IndexAll() {
  while (!done_) IndexFrame();
  return error_;
}

// Only the seq and step of an Op are decoded, except on the error paths, where the whole payload
// is, so that the first error reported is the one TraceReader reports.
void TraceIndex::IndexFrame() {
  const char* const data = file_->data();
  const uint64_t size = file_->size();
  if (complete_ || stopped_) {  // the End (or Stopped) record must be last
    if (offset_ < size) {
      Damage(DataAfterEnd(stopped_ ? "Stopped" : "End"));
    } else {
      done_ = true;
    }
    file_->Release(released_, size);
    return;
  }
  uint8_t type = 0;
  std::string_view payload;
  RecordError error;
  if (!CheckedFrame(data, size, offset_, &type, &payload, &error)) {
    if (error.reason.empty()) {
      done_ = true;
    } else {
      Damage(error);
    }
    file_->Release(released_, size);
    return;
  }
  // The step `step` of the record at offset_: the open one, or a new one. False when step
  // numbers go down.
  auto step_for = [&](uint32_t step) {
    if (!steps_.empty() && steps_.back().step == step && !steps_.back().end) return true;
    if (!steps_.empty() && steps_.back().step > step) {
      error_ = DataLoss(path_ + ": step " + std::to_string(step) + " at byte " +
                        std::to_string(offset_) + " comes after step " +
                        std::to_string(steps_.back().step) +
                        "; steps must increase — was the file written by two processes?");
      done_ = true;
      return false;
    }
    StepSpan& span = steps_.emplace_back();
    span.step = step;
    span.begin = next_begin_;
    span.first_seq = op_count_;
    span.records_before = next_records_;
    span.strings_before = next_strings_;
    return true;
  };
  bool in_step = false;
  switch (static_cast<RecordType>(type)) {
    case RecordType::kOp: {
      uint64_t seq = 0;
      uint32_t step = 0;
      if (!DecodeOpPrefix(payload, &seq, &step, &error)) {
        Damage(error);
        return;
      }
      const bool seq_ok = seq == op_count_;
      if (!seq_ok || (!steps_.empty() && steps_.back().step > step)) {
        // TraceReader decodes the whole op first; its errors come before these.
        if (!DecodeOp(payload, strings_, &scratch_, &error)) {
          Damage(error);
          return;
        }
        if (!seq_ok) {
          Damage(WrongSeq(seq, op_count_));
          return;
        }
      }
      if (!step_for(step)) return;
      placement_.OnOp(seq, step);
      ++steps_.back().op_count;
      ++op_count_;
      in_step = true;
      break;
    }
    case RecordType::kStepEnd: {
      StepEndRecord end;
      if (!DecodeStepEnd(payload, &end, &error)) {
        Damage(error);
        return;
      }
      if (!step_for(end.step)) return;
      placement_.OnStepEnd();
      steps_.back().end = end;
      in_step = true;
      break;
    }
    case RecordType::kCollective: {
      // Checked whole now (they are few), so ReadStep cannot find them damaged. Placed, it lies
      // in the open step: steps_.back().
      uint64_t op_seq = 0;
      if (!DecodeCollective(payload, strings_, strings_.size(), &op_seq, &scratch_collective_,
                            &error) ||
          !placement_.Place(op_seq, &error)) {
        Damage(error);
        return;
      }
      ++steps_.back().collectives;
      in_step = true;
      break;
    }
    case RecordType::kString:
      if (!ConsumeString(payload, &strings_, &error)) {
        Damage(error);
        return;
      }
      break;
    case RecordType::kEnd:
      if (!ConsumeEnd(payload, op_count_, &error)) {
        Damage(error);
        return;
      }
      complete_ = true;
      break;
    case RecordType::kStopped:
      if (!DecodeStopped(payload, &stopped_.emplace(), &error)) {
        stopped_.reset();
        Damage(error);
        return;
      }
      break;
    case RecordType::kRunMeta:
      Damage(UnexpectedRunMeta());
      return;
    default:
      break;  // an unknown type with a valid frame: skipped (trace.md §5)
  }
  offset_ += kFrameOverheadBytes + payload.size();
  ++records_;
  if (in_step) {
    steps_.back().end_offset = offset_;
    next_begin_ = offset_;
    next_records_ = records_;
    next_strings_ = static_cast<uint32_t>(strings_.size());
  }
  // Map ahead in one call per few MiB; unmap what lies a window behind (a reader that compares
  // a step right after indexing it finds it still mapped).
  if (offset_ >= populated_) {
    populated_ = offset_ + kPopulateBytes;
    file_->WillNeed(offset_, populated_);
  }
  if (offset_ - released_ >= 2 * kReleaseBytes) {
    file_->Release(released_, offset_ - kReleaseBytes);
    released_ = offset_ - kReleaseBytes;
  }
}

std::optional<TraceDamage> TraceIndex::ReadStep(size_t step_idx, std::vector<OpRecord>* ops) const {
  const StepSpan& span = steps_[step_idx];
  ops->resize(span.op_count);
  const char* const data = file_->data();
  uint64_t offset = span.begin;
  uint64_t records = span.records_before;
  size_t id_limit = span.strings_before;
  uint64_t op_idx = 0;
  RecordError error;
  SharedStats shared_stats;  // a span is one sharing scope (§5.3.1)
  // The index pass checked every frame in the span; only Op payloads are new here.
  while (offset < span.end_offset) {
    const uint32_t length = LoadLe32(data + offset);
    const auto type = static_cast<RecordType>(data[offset + 4]);
    const std::string_view payload(data + offset + kFrameHeaderBytes, length);
    if (type == RecordType::kString) {
      ++id_limit;
    } else if (type == RecordType::kOp) {
      if (!DecodeOp(payload, strings_, id_limit, &(*ops)[op_idx], &error) ||
          (shared_stats.Enter(span.step), !shared_stats.Resolve(&(*ops)[op_idx], &error))) {
        ops->resize(op_idx);
        return MakeTraceDamage(path_, offset, error, records, span.first_seq + op_idx);
      }
      ++op_idx;
    } else if (type == RecordType::kCollective) {
      // Indexing checked it, its placement included: its op is one of this step's before it.
      auto info = std::make_shared<CollectiveInfo>();
      uint64_t op_seq = 0;
      if (!DecodeCollective(payload, strings_, id_limit, &op_seq, info.get(), &error) ||
          op_seq < span.first_seq || op_seq - span.first_seq >= op_idx) {
        if (error.reason.empty()) error = RecordError{"malformed Collective record", "misplaced"};
        ops->resize(op_idx);
        return MakeTraceDamage(path_, offset, error, records, span.first_seq + op_idx);
      }
      AttachCollective(std::move(info), &(*ops)[op_seq - span.first_seq]);
    }
    offset += kFrameOverheadBytes + length;
    ++records;
  }
  file_->Release(span.begin, span.end_offset);
  return std::nullopt;
}

TraceIndex::RawOps::RawOps(const TraceIndex& index, size_t step_idx)
    : data_(index.file_->data()),
      offset_(index.steps_[step_idx].begin),
      end_(index.steps_[step_idx].end_offset),
      strings_(index.steps_[step_idx].strings_before) {}

bool TraceIndex::RawOps::Next(std::string_view* payload, uint32_t* strings_before) {
  while (offset_ < end_) {
    const uint32_t length = LoadLe32(data_ + offset_);
    const auto type = static_cast<RecordType>(data_[offset_ + 4]);
    const char* start = data_ + offset_ + kFrameHeaderBytes;
    offset_ += kFrameOverheadBytes + length;
    if (type == RecordType::kOp) {
      *payload = std::string_view(start, length);
      *strings_before = strings_;
      return true;
    }
    if (type == RecordType::kString) ++strings_;
  }
  return false;
}

std::vector<RawCollective> TraceIndex::RawCollectives(size_t step_idx) const {
  const StepSpan& span = steps_[step_idx];
  std::vector<RawCollective> collectives;
  if (span.collectives == 0) return collectives;
  const char* const data = file_->data();
  uint32_t strings = span.strings_before;
  for (uint64_t offset = span.begin; offset < span.end_offset;) {
    const uint32_t length = LoadLe32(data + offset);
    const auto type = static_cast<RecordType>(data[offset + 4]);
    const std::string_view payload(data + offset + kFrameHeaderBytes, length);
    offset += kFrameOverheadBytes + length;
    if (type == RecordType::kString) {
      ++strings;
    } else if (type == RecordType::kCollective) {
      const char* p = payload.data();
      uint64_t op_seq = 0;
      DecodeVarint(&p, payload.data() + payload.size(), &op_seq);  // checked by indexing
      collectives.push_back(RawCollective{op_seq - span.first_seq, payload, strings});
    }
  }
  return collectives;
}

void TraceIndex::ReleaseStep(size_t step_idx) const {
  file_->Release(steps_[step_idx].begin, steps_[step_idx].end_offset);
}

void TraceIndex::Truncate(size_t step_idx, uint64_t ops_kept, TraceDamage damage) {
  done_ = true;
  steps_.resize(ops_kept > 0 ? step_idx + 1 : step_idx);
  if (ops_kept > 0) {
    StepSpan& span = steps_.back();
    span.op_count = ops_kept;
    span.end.reset();
    span.end_offset = damage.offset;
  }
  op_count_ = steps_.empty() ? 0 : steps_.back().first_seq + steps_.back().op_count;
  complete_ = false;
  stopped_.reset();  // the damage is what the trace ends with now
  damage_ = std::move(damage);
}

}  // namespace upguard
