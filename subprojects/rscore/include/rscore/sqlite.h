// Thin RAII wrapper over the SQLite C API with Result-returning calls.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "rscore/result.h"

namespace rs {

class Statement;

// Bounds on reading a database that came from elsewhere (a bundle, a merged db): see
// Db::GuardInput and man/rankscope-bundle.5 (LIMITS).
inline constexpr int64_t kMaxValueBytes = 4 << 20;  // the largest text or blob value read
inline constexpr int64_t kInputTimeLimitNs = int64_t{15} * 60 * 1000000000;
struct InputLimits {
  int64_t time_limit_ns = kInputTimeLimitNs;  // for all statements on the connection together
  int64_t max_value_bytes = kMaxValueBytes;
};

// The limits in force on a guarded connection (shared with its statements, for their errors).
struct InputGuardState {
  std::string label;  // the file as the user named it
  std::string limit_text;
  std::chrono::steady_clock::time_point deadline;
  int64_t max_value_bytes = 0;
  bool hit = false;  // the deadline stopped a statement
};

// Process-wide, before the first database is opened: SQLite without its internal mutexes and
// memory statistics (~5% of the recorder's insert path). Only for a process that uses SQLite
// from one thread; an error when SQLite was already initialized.
Result<void> UseSqliteFromOneThreadOnly();
// The same without memory statistics, for a process whose threads each use connections of their
// own (SQLITE_CONFIG_MULTITHREAD: SQLite's global mutexes stay, a connection is never shared):
// the recorder while it serves queries (--serve), rankscope-serve. SQLite's memory is counted
// per thread (CountSqliteMemoryPerThread), so that a query's can be bounded.
Result<void> UseSqliteConnectionsPerThread();

// Process-wide, before SQLite is initialized: SQLite allocates through a counter per thread
// (16 bytes more per allocation), which SqliteMemoryBudget reads.
Result<void> CountSqliteMemoryPerThread();

// While it lives, what SQLite allocates on the calling thread may grow by at most `max_bytes`:
// an allocation past that fails, and the statement with it (SQLITE_NOMEM; hit() then says the
// budget did it). The memory one query's statements hold, whatever its SQL makes SQLite build
// (a row of 300 values of 4 MiB). Limits nothing unless CountSqliteMemoryPerThread() was chosen.
// One at a time per thread.
class SqliteMemoryBudget {
 public:
  explicit SqliteMemoryBudget(int64_t max_bytes);
  ~SqliteMemoryBudget();
  SqliteMemoryBudget(const SqliteMemoryBudget&) = delete;
  SqliteMemoryBudget& operator=(const SqliteMemoryBudget&) = delete;
  bool hit() const;
  int64_t max_bytes() const { return max_bytes_; }

 private:
  int64_t max_bytes_;
};

class Db {
 public:
  enum class Mode { kReadOnly, kReadWrite, kCreate };
  static Result<Db> Open(const std::string& path, Mode mode);
  Db() = default;
  Db(Db&&) noexcept;
  Db& operator=(Db&&) noexcept;
  ~Db();
  // Closes now, or fails (and stays open) while a statement of it is still alive; the
  // destructor instead defers the close until the last statement is finalized.
  Result<void> Close();

  // Runs one or more statements that return no rows.
  Result<void> Exec(std::string_view sql);
  Result<Statement> Prepare(std::string_view sql);
  // Runs a query expected to return one integer (e.g. "SELECT COUNT(*) ...").
  Result<int64_t> QueryInt(std::string_view sql);
  // Runs a query expected to return at most one text value.
  Result<std::optional<std::string>> QueryText(std::string_view sql);
  int64_t LastInsertRowId() const;

  // For a connection that reads a file from elsewhere (errors then name `label`): every
  // statement stops with an error once `limits.time_limit_ns` has passed since this call (a
  // progress handler), text and blob values are limited to `limits.max_value_bytes`, and
  // SQLite's defensive mode is on, the schema untrusted (no functions with side effects from
  // it), views and triggers of the file's schemas disabled (TEMP ones still work) and
  // extensions not loadable. `what` names the limit in the error ("--timeout 30s").
  Result<void> GuardInput(const std::string& label, const InputLimits& limits = {},
                          const std::string& what = "");
  bool guarded() const { return guard_ != nullptr; }
  // Restarts the guard's clock (one deadline per run of work, e.g. per query); `what` as above.
  void RestartDeadline(int64_t time_limit_ns, const std::string& what = "");
  // The error for a failed call of this connection's: names the file and the limit when the
  // guard stopped it.
  Error StepError(std::string_view prefix) const;
  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }
  Error LastError(std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::shared_ptr<InputGuardState> guard_;
};

// The message for a failed step of `db` (guard: its input guard, or null).
std::string SqliteErrorText(sqlite3* db, const InputGuardState* guard);
// The kind of the connection's last error (ErrorKind), and the error itself: its text as
// SqliteErrorText, its kind.
ErrorKind SqliteErrorKind(sqlite3* db);
Error SqliteError(sqlite3* db, const InputGuardState* guard);

// `name` as an SQL identifier: in double quotes, an embedded double quote doubled. Every table
// or column name spliced into SQL goes through it (an input's table may be named anything).
std::string QuoteIdentifier(std::string_view name);

class Statement {
 public:
  Statement() = default;
  Statement(Statement&&) noexcept;
  Statement& operator=(Statement&&) noexcept;
  ~Statement();

  // Bind by 1-based index. Null optionals bind NULL. A bind that fails (an index out of
  // range, a value over the size limit) makes the next Step() or Run() fail with its reason.
  Statement& Bind(int idx, int64_t v);
  Statement& Bind(int idx, double v);
  Statement& Bind(int idx, std::string_view v);
  Statement& BindNull(int idx);
  template <typename T>
  Statement& Bind(int idx, const std::optional<T>& v) {
    return v ? Bind(idx, *v) : BindNull(idx);
  }
  Statement& Bind(int idx, int v) { return Bind(idx, static_cast<int64_t>(v)); }
  Statement& Bind(int idx, uint32_t v) { return Bind(idx, static_cast<int64_t>(v)); }
  Statement& Bind(int idx, uint64_t v) { return Bind(idx, static_cast<int64_t>(v)); }
  Statement& Bind(int idx, const char* v) { return Bind(idx, std::string_view(v)); }
  Statement& Bind(int idx, const std::string& v) { return Bind(idx, std::string_view(v)); }

  // Returns true while a row is available, false when done.
  Result<bool> Step();
  // Step() for statements returning no rows, then Reset().
  Result<void> Run();
  // Resets the statement and clears its bindings (and a failed bind's error).
  void Reset();

  int ColumnCount() const;
  std::string ColumnName(int col) const;
  bool IsNull(int col) const;
  int ColumnType(int col) const;
  int64_t Int(int col) const;
  double Double(int col) const;
  std::string Text(int col) const;
  std::optional<int64_t> OptInt(int col) const;
  sqlite3_stmt* raw() const { return stmt_; }

 private:
  friend class Db;
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::shared_ptr<InputGuardState> guard)
      : db_(db), stmt_(stmt), guard_(std::move(guard)) {}
  Statement& Bound(int rc, int idx);  // keeps the first failed bind
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::shared_ptr<InputGuardState> guard_;
  int bind_rc_ = 0, bind_idx_ = 0;  // the first failed bind since the last Reset()
};

// Wraps BEGIN/COMMIT; rolls back in the destructor unless committed.
class Transaction {
 public:
  static Result<Transaction> Begin(Db& db);
  Transaction(Transaction&&) noexcept;
  Transaction& operator=(Transaction&&) = delete;
  ~Transaction();
  Result<void> Commit();

 private:
  explicit Transaction(Db* db) : db_(db) {}
  Db* db_ = nullptr;
};

}  // namespace rs
