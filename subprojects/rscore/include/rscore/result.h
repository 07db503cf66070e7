// Result<T>: the one error convention of rankscope. Recoverable errors are values;
// only main() and the command layer print them and choose exit codes.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace rs {

// What kind of failure an error is, for the callers that act on it without reading its prose:
// a full disk stops a merge whichever input it was copying, a file that is not there is named
// and not retried. Set where the failure is first seen (an errno, an SQLite result code);
// kOther where nobody needs to tell.
enum class ErrorKind {
  kOther,
  kNoSpace,   // ENOSPC, EDQUOT, SQLITE_FULL: the disk or quota filled up
  kNotFound,  // ENOENT, ENOTDIR: a path that does not exist
  kCorrupt,   // not the format it claims (SQLITE_CORRUPT, SQLITE_NOTADB, a bad frame)
  kRefused,   // not allowed (EACCES, EPERM, EROFS, SQLITE_PERM, SQLITE_READONLY), or reading
              // an untrusted input further refused by its guard's limit (time, value size)
};

// The kind of an errno value (kOther for the rest).
ErrorKind ErrnoKind(int err);

// An error a user can act on: what went wrong, naming the file / flag / node involved.
class Error {
 public:
  explicit Error(std::string message, ErrorKind kind = ErrorKind::kOther)
      : message_(std::move(message)), kind_(kind) {}
  const std::string& message() const { return message_; }
  ErrorKind kind() const { return kind_; }
  bool Is(ErrorKind kind) const { return kind_ == kind; }
  // Prefixes context, e.g. Error("bad magic").Wrap("node3.rsb") -> "node3.rsb: bad magic";
  // the kind stays.
  Error Wrap(const std::string& context) const { return Error(context + ": " + message_, kind_); }

 private:
  std::string message_;
  ErrorKind kind_;
};

// "CONTEXT: strerror(err)", of the errno's kind.
Error ErrnoError(const std::string& context, int err);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_{""};
  bool ok_ = true;
};

inline Result<void> Ok() { return Result<void>(); }

}  // namespace rs

#define RS_CONCAT_INNER(a, b) a##b
#define RS_CONCAT(a, b) RS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                        \
  do {                                               \
    auto rs_status_ = (expr);                        \
    if (!rs_status_.ok()) return rs_status_.error(); \
  } while (0)

#define RS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.error();             \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  RS_ASSIGN_OR_RETURN_IMPL(RS_CONCAT(rs_result_, __LINE__), lhs, expr)

// Invariant checks: a failed CHECK is a bug in rankscope, never a user error.
// Never put side effects inside.
#define CHECK(cond)                                                                         \
  do {                                                                                      \
    if (!(cond)) {                                                                          \
      std::fprintf(stderr, "rankscope: internal error: CHECK(%s) failed at %s:%d\n", #cond, \
                   __FILE__, __LINE__);                                                     \
      std::abort();                                                                         \
    }                                                                                       \
  } while (0)
