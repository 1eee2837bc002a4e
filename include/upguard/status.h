// Status and StatusOr<T>: how every fallible core function reports failure.
//
// The core never throws. A function that can fail returns Status (or StatusOr<T>), whose
// message names the file, byte offset or option at fault and says what to do about it:
//
//   upguard::StatusOr<Trace> trace = ReadTrace(path);
//   if (!trace.ok()) return trace.status();
//
//   RETURN_IF_ERROR(writer.Append(record));
//   ASSIGN_OR_RETURN(auto file, File::Open(path));
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace upguard {

// Fixed values: they are exit-code relevant and appear in JSON output. Never renumber.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,     // bad option or user input
  kNotFound = 2,            // missing file or directory
  kDataLoss = 3,            // damaged or truncated file
  kFailedPrecondition = 4,  // inputs valid alone but not together (e.g. different world sizes)
  kInternal = 5,            // a bug in upguard
  kIo = 6,                  // the operating system refused a read or write
  kUntrusted = 7,           // refused to run a command without the user's consent
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "error: <message>" for people; "ok" when fine.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status FailedPrecondition(std::string m) {
  return {StatusCode::kFailedPrecondition, std::move(m)};
}
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIo, std::move(m)}; }
inline Status Untrusted(std::string m) { return {StatusCode::kUntrusted, std::move(m)}; }

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : value_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(value_).ok()) std::abort();     // an OK Status carries no value
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(value_); }
  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> value_;
};

}  // namespace upguard

#define UPGUARD_CONCAT_INNER_(a, b) a##b
#define UPGUARD_CONCAT_(a, b) UPGUARD_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                          \
  do {                                                 \
    ::upguard::Status upguard_status_ = (expr);        \
    if (!upguard_status_.ok()) return upguard_status_; \
  } while (0)

#define UPGUARD_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  UPGUARD_ASSIGN_OR_RETURN_IMPL_(UPGUARD_CONCAT_(upguard_statusor_, __LINE__), lhs, expr)

// CHECK is for programmer errors only (a broken invariant), never for bad input.
#define UPGUARD_CHECK(cond)                                                   \
  do {                                                                        \
    if (!(cond)) ::upguard::internal::CheckFailed(__FILE__, __LINE__, #cond); \
  } while (0)

namespace upguard::internal {
[[noreturn]] void CheckFailed(const char* file, int line, const char* cond);
}  // namespace upguard::internal
