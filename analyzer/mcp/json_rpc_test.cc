#include "analyzer/mcp/json_rpc.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace rs::analyzer::mcp {
namespace {

TEST(ParseMessage, RequestNotificationAndResponse) {
  Message m = ParseMessage(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}})");
  EXPECT_EQ(m.kind, Message::Kind::kRequest);
  EXPECT_EQ(m.id, 7);
  EXPECT_EQ(m.method, "tools/list");
  EXPECT_TRUE(m.params.is_object());

  m = ParseMessage(R"({"jsonrpc":"2.0","id":"a-1","method":"ping"})");
  EXPECT_EQ(m.kind, Message::Kind::kRequest);
  EXPECT_EQ(m.id, "a-1");
  EXPECT_TRUE(m.params.is_null());

  m = ParseMessage(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  EXPECT_EQ(m.kind, Message::Kind::kNotification);

  m = ParseMessage(R"({"jsonrpc":"2.0","id":3,"result":{}})");
  EXPECT_EQ(m.kind, Message::Kind::kResponse);
}

TEST(ParseMessage, InvalidMessagesGetTheirCodes) {
  struct Case {
    const char* line;
    int code;
    Json id;
  };
  const Case cases[] = {
      {"{\"jsonrpc\":\"2.0\",\"id\":1,", kParseError, nullptr},
      {"not json", kParseError, nullptr},
      {"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", kInvalidRequest, nullptr},
      {"42", kInvalidRequest, nullptr},
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", kInvalidRequest, nullptr},
      {R"({"jsonrpc":"2.0","id":1.5,"method":"ping"})", kInvalidRequest, nullptr},
      {R"({"jsonrpc":"2.0","id":{},"method":"ping"})", kInvalidRequest, nullptr},
      {R"({"jsonrpc":"1.0","id":4,"method":"ping"})", kInvalidRequest, 4},
      {R"({"id":5,"method":"ping"})", kInvalidRequest, 5},
      {R"({"jsonrpc":"2.0","id":6,"method":12})", kInvalidRequest, 6},
      {R"({"jsonrpc":"2.0","id":8})", kInvalidRequest, 8},
      {R"({"jsonrpc":"2.0","id":9,"method":"ping","params":"x"})", kInvalidRequest, 9},
      // A string that is not UTF-8 is no JSON.
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xff\"}", kParseError, nullptr},
  };
  for (const Case& c : cases) {
    Message m = ParseMessage(c.line);
    EXPECT_EQ(m.kind, Message::Kind::kInvalid) << c.line;
    EXPECT_EQ(m.error_code, c.code) << c.line;
    EXPECT_EQ(m.id, c.id) << c.line;
    EXPECT_FALSE(m.error.empty()) << c.line;
  }
}

TEST(ParseMessage, DeepNestingIsParsedWithoutRecursion) {
  std::string deep = R"({"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":)";
  deep += std::string(200000, '[') + std::string(200000, ']') + "}}";
  Message m = ParseMessage(deep);
  EXPECT_EQ(m.kind, Message::Kind::kRequest);
  EXPECT_EQ(m.method, "ping");
}

TEST(Replies, AreOneLineOfValidJson) {
  const std::string ok = ResultLine(1, Json{{"a", "x\ny"}});
  EXPECT_EQ(ok.find('\n'), std::string::npos);
  EXPECT_EQ(ok, R"({"jsonrpc":"2.0","id":1,"result":{"a":"x\ny"}})");
  EXPECT_EQ(ErrorLine(nullptr, kMethodNotFound, "no"),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no"}})");
  // A recorded process name may hold any bytes: replaced, never an exception.
  Json bad = std::string(
      "ab\xff\xfe"
      "c");
  EXPECT_EQ(Dump(bad),
            "\"ab\xEF\xBF\xBD\xEF\xBF\xBD"
            "c\"");
}

// Writes `data` into a pipe from a thread and reads it back line by line.
std::vector<std::pair<LineReader::Status, std::string>> ReadAll(const std::string& data,
                                                                size_t max) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::thread writer([&] {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(fds[1], data.data() + done, std::min<size_t>(data.size() - done, 7000));
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fds[1]);
  });
  LineReader reader(fds[0], max);
  std::vector<std::pair<LineReader::Status, std::string>> out;
  std::string line;
  for (;;) {
    LineReader::Status s = reader.Next(line);
    if (s == LineReader::Status::kEnd) break;
    out.emplace_back(s, s == LineReader::Status::kLine ? line : "");
  }
  writer.join();
  ::close(fds[0]);
  return out;
}

TEST(LineReader, SplitsLinesAndSkipsTooLongOnes) {
  using S = LineReader::Status;
  const std::string big(200000, 'x');
  auto lines = ReadAll("one\r\ntwo\n" + big + "\nthree\n\nlast", 1000);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], std::make_pair(S::kLine, std::string("one")));
  EXPECT_EQ(lines[1], std::make_pair(S::kLine, std::string("two")));
  EXPECT_EQ(lines[2].first, S::kTooLong);
  EXPECT_EQ(lines[3], std::make_pair(S::kLine, std::string("three")));
  EXPECT_EQ(lines[4], std::make_pair(S::kLine, std::string()));
  EXPECT_EQ(lines[5], std::make_pair(S::kLine, std::string("last")));
  // A line of exactly the limit passes; one byte more does not.
  lines = ReadAll(std::string(1000, 'y') + "\n" + std::string(1001, 'z') + "\n", 1000);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].first, S::kLine);
  EXPECT_EQ(lines[1].first, S::kTooLong);
}

}  // namespace
}  // namespace rs::analyzer::mcp
