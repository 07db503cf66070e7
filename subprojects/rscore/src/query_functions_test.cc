#include "rscore/query_functions.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rscore/read_only_query.h"

namespace rs {
namespace {

class QueryFunctionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::move(rs::Db::Open(":memory:", rs::Db::Mode::kCreate).value());
    ASSERT_TRUE(InstallReadOnlyGuard(db_).ok());
    ASSERT_EQ(sqlite3_open(":memory:", &plain_), SQLITE_OK);
  }
  void TearDown() override { sqlite3_close(plain_); }

  // The one value of `sql` on the guarded connection as text ("NULL" for NULL), or the error.
  std::string Value(const std::string& sql) {
    auto st = db_.Prepare(sql);
    if (!st.ok()) return "error: " + st.error().message();
    auto row = st->Step();
    if (!row.ok()) return "error: " + row.error().message();
    return st->IsNull(0) ? "NULL" : st->Text(0);
  }
  // The same on a connection with SQLite's own functions.
  std::string PlainValue(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(plain_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return "error";
    std::string out = "error";
    if (sqlite3_step(st) == SQLITE_ROW) {
      const auto* t = sqlite3_column_text(st, 0);
      out = t == nullptr
                ? "NULL"
                : std::string(reinterpret_cast<const char*>(t), sqlite3_column_bytes(st, 0));
    }
    sqlite3_finalize(st);
    return out;
  }
  // PrintfFieldBytes of printf(`args`) as SQL values ("'%.*c', 5, 'x'").
  int64_t FieldBytes(const std::string& args) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(plain_, ("SELECT " + args).c_str(), -1, &st, nullptr), SQLITE_OK);
    EXPECT_EQ(sqlite3_step(st), SQLITE_ROW);
    std::vector<sqlite3_value*> v;
    for (int i = 0; i < sqlite3_column_count(st); ++i) v.push_back(sqlite3_column_value(st, i));
    const std::string format = reinterpret_cast<const char*>(sqlite3_value_text(v[0]));
    const int64_t n =
        PrintfFieldBytes(format.c_str(), static_cast<int>(v.size()) - 1, v.data() + 1);
    sqlite3_finalize(st);
    return n;
  }

  rs::Db db_;
  sqlite3* plain_ = nullptr;
};

TEST_F(QueryFunctionsTest, ResultsAreSqlitesOwn) {
  for (const char* e : {"printf('%5d|%-5s|%.3f|%x|%c|%q|%Q|%w|%%|%,d', 42, 'ab', 3.14159, 255, "
                        "'hé', 'it''s', NULL, 'a\"b', 1234567)",
                        "printf('%.*c', 7, 'é')", "printf('%*d', -6, 5)", "format('%s', 1.5)",
                        "printf(NULL)", "printf('%T %d', 1)", "printf('no args %d')",
                        "instr('haystack', 'st')", "replace('a-b-c', '-', '+')", "'abc' LIKE 'A%'",
                        "like('a_c', 'abc')", "'x%y' LIKE 'x!%%' ESCAPE '!'", "'abc' GLOB 'a*'",
                        "trim('xxhixx', 'x')", "ltrim('  a ')", "rtrim('ab', 'b')"}) {
    EXPECT_EQ(Value(std::string("SELECT ") + e), PlainValue(std::string("SELECT ") + e)) << e;
  }
}

TEST_F(QueryFunctionsTest, PrintfWidthBombFailsAtOnce) {
  // SQLite 3.40 alone loops 2^31 times here and answers NULL.
  const std::string e = Value("SELECT printf('%.*c', 2147483647, 'x')");
  EXPECT_NE(e.find("a text or blob value over the limit of 4194304 bytes"), std::string::npos) << e;
  for (const char* sql : {"SELECT format('%.*c%.*c', 3000000, 'x', 3000000, 'y')",
                          "SELECT printf('%.2147483647c', 'x')", "SELECT printf('%*d', 5000000, 1)",
                          // Within the widths, over the limit once written: an error, not NULL.
                          "SELECT printf('%s%s', printf('%.*c', 3000000, 'x'), "
                          "printf('%.*c', 3000000, 'y'))"}) {
    EXPECT_NE(Value(sql).find("over the limit of 4194304 bytes"), std::string::npos) << sql;
  }
  EXPECT_EQ(Value("SELECT length(printf('%.*c', 4000000, 'x'))"), "4000000");
}

TEST_F(QueryFunctionsTest, QuadraticSearchesRefused) {
  const std::string big = "printf('%.*c', 4000000, 'a')";
  for (const std::string& sql :
       {"SELECT instr(" + big + ", printf('%.*c', 2000000, 'a') || 'b')",
        "SELECT replace(" + big + ", printf('%.*c', 2000000, 'a') || 'b', 'x')",
        "SELECT " + big + " LIKE '%' || printf('%.*c', 40000, 'a') || 'b'",
        "SELECT " + big + " GLOB '*' || printf('%.*c', 40000, 'a') || 'b'",
        "SELECT trim(" + big + ", printf('%.*c', 1000, 'b') || 'a')"}) {
    const std::string e = Value(sql);
    EXPECT_NE(e.find("is more work than one call may do"), std::string::npos) << sql << ": " << e;
  }
  // A short needle in a long text is fine. (LIKE's '%' scans with strcspn(), which ASan's
  // strict_string_checks, as .ci/sanitize runs it, makes read the whole rest of the text on
  // every call: 20 KB there, not 4 MB.)
  EXPECT_EQ(Value("SELECT instr(" + big + " || 'needle', 'needle')"), "4000001");
  EXPECT_EQ(Value("SELECT printf('%.*c', 20000, 'a') LIKE '%aab%'"), "0");
}

TEST_F(QueryFunctionsTest, PrintfFieldBytesReadsFormatsAsSqliteDoes) {
  EXPECT_EQ(FieldBytes("'%d %s'"), 0);
  EXPECT_EQ(FieldBytes("'%5d%.3f'"), 8);
  EXPECT_EQ(FieldBytes("'%.10s|%10s'"), 10);  // a string's precision only cuts
  EXPECT_EQ(FieldBytes("'%.2147483647c', 'x'"), 2147483647);
  EXPECT_EQ(FieldBytes("'%10.5c', 'x'"), 15);
  EXPECT_EQ(FieldBytes("'%*.*c', -20, 30, 'x'"), 50);
  EXPECT_EQ(FieldBytes("'%d%.*c', 99999999, 7, 'x'"), 7);  // the first argument is a value
  EXPECT_EQ(FieldBytes("'%.*c', 4294967297, 'x'"), 1);     // cast to int, as SQLite does
  EXPECT_EQ(FieldBytes("'%ll5d'"), 0);                     // 'l' ends the flags
  EXPECT_EQ(FieldBytes("'%T%.99c'"), 0);                   // %T ends SQL printf's output
  EXPECT_EQ(FieldBytes("'%.*'"), 0);                       // a format cut short
}

}  // namespace
}  // namespace rs
