#include "rscore/sqlite.h"

#include "rscore/scratch_file.h"

#include <limits>
#include <utility>

#include "rscore/duration.h"

namespace rs {
namespace {

int StopAtDeadline(void* arg) {
  auto* g = static_cast<InputGuardState*>(arg);
  if (std::chrono::steady_clock::now() < g->deadline) return 0;
  g->hit = true;
  return 1;
}

}  // namespace

std::string QuoteIdentifier(std::string_view name) {
  std::string q = "\"";
  for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

ErrorKind SqliteErrorKind(sqlite3* db) {
  switch (sqlite3_errcode(db) & 0xff) {
    case SQLITE_FULL:
      return ErrorKind::kNoSpace;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return ErrorKind::kCorrupt;
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return ErrorKind::kRefused;
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
      // What the operating system said, where SQLite kept it (a write that hit ENOSPC is an
      // SQLITE_IOERR_WRITE; an open of a missing path SQLITE_CANTOPEN with ENOENT).
      return ErrnoKind(sqlite3_system_errno(db));
    default:
      return ErrorKind::kOther;
  }
}

namespace {

// Whether the last error is an input guard's limit (time, value size): reading further was
// refused, and the message names the input by the guard's label.
bool GuardLimitHit(sqlite3* db, const InputGuardState* guard) {
  const int code = sqlite3_errcode(db) & 0xff;
  return guard != nullptr && ((code == SQLITE_INTERRUPT && guard->hit) || code == SQLITE_TOOBIG);
}

}  // namespace

Error SqliteError(sqlite3* db, const InputGuardState* guard) {
  return Error(SqliteErrorText(db, guard),
               GuardLimitHit(db, guard) ? ErrorKind::kRefused : SqliteErrorKind(db));
}

std::string SqliteErrorText(sqlite3* db, const InputGuardState* guard) {
  const int code = sqlite3_errcode(db) & 0xff;
  if (guard != nullptr && code == SQLITE_INTERRUPT && guard->hit) {
    return guard->label + ": stopped: the time limit for reading this file (" + guard->limit_text +
           ") was hit";
  }
  if (guard != nullptr && code == SQLITE_TOOBIG) {
    return guard->label + ": a text or blob value over the limit of " +
           std::to_string(guard->max_value_bytes) + " bytes (" + sqlite3_errmsg(db) + ")";
  }
  return std::string("SQL error: ") + sqlite3_errmsg(db);
}

Result<void> Db::GuardInput(const std::string& label, const InputLimits& limits,
                            const std::string& what) {
  if (!db_) return Error(label + ": no database to guard");
  const struct {
    int op, value;
  } configs[] = {
      {SQLITE_DBCONFIG_DEFENSIVE, 1},
      {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
      {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
      {SQLITE_DBCONFIG_ENABLE_VIEW, 0},
      {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0},
  };
  for (const auto& c : configs) {
    int now = -1;
    if (sqlite3_db_config(db_, c.op, c.value, &now) != SQLITE_OK || now != c.value) {
      return Error(label + ": cannot configure SQLite for reading an untrusted file");
    }
  }
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, static_cast<int>(limits.max_value_bytes));
  auto g = std::make_shared<InputGuardState>();
  g->label = label;
  g->max_value_bytes = limits.max_value_bytes;
  g->limit_text = what.empty() ? FormatDuration(limits.time_limit_ns) : what;
  g->deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(limits.time_limit_ns);
  // Checked every 1000 virtual machine instructions (a few microseconds of work).
  sqlite3_progress_handler(db_, 1000, StopAtDeadline, g.get());
  guard_ = std::move(g);
  return Ok();
}

void Db::RestartDeadline(int64_t time_limit_ns, const std::string& what) {
  if (!guard_) return;
  guard_->hit = false;
  guard_->limit_text = what.empty() ? FormatDuration(time_limit_ns) : what;
  guard_->deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(time_limit_ns);
}

Error Db::StepError(std::string_view prefix) const {
  if (!db_) return Error(path_ + ": " + std::string(prefix) + ": no database");
  if (GuardLimitHit(db_, guard_.get())) return SqliteError(db_, guard_.get());
  return Error(path_ + ": " + std::string(prefix) + ": " + sqlite3_errmsg(db_),
               SqliteErrorKind(db_));
}

Result<Db> Db::Open(const std::string& path, Mode mode) {
  UseFdPathsInSqlite();  // before the first connection: it may attach such a path later
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case Mode::kReadOnly:
      flags |= SQLITE_OPEN_READONLY;
      break;
    case Mode::kReadWrite:
      flags |= SQLITE_OPEN_READWRITE;
      break;
    case Mode::kCreate:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
  }
  Db db;
  db.path_ = path;
  int rc = sqlite3_open_v2(path.c_str(), &db.db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db.db_ ? sqlite3_errmsg(db.db_) : sqlite3_errstr(rc);
    return Error(path + ": cannot open SQLite database: " + msg,
                 db.db_ ? SqliteErrorKind(db.db_) : ErrorKind::kOther);
  }
  sqlite3_extended_result_codes(db.db_, 1);
  sqlite3_busy_timeout(db.db_, 5000);
  return db;
}

Db::Db(Db&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)), path_(std::move(o.path_)), guard_(std::move(o.guard_)) {}

Db& Db::operator=(Db&& o) noexcept {
  if (this != &o) {
    if (db_) sqlite3_close_v2(db_);
    db_ = std::exchange(o.db_, nullptr);
    path_ = std::move(o.path_);
    guard_ = std::move(o.guard_);
  }
  return *this;
}

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

Result<void> Db::Close() {
  if (!db_) return Ok();
  if (sqlite3_close(db_) != SQLITE_OK) return LastError("cannot close (statements still open)");
  db_ = nullptr;
  return Ok();
}

Error Db::LastError(std::string_view what) const {
  return Error(
      path_ + ": " + std::string(what) + ": " + (db_ ? sqlite3_errmsg(db_) : "no database"),
      db_ ? SqliteErrorKind(db_) : ErrorKind::kOther);
}

Result<void> Db::Exec(std::string_view sql) {
  char* err = nullptr;
  std::string s(sql);
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    if (GuardLimitHit(db_, guard_.get())) return SqliteError(db_, guard_.get());
    return Error(path_ + ": SQL failed: " + msg, SqliteErrorKind(db_));
  }
  return Ok();
}

Result<Statement> Db::Prepare(std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK) {
    return SqliteError(db_, guard_.get());
  }
  if (!stmt) return Error("SQL error: empty statement");
  return Statement(db_, stmt, guard_);
}

Result<int64_t> Db::QueryInt(std::string_view sql) {
  ASSIGN_OR_RETURN(Statement st, Prepare(sql));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.IsNull(0)) return Error(path_ + ": query returned no value: " + std::string(sql));
  return st.Int(0);
}

Result<std::optional<std::string>> Db::QueryText(std::string_view sql) {
  ASSIGN_OR_RETURN(Statement st, Prepare(sql));
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row || st.IsNull(0)) return std::optional<std::string>();
  return std::optional<std::string>(st.Text(0));
}

int64_t Db::LastInsertRowId() const { return sqlite3_last_insert_rowid(db_); }

Statement::Statement(Statement&& o) noexcept
    : db_(std::exchange(o.db_, nullptr)),
      stmt_(std::exchange(o.stmt_, nullptr)),
      guard_(std::move(o.guard_)),
      bind_rc_(std::exchange(o.bind_rc_, 0)),
      bind_idx_(o.bind_idx_) {}

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    if (stmt_) sqlite3_finalize(stmt_);
    db_ = std::exchange(o.db_, nullptr);
    stmt_ = std::exchange(o.stmt_, nullptr);
    guard_ = std::move(o.guard_);
    bind_rc_ = std::exchange(o.bind_rc_, 0);
    bind_idx_ = o.bind_idx_;
  }
  return *this;
}

Result<void> UseSqliteFromOneThreadOnly() {
  if (sqlite3_config(SQLITE_CONFIG_SINGLETHREAD) != SQLITE_OK ||
      sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK) {
    return Error("SQLite is already initialized: single-thread mode must be chosen first");
  }
  return Ok();
}

Result<void> UseSqliteConnectionsPerThread() {
  if (sqlite3_config(SQLITE_CONFIG_MULTITHREAD) != SQLITE_OK ||
      sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) != SQLITE_OK) {
    return Error("SQLite is already initialized: multi-thread mode must be chosen first");
  }
  return CountSqliteMemoryPerThread();
}

Statement::~Statement() {
  if (stmt_) sqlite3_finalize(stmt_);
}

Statement& Statement::Bound(int rc, int idx) {
  if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc, bind_idx_ = idx;
  return *this;
}
Statement& Statement::Bind(int idx, int64_t v) {
  return Bound(sqlite3_bind_int64(stmt_, idx, v), idx);
}
Statement& Statement::Bind(int idx, double v) {
  return Bound(sqlite3_bind_double(stmt_, idx, v), idx);
}
Statement& Statement::Bind(int idx, std::string_view v) {
  if (v.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return Bound(SQLITE_TOOBIG, idx);
  }
  return Bound(
      sqlite3_bind_text(stmt_, idx, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT), idx);
}
Statement& Statement::BindNull(int idx) { return Bound(sqlite3_bind_null(stmt_, idx), idx); }

Result<bool> Statement::Step() {
  if (bind_rc_ != SQLITE_OK) {
    const char* sql = sqlite3_sql(stmt_);
    return Error("binding parameter " + std::to_string(bind_idx_) + " of '" +
                 std::string(sql ? sql : "?").substr(0, 120) + "': " + sqlite3_errstr(bind_rc_));
  }
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, guard_.get());
}

Result<void> Statement::Run() {
  auto r = Step();
  Reset();
  if (!r.ok()) return r.error();
  return Ok();
}

void Statement::Reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_rc_ = SQLITE_OK;
}

int Statement::ColumnCount() const { return sqlite3_column_count(stmt_); }
std::string Statement::ColumnName(int col) const {
  const char* n = sqlite3_column_name(stmt_, col);
  return n ? n : "";
}
bool Statement::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
int Statement::ColumnType(int col) const { return sqlite3_column_type(stmt_, col); }
int64_t Statement::Int(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::Double(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Statement::Text(int col) const {
  const unsigned char* t = sqlite3_column_text(stmt_, col);
  return t ? std::string(reinterpret_cast<const char*>(t),
                         static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
           : std::string();
}
std::optional<int64_t> Statement::OptInt(int col) const {
  if (IsNull(col)) return std::nullopt;
  return Int(col);
}

Result<Transaction> Transaction::Begin(Db& db) {
  RETURN_IF_ERROR(db.Exec("BEGIN"));
  return Transaction(&db);
}

Transaction::Transaction(Transaction&& o) noexcept : db_(std::exchange(o.db_, nullptr)) {}

Transaction::~Transaction() {
  if (db_) (void)db_->Exec("ROLLBACK");
}

Result<void> Transaction::Commit() {
  RETURN_IF_ERROR(db_->Exec("COMMIT"));  // a failed COMMIT leaves the rollback to the destructor
  db_ = nullptr;
  return Ok();
}

}  // namespace rs
