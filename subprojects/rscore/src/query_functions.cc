#include "rscore/query_functions.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace rs {
namespace {

enum class Bound { kPrintf, kCompare, kMatch };

struct Wrapped {
  const char* name;
  int nargs;  // as SQLite registers it (-1: any number)
  Bound bound;
  int subject, pattern;  // for kCompare / kMatch: the arguments whose sizes multiply
};

// SQLite's own functions, on a connection with nothing else (a user's SQL never reaches it).
class Builtins {
 public:
  ~Builtins() {
    for (auto& [key, st] : statements_) sqlite3_finalize(st);
    if (db_ != nullptr) sqlite3_close(db_);
  }
  // Runs name(args...) with SQLite's function into `ctx`, under `main`'s size limits. With
  // `null_is_too_big`, a NULL result is the size limit's (SQLite 3.40's printf() answers a
  // result over the limit with NULL, not an error).
  void Call(sqlite3_context* ctx, sqlite3* main, const char* name, int argc, sqlite3_value** argv,
            bool null_is_too_big) {
    sqlite3_stmt* st = Statement(name, argc);
    if (st == nullptr) {
      sqlite3_result_error(ctx, "cannot prepare SQLite's own function", -1);
      return;
    }
    for (int limit : {SQLITE_LIMIT_LENGTH, SQLITE_LIMIT_LIKE_PATTERN_LENGTH}) {
      sqlite3_limit(db_, limit, sqlite3_limit(main, limit, -1));
    }
    for (int i = 0; i < argc; ++i) sqlite3_bind_value(st, i + 1, argv[i]);
    const int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && null_is_too_big && sqlite3_column_type(st, 0) == SQLITE_NULL) {
      sqlite3_result_error_toobig(ctx);
    } else if (rc == SQLITE_ROW) {
      sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
    } else if ((sqlite3_errcode(db_) & 0xff) == SQLITE_TOOBIG) {
      sqlite3_result_error_toobig(ctx);
    } else if ((sqlite3_errcode(db_) & 0xff) == SQLITE_NOMEM) {
      sqlite3_result_error_nomem(ctx);
    } else {
      sqlite3_result_error(ctx, sqlite3_errmsg(db_), -1);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
  }

 private:
  sqlite3_stmt* Statement(const std::string& name, int argc) {
    auto key = std::make_pair(name, argc);
    if (auto it = statements_.find(key); it != statements_.end()) return it->second;
    if (db_ == nullptr &&
        sqlite3_open_v2(":memory:", &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
            SQLITE_OK) {
      return nullptr;
    }
    std::string sql = "SELECT " + name + "(";
    for (int i = 1; i <= argc; ++i) sql += (i > 1 ? ",?" : "?") + std::to_string(i);
    sql += ")";
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return nullptr;
    statements_.emplace(key, st);
    return st;
  }

  sqlite3* db_ = nullptr;
  std::map<std::pair<std::string, int>, sqlite3_stmt*> statements_;
};

struct Registration {
  Wrapped what;
  std::shared_ptr<Builtins> builtins;  // one per query connection
};

std::string Work(int64_t a, int64_t b) {
  return std::to_string(a) + " by " + std::to_string(b) + " bytes";
}

void CallBounded(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto* r = static_cast<Registration*>(sqlite3_user_data(ctx));
  sqlite3* main = sqlite3_context_db_handle(ctx);
  const Wrapped& w = r->what;
  bool null_is_too_big = false;
  if (w.bound == Bound::kPrintf) {
    const auto* format =
        reinterpret_cast<const char*>(argc > 0 ? sqlite3_value_text(argv[0]) : nullptr);
    if (format == nullptr) return sqlite3_result_null(ctx);
    const int64_t limit = sqlite3_limit(main, SQLITE_LIMIT_LENGTH, -1);
    const int64_t fields = PrintfFieldBytes(format, argc - 1, argv + 1);
    if (fields > limit) {
      sqlite3_result_error_toobig(ctx);  // its result would be over the limit: say so now
      return;
    }
    // SQLite's printf() answers NULL for an empty result too; one that could not pass the limit
    // (the format, the fields, every argument escaped, numbers) is such.
    int64_t most = static_cast<int64_t>(std::strlen(format)) + fields;
    for (int i = 1; i < argc; ++i) most += 2 * int64_t{sqlite3_value_bytes(argv[i])} + 64;
    null_is_too_big = most > limit;
  } else if (argc > std::max(w.subject, w.pattern)) {
    const int64_t a = sqlite3_value_bytes(argv[w.subject]);
    const int64_t b = sqlite3_value_bytes(argv[w.pattern]);
    const int64_t max = w.bound == Bound::kCompare ? kMaxCompareBytes : kMaxMatchSteps;
    if (a > 0 && b > 0 && a > max / b) {
      const std::string why = std::string(w.name) + "() of " + Work(a, b) +
                              " is more work than one call may do (" + std::to_string(max) + " " +
                              (w.bound == Bound::kCompare ? "byte comparisons" : "pattern steps") +
                              ", about a second): shorten the values (substr())";
      sqlite3_result_error(ctx, why.c_str(), -1);
      return;
    }
  }
  r->builtins->Call(ctx, main, w.name, argc, argv, null_is_too_big);
}

constexpr Wrapped kWrapped[] = {
    {"printf", -1, Bound::kPrintf, 0, 0}, {"format", -1, Bound::kPrintf, 0, 0},
    {"instr", 2, Bound::kCompare, 0, 1},  {"replace", 3, Bound::kCompare, 0, 1},
    {"like", 2, Bound::kMatch, 1, 0},     {"like", 3, Bound::kMatch, 1, 0},
    {"glob", 2, Bound::kMatch, 1, 0},     {"trim", 2, Bound::kMatch, 0, 1},
    {"ltrim", 2, Bound::kMatch, 0, 1},    {"rtrim", 2, Bound::kMatch, 0, 1},
};

}  // namespace

int64_t PrintfFieldBytes(const char* fmt, int argc, sqlite3_value** args) {
  int used = 0;
  auto next_int = [&]() -> int64_t { return used < argc ? sqlite3_value_int64(args[used++]) : 0; };
  int64_t total = 0;
  // The loop of SQLite's sqlite3_str_vappendf (printf.c) over flags, width, precision and
  // length, as it reads them: a '*' takes the next argument, cast to int.
  for (; *fmt != 0; ++fmt) {
    if (*fmt != '%') continue;
    char c = *++fmt;
    if (c == 0) break;
    int64_t width = 0, precision = -1;
    bool done = false;
    do {
      switch (c) {
        case '-':
        case '+':
        case ' ':
        case '#':
        case '!':
        case '0':
        case ',':
          break;
        case 'l':
          c = *++fmt;
          if (c == 'l') c = *++fmt;
          done = true;
          break;
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7':
        case '8':
        case '9': {
          unsigned wx = static_cast<unsigned>(c - '0');
          while ((c = *++fmt) >= '0' && c <= '9') wx = wx * 10 + static_cast<unsigned>(c - '0');
          width = wx & 0x7fffffff;
          if (c != '.' && c != 'l') {
            done = true;
          } else {
            --fmt;
          }
          break;
        }
        case '*': {
          int w = static_cast<int>(next_int());
          if (w < 0) w = w >= -2147483647 ? -w : 0;
          width = w;
          if ((c = fmt[1]) != '.' && c != 'l') {
            c = *++fmt;
            done = true;
          }
          break;
        }
        case '.': {
          c = *++fmt;
          if (c == '*') {
            int p = static_cast<int>(next_int());
            if (p < 0) p = p >= -2147483647 ? -p : -1;
            precision = p;
            c = *++fmt;
          } else {
            unsigned px = 0;
            while (c >= '0' && c <= '9') {
              px = px * 10 + static_cast<unsigned>(c - '0');
              c = *++fmt;
            }
            precision = px & 0x7fffffff;
          }
          if (c == 'l') {
            --fmt;
          } else {
            done = true;
          }
          break;
        }
        default:
          done = true;
          break;
      }
    } while (!done && (c = *++fmt) != 0);
    if (c == 0) break;  // the format ends inside a conversion: SQLite stops there
    total += width;
    if (c == '%' || c == 'n') continue;  // no argument
    // %T, %S (internal) and unknown conversions end SQLite's output.
    if (std::strchr("dsgzqQwcouxXfeEGipr", c) == nullptr) break;
    ++used;
    // A string's precision only cuts it; every other conversion writes at least that many.
    if (precision > 0 && std::strchr("szqQw", c) == nullptr) total += precision;
  }
  return total;
}

rs::Result<void> BoundExpensiveFunctions(rs::Db& db) {
  auto builtins = std::make_shared<Builtins>();
  for (const Wrapped& w : kWrapped) {
    auto* r = new Registration{w, builtins};
    const int rc = sqlite3_create_function_v2(
        db.raw(), w.name, w.nargs, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, r,
        CallBounded, nullptr, nullptr, [](void* p) { delete static_cast<Registration*>(p); });
    if (rc != SQLITE_OK) {
      return rs::Error(db.path() + ": cannot bound the SQL function " + w.name +
                       "(): " + sqlite3_errmsg(db.raw()));
    }
  }
  return rs::Ok();
}

}  // namespace rs
