// PayloadCursor: bounds-checked reads of one record payload (docs/formats/trace.md §4), the
// reads every decoder of record_decode.cc and the Op layout of op_payload.h are made of.
//
//   RecordError error;
//   PayloadCursor<ReportErrors> in(payload, ReportErrors("StepEnd", &error));
//   uint32_t step = 0;
//   if (!in.Varint32("step", &step)) ... error.reason, error.detail ...
//
// Every read names its field; a read that fails returns false through the error policy, which
// decides what a failure costs:
//   ReportErrors  fills a RecordError as TraceReader reports damage: reason "malformed Op
//                 record" or "undefined string id 7", detail "payload ends inside dims".
//   CheckOnly     only returns false: for a reader that takes a bad payload as "not equal" and
//                 leaves the message to the decoder (RawComparer). Its cursor is three words
//                 that stay in registers.
// Both answer every read alike, and a message is built only once a read has failed: a detail is
// a callable, `[=](const auto& errors) { return std::string(...); }`, that CheckOnly never calls.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "trace/format.h"
#include "trace/record_codec.h"
#include "trace/records.h"
#include "trace/varint.h"

namespace upguard {

// Fills a RecordError. `record` ("Op", "Collective") names the record in the reason; `strings`
// (may be null where no detail names an op) names ops in details.
class ReportErrors {
 public:
  ReportErrors(const char* record, RecordError* error, const StringTable* strings = nullptr)
      : record_(record), error_(error), strings_(strings) {}

  // "malformed <record> record", detail(*this).
  template <class Detail>
  [[gnu::noinline, gnu::cold]] bool Malformed(const Detail& detail) const {
    error_->reason = std::string("malformed ") + record_ + " record";
    error_->detail = detail(*this);
    return false;
  }
  // "undefined string id <id>", detail(*this).
  template <class Detail>
  [[gnu::noinline, gnu::cold]] bool Undefined(StringId id, const Detail& detail) const {
    error_->reason = "undefined string id " + std::to_string(id);
    error_->detail = detail(*this);
    return false;
  }
  // "aten::mul_ (seq 4)": an op in a detail.
  std::string OpWhere(StringId op, uint64_t seq) const {
    return strings_->Get(op) + " (seq " + std::to_string(seq) + ")";
  }

 private:
  const char* record_;
  RecordError* error_;
  const StringTable* strings_;
};

// Returns false and nothing else.
struct CheckOnly {
  template <class Detail>
  bool Malformed(const Detail&) const {
    return false;
  }
  template <class Detail>
  bool Undefined(StringId, const Detail&) const {
    return false;
  }
};

template <class Errors>
class PayloadCursor : private Errors {
 public:
  // `id_limit`: string ids read by Id() must be below it (the strings defined before the
  // record).
  PayloadCursor(std::string_view payload, Errors errors, size_t id_limit = 0)
      : Errors(errors),
        p_(payload.data()),
        end_(payload.data() + payload.size()),
        id_limit_(id_limit) {}

  const Errors& errors() const { return *this; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const char* pos() const { return p_; }
  std::string_view Rest() const { return std::string_view(p_, remaining()); }

  // Fails with "malformed <record> record" and detail(errors()).
  template <class Detail>
  [[gnu::always_inline]] bool Fail(const Detail& detail) {
    return errors().Malformed(detail);
  }

  [[gnu::always_inline]] bool U8(const char* field, uint8_t* value) {
    if (__builtin_expect(p_ == end_, 0)) return FailEarlyEnd(field);
    *value = static_cast<uint8_t>(*p_++);
    return true;
  }
  // One-byte varints dominate: inline; longer ones take DecodeVarint.
  [[gnu::always_inline]] bool Varint(const char* field, uint64_t* value) {
    if (__builtin_expect(p_ != end_ && (*p_ & 0x80) == 0, 1)) {
      *value = static_cast<uint8_t>(*p_++);
      return true;
    }
    if (DecodeVarintInline(&p_, end_, value)) return true;
    if (remaining() < kMaxVarintBytes) return FailEarlyEnd(field);
    return Fail([=](const auto&) { return std::string("bad varint in ") + field; });
  }
  // A field of 32 bits (§4.1: wider is damage).
  [[gnu::always_inline]] bool Varint32(const char* field, uint32_t* value) {
    uint64_t wide = 0;
    if (!Varint(field, &wide)) return false;
    if (__builtin_expect(wide > std::numeric_limits<uint32_t>::max(), 0)) {
      return Fail([=](const auto&) {
        return std::string(field) + " " + std::to_string(wide) + " exceeds 32 bits";
      });
    }
    *value = static_cast<uint32_t>(wide);
    return true;
  }
  // A count of items that each take at least one byte: bounded by the bytes left, so a damaged
  // count cannot make a reader allocate more than the payload could describe.
  [[gnu::always_inline]] bool Count(const char* field, uint64_t* value) {
    if (!Varint(field, value)) return false;
    if (__builtin_expect(*value > remaining(), 0)) {
      return Fail([=, count = *value](const auto&) {
        return std::string(field) + " " + std::to_string(count) + " exceeds the payload";
      });
    }
    return true;
  }
  // A string id, below the id limit.
  [[gnu::always_inline]] bool Id(const char* field, StringId* id) {
    if (!Varint32(field, id)) return false;
    if (__builtin_expect(*id < id_limit_, 1)) return true;
    return errors().Undefined(*id, [=](const auto&) { return std::string("in ") + field; });
  }
  bool id_defined(StringId id) const { return id < id_limit_; }
  // `size` bytes, not copied: *bytes points at them.
  [[gnu::always_inline]] bool Fixed(const char* field, size_t size, const char** bytes) {
    if (__builtin_expect(remaining() < size, 0)) return FailEarlyEnd(field);
    *bytes = p_;
    p_ += size;
    return true;
  }
  // The next bytes equal [begin, end) (another payload's); moves past them. Not a check of the
  // payload: false sets no error.
  [[gnu::always_inline]] bool Match(const char* begin, const char* end) {
    const size_t size = static_cast<size_t>(end - begin);
    if (remaining() < size) return false;
    if (size <= 8) {  // most spans between ids are a byte or two: no call
      for (size_t idx = 0; idx < size; ++idx) {
        if (p_[idx] != begin[idx]) return false;
      }
    } else if (std::memcmp(p_, begin, size) != 0) {
      return false;
    }
    p_ += size;
    return true;
  }

 private:
  bool FailEarlyEnd(const char* field) {
    return Fail([=](const auto&) { return std::string("payload ends inside ") + field; });
  }

  const char* p_;
  const char* end_;
  size_t id_limit_;
};

}  // namespace upguard
