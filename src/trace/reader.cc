#include "trace/reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/file.h"
#include "trace/crc32c.h"
#include "trace/format.h"
#include "trace/record_codec.h"
#include "trace/shared_stats.h"
#include "trace/trace_checks.h"

namespace upguard {
namespace {

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace

// Reads frame by frame through stdio; only the current frame is held in memory. A frame is
// checked in this order: complete header, length limit, complete frame, CRC, then its payload.
class TraceReader::Impl {
 public:
  enum class Frame { kOk, kEnd, kDamaged };

  // Reads the frame at offset_ into frame_. kEnd: the file ends exactly here.
  StatusOr<Frame> ReadFrame(uint8_t* type, std::string_view* payload);
  StatusOr<Frame> ReadHeaderAndMeta();
  // Sets damage_ and ends the stream.
  Frame DamageFrame(const RecordError& error) {
    Damage(error);
    return Frame::kDamaged;
  }
  void Damage(const RecordError& error) {
    damage_ = MakeTraceDamage(path_, offset_, error, records_read_, ops_read_);
    done_ = true;
  }
  Status ReadError() const { return IoError(path_ + ": read failed: " + std::strerror(errno)); }
  // Handles one non-Op, non-StepEnd record; false when it damaged the stream.
  bool Consume(uint8_t type, std::string_view payload);

  std::string path_;
  FilePtr file_;
  uint64_t file_size_ = 0;
  uint16_t version_ = 0;
  std::string meta_json_;
  StringTable strings_;
  SharedStats shared_stats_;  // the step scope of §5.3.1
  CollectivePlacement placement_;
  bool complete_ = false;
  std::optional<StoppedRecord> stopped_;
  bool done_ = false;
  std::optional<TraceDamage> damage_;
  uint64_t offset_ = 0;  // of the next frame
  uint64_t records_read_ = 0;
  uint64_t ops_read_ = 0;
  std::string frame_;
};

StatusOr<TraceReader::Impl::Frame> TraceReader::Impl::ReadFrame(uint8_t* type,
                                                                std::string_view* payload) {
  frame_.resize(kFrameHeaderBytes);
  const size_t header_read = std::fread(&frame_[0], 1, kFrameHeaderBytes, file_.get());
  if (header_read < kFrameHeaderBytes && std::ferror(file_.get())) return ReadError();
  if (header_read == 0) return Frame::kEnd;
  if (header_read < kFrameHeaderBytes) return DamageFrame(TruncatedRecord());
  const uint32_t length = LoadLe32(frame_.data());
  RecordError error;
  if (!CheckFrameLength(length, &error)) return DamageFrame(error);
  const uint64_t frame_bytes = kFrameOverheadBytes + length;
  struct stat info;
  if (offset_ + frame_bytes > file_size_ && ::fstat(::fileno(file_.get()), &info) == 0) {
    file_size_ = static_cast<uint64_t>(info.st_size);  // the writer may still be appending
  }
  if (offset_ + frame_bytes > file_size_) return DamageFrame(TruncatedRecord());
  frame_.resize(frame_bytes);
  const size_t rest = frame_bytes - kFrameHeaderBytes;
  if (std::fread(&frame_[kFrameHeaderBytes], 1, rest, file_.get()) < rest) {
    if (std::ferror(file_.get())) return ReadError();
    return DamageFrame(TruncatedRecord());
  }
  if (!CheckFrameCrc(frame_.data(), length, &error)) return DamageFrame(error);
  *type = static_cast<uint8_t>(frame_[4]);
  *payload = std::string_view(frame_.data() + kFrameHeaderBytes, length);
  return Frame::kOk;
}

bool TraceReader::Impl::Consume(uint8_t type, std::string_view payload) {
  RecordError error;
  switch (static_cast<RecordType>(type)) {
    case RecordType::kRunMeta:
      Damage(UnexpectedRunMeta());
      return false;
    case RecordType::kString:
      if (ConsumeString(payload, &strings_, &error)) return true;
      Damage(error);
      return false;
    case RecordType::kEnd:
      if (!ConsumeEnd(payload, ops_read_, &error)) {
        Damage(error);
        return false;
      }
      complete_ = true;
      return true;
    case RecordType::kStopped:
      if (!DecodeStopped(payload, &stopped_.emplace(), &error)) {
        stopped_.reset();
        Damage(error);
        return false;
      }
      return true;
    default:
      return true;  // an unknown type with a valid frame: skipped (trace.md §5)
  }
}

StatusOr<TraceReader::Impl::Frame> TraceReader::Impl::ReadHeaderAndMeta() {
  char header_bytes[kFileHeaderBytes];
  const size_t got = std::fread(header_bytes, 1, sizeof(header_bytes), file_.get());
  if (got < sizeof(header_bytes) && std::ferror(file_.get())) return ReadError();
  RETURN_IF_ERROR(CheckFileHeader(path_, header_bytes, got));
  const FileHeader header = DecodeFileHeader(header_bytes);
  version_ = header.version;
  offset_ = kFileHeaderBytes;
  uint8_t type = 0;
  std::string_view payload;
  ASSIGN_OR_RETURN(Frame frame, ReadFrame(&type, &payload));
  if (frame == Frame::kDamaged) return frame;
  RecordError error;
  if (!CheckRunMeta(type, payload, frame == Frame::kEnd, &error)) return DamageFrame(error);
  meta_json_.assign(payload);
  offset_ += frame_.size();
  ++records_read_;
  return frame;
}

TraceReader::TraceReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceReader::~TraceReader() = default;

StatusOr<std::unique_ptr<TraceReader>> TraceReader::Open(const std::string& path) {
  if (IsDirectory(path)) {
    return InvalidArgument(path + " is a directory, not a trace file; pass a rank file such as " +
                           path + "/rank0.ugt");
  }
  auto impl = std::make_unique<Impl>();
  impl->path_ = path;
  impl->file_.reset(std::fopen(path.c_str(), "rb"));
  if (impl->file_ == nullptr) {
    if (errno == ENOENT) return NotFound(path + ": no such file");
    return IoError(path + ": cannot open: " + std::strerror(errno));
  }
  std::setvbuf(impl->file_.get(), nullptr, _IOFBF, 1 << 20);
  struct stat info;
  if (::fstat(::fileno(impl->file_.get()), &info) == 0) {
    impl->file_size_ = static_cast<uint64_t>(info.st_size);
  }
  ASSIGN_OR_RETURN(Impl::Frame frame, impl->ReadHeaderAndMeta());
  (void)frame;  // damage in the RunMeta record is reported through damage(), not Open
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}

StatusOr<bool> TraceReader::Next(TraceRecord* record) {
  Impl& impl = *impl_;
  while (!impl.done_) {
    if (impl.complete_ || impl.stopped_) {  // the End (or Stopped) record must be last
      if (std::fgetc(impl.file_.get()) != EOF) {
        impl.Damage(DataAfterEnd(impl.stopped_ ? "Stopped" : "End"));
      }
      impl.done_ = true;
      break;
    }
    uint8_t type = 0;
    std::string_view payload;
    ASSIGN_OR_RETURN(Impl::Frame frame, impl.ReadFrame(&type, &payload));
    if (frame == Impl::Frame::kDamaged) break;
    if (frame == Impl::Frame::kEnd) {
      impl.done_ = true;
      break;
    }
    RecordError error;
    record->offset = impl.offset_;
    if (type == static_cast<uint8_t>(RecordType::kOp)) {
      if (!DecodeOp(payload, impl.strings_, &record->op, &error)) {
        impl.Damage(error);
        break;
      }
      impl.shared_stats_.Enter(record->op.step);
      if (!impl.shared_stats_.Resolve(&record->op, &error)) {
        impl.Damage(error);
        break;
      }
      if (record->op.seq != impl.ops_read_) {
        impl.Damage(WrongSeq(record->op.seq, impl.ops_read_));
        break;
      }
      impl.placement_.OnOp(record->op.seq, record->op.step);
      ++impl.ops_read_;
    } else if (type == static_cast<uint8_t>(RecordType::kStepEnd)) {
      if (!DecodeStepEnd(payload, &record->step_end, &error)) {
        impl.Damage(error);
        break;
      }
      impl.shared_stats_.EndStep();
      impl.placement_.OnStepEnd();
    } else if (type == static_cast<uint8_t>(RecordType::kCollective)) {
      auto info = std::make_shared<CollectiveInfo>();
      if (!DecodeCollective(payload, impl.strings_, impl.strings_.size(),
                            &record->collective.op_seq, info.get(), &error) ||
          !impl.placement_.Place(record->collective.op_seq, &error)) {
        impl.Damage(error);
        break;
      }
      record->collective.info = std::move(info);
    } else if (!impl.Consume(type, payload)) {
      break;
    }
    impl.offset_ += impl.frame_.size();
    ++impl.records_read_;
    if (type == static_cast<uint8_t>(RecordType::kOp) ||
        type == static_cast<uint8_t>(RecordType::kStepEnd) ||
        type == static_cast<uint8_t>(RecordType::kCollective)) {
      record->type = static_cast<RecordType>(type);
      return true;
    }
  }
  return false;
}

const std::string& TraceReader::path() const { return impl_->path_; }
uint16_t TraceReader::version() const { return impl_->version_; }
const std::string& TraceReader::meta_json() const { return impl_->meta_json_; }
const StringTable& TraceReader::strings() const { return impl_->strings_; }
bool TraceReader::complete() const { return impl_->complete_; }
const std::optional<StoppedRecord>& TraceReader::stopped() const { return impl_->stopped_; }
const std::optional<TraceDamage>& TraceReader::damage() const { return impl_->damage_; }
uint64_t TraceReader::file_size() const { return impl_->file_size_; }

}  // namespace upguard
