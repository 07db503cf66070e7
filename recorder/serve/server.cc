#include "recorder/serve/server.h"

#include <fcntl.h>
#include <httplib.h>
#include <openssl/crypto.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "recorder/serve/connection_guard.h"
#include "recorder/serve/query_service.h"
#include "rscore/fleet_wire.h"
#include "rscore/text_escape.h"
#include "rscore/time_arg.h"
#include "rscore/tls.h"

namespace rs::serve {
namespace {

constexpr const char* kJson = "application/json";

int64_t RealtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

void Fail(httplib::Response& res, int status, const std::string& message) {
  res.status = status;
  res.set_content(rs::wire::EncodeError(message), kJson);
}

// Text for a log line: control characters as spaces, at most `max` bytes.
std::string Printable(std::string_view s, size_t max = 200) {
  std::string out(s.substr(0, max));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '"') c = c == '"' ? '\'' : ' ';
  }
  return s.size() > max ? out + "..." : out;
}

// The one range of a download request within a file of `size` bytes, its end clipped to the
// file's (a resumed download asks from where it stopped to the end). One range only: a list
// of ranges would make one request answer the file many times over.
rs::Result<std::pair<ssize_t, ssize_t>> SatisfiableRange(
    const std::vector<std::pair<ssize_t, ssize_t>>& ranges, int64_t size) {
  if (ranges.size() != 1) return rs::Error("one byte range per request");
  auto [first, last] = ranges[0];
  if (first < 0) {  // "-N": the last N bytes
    if (last <= 0 || size == 0) return rs::Error("the range is empty");
    return std::pair<ssize_t, ssize_t>{std::max<int64_t>(0, size - last), size - 1};
  }
  if (first >= size) {
    return rs::Error("the range starts at byte " + std::to_string(first) + ", past the end (" +
                     std::to_string(size) + " bytes)");
  }
  if (last < 0 || last >= size) last = size - 1;
  return std::pair<ssize_t, ssize_t>{first, last};
}

}  // namespace

Server::Server(ServerConfig config) : config_(std::move(config)), store_(config_.bundle_dir) {}

Server::~Server() { Stop(); }

rs::Result<std::unique_ptr<Server>> Server::Start(ServerConfig config) {
  ASSIGN_OR_RETURN(std::unique_ptr<Server> s, Bind(std::move(config)));
  s->Run();
  return s;
}

void Server::Run() {
  if (thread_.joinable()) return;
  // The server's threads (this one's and the workers it starts, which inherit its mask) take no
  // SIGPIPE: a client that goes away mid-reply is a failed write (EPIPE), and must not end the
  // process it serves from (rankscope-record --serve does not ignore the signal).
  sigset_t pipe, old;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  thread_ = std::thread([this] { http_->listen_after_bind(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

rs::Result<std::unique_ptr<Server>> Server::Bind(ServerConfig config) {
  RETURN_IF_ERROR(CheckServeOptions(config.options, "--"));
  std::unique_ptr<Server> s(new Server(std::move(config)));
  const ServeOptions& o = s->config_.options;
  if (!o.token_file.empty()) {
    ASSIGN_OR_RETURN(s->token_, rs::tls::ReadTokenFile(o.token_file));
  }
  ConnectionLimits limits;
  // As many places for connections still authenticating as for those served: a flood of
  // clients without credentials fills the first and never the second.
  limits.max_unauthenticated = o.max_connections;
  limits.max_body_bytes = o.max_request_bytes;
  auto log = s->config_.log;
  s->guard_ = std::make_unique<ConnectionGuard>(limits, [log](const std::string& line) {
    if (log) log(line);
  });
  rs::Result<void> tls = rs::Ok();
  ConnectionGuard* guard = s->guard_.get();
  s->http_ = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    tls = rs::tls::ConfigureServer(&ctx, o.tls, /*require_client_cert=*/!o.tls.ca.empty());
    // A connection whose reading side the guard shut reads an end of file, not a TLS error,
    // so that the reply saying why can still be written.
    SSL_CTX_set_options(&ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    guard->Install(&ctx);
    return tls.ok();
  });
  if (!tls.ok()) return tls.error();
  if (!s->http_->is_valid()) return rs::Error("cannot set up TLS: " + rs::tls::TakeErrors());
  const int threads = o.max_connections + limits.max_unauthenticated;
  s->http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // A body with a Content-Length over the limit is refused before it is read (cpp-httplib);
  // every other form of it, and the headers, the guard bounds while they are read.
  s->http_->set_payload_max_length(static_cast<size_t>(o.max_request_bytes));
  // Small replies (the clock) go out at once: Nagle's delay would be in every round trip.
  s->http_->set_tcp_nodelay(true);
  s->http_->set_read_timeout(5, 0);
  s->http_->set_write_timeout(30, 0);
  s->http_->set_keep_alive_timeout(2);
  s->http_->set_keep_alive_max_count(100);
  s->Route();
  errno = 0;
  if (o.port == 0) {
    s->port_ = s->http_->bind_to_any_port(o.host);
  } else {
    s->port_ = s->http_->bind_to_port(o.host, o.port) ? o.port : -1;
  }
  if (s->port_ <= 0) {
    return rs::Error("cannot listen on " + o.host + ":" + std::to_string(o.port) + ": " +
                     (errno ? std::strerror(errno) : "address not usable"));
  }
  return s;
}

bool Server::TokenMatches(const httplib::Request& req) const {
  const std::string want = "Bearer " + token_;
  const std::string got = req.get_header_value("Authorization");
  return got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0;
}

void Server::Stop() {
  if (!http_) return;
  http_->stop();
  if (thread_.joinable()) thread_.join();
}

void Server::Route() {
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return Admit(req, res) ? httplib::Server::HandlerResponse::Unhandled
                           : httplib::Server::HandlerResponse::Handled;
  });
  http_->set_logger(
      [this](const httplib::Request& req, const httplib::Response& res) { LogRequest(req, res); });
  http_->set_error_handler(
      [this](const httplib::Request& req, httplib::Response& res) { ExplainError(req, res); });
  http_->Get("/v1/time", [this](const httplib::Request&, httplib::Response& res) {
    guard_->RequestRead();
    res.set_content(
        rs::wire::EncodeTime(config_.node, RealtimeNs() + config_.options.simulate_clock_offset_ns),
        kJson);
  });
  http_->Post("/v1/query",
              [this](const httplib::Request& req, httplib::Response& res) { Query(req, res); });
  // The bundles overlapping ?since&until, or (/v1/summaries) their summaries: each made here on
  // the first request for that version of its bundle (rscore/summarize.h), its size and
  // checksum listed, so that nothing raw leaves the node unless asked for.
  http_->Get("/v1/bundles", [this](const httplib::Request& req, httplib::Response& res) {
    List(req, res, false);
  });
  http_->Get("/v1/summaries",
             [this](const httplib::Request& req, httplib::Response& res) { List(req, res, true); });
  // A bundle, or its summary, for download: ranges and the checksum the listing gave.
  http_->Get("/v1/bundle/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
    Send(req, res, false);
  });
  http_->Get("/v1/summary/(.+)",
             [this](const httplib::Request& req, httplib::Response& res) { Send(req, res, true); });
}

bool Server::Admit(const httplib::Request& req, httplib::Response& res) {
  ++requests_;
  // Ranges are for the bundle and summary downloads; cpp-httplib would apply one to any reply (an
  // error cut to a range of its JSON, a query's rows as 206).
  if (req.path.rfind("/v1/bundle/", 0) != 0 && req.path.rfind("/v1/summary/", 0) != 0) {
    const_cast<httplib::Request&>(req).ranges.clear();
  }
  auto refuse = [&](int status, const std::string& why) {
    Fail(res, status, why);
    guard_->EndAfterResponse();  // its body, if any, is not read as a next request
    return false;
  };
  if (!token_.empty() && !TokenMatches(req)) {
    res.set_header("WWW-Authenticate", "Bearer");
    return refuse(401, "this node needs a bearer token (rankscope-fleet --token-file)");
  }
  guard_->Authenticated();
  // cpp-httplib adds four fields of its own (REMOTE_ADDR, REMOTE_PORT, LOCAL_ADDR, LOCAL_PORT).
  // Their sizes bound what was read only after the fact (the guard bounds it while reading).
  int64_t header_bytes = static_cast<int64_t>(req.method.size() + req.target.size());
  for (const auto& [name, value] : req.headers) header_bytes += name.size() + value.size() + 4;
  if (req.headers.size() > static_cast<size_t>(kMaxHeaderFields) + 4) {
    return refuse(431, "more than " + std::to_string(kMaxHeaderFields) + " header fields");
  }
  if (header_bytes > kMaxHeaderBytes + 256) {  // with cpp-httplib's four
    return refuse(431, "the request line and header fields pass " +
                           std::to_string(kMaxHeaderBytes >> 10) + " KiB");
  }
  // A body comes with its length, as rankscope-fleet sends it: cpp-httplib reads a chunked
  // one, or one without a length, whole before the handler could refuse it, and would
  // decompress a compressed one past any limit.
  if (req.has_header("Transfer-Encoding")) {
    return refuse(411, "a request body must come with a Content-Length, not chunked");
  }
  if (req.has_header("Content-Encoding")) {
    return refuse(415, "a request body must not be compressed (Content-Encoding)");
  }
  if (req.method != "GET" && req.method != "HEAD" && !req.has_header("Content-Length")) {
    return refuse(411, "a request body must come with a Content-Length");
  }
  return true;
}

void Server::LogRequest(const httplib::Request& req, const httplib::Response& res) {
  guard_->ResponseSent();
  if (!config_.log) return;
  // Who sent it, as far as this node knows: the certificate's subject, or whether the bearer
  // token was right, wrong or missing.
  std::string who = rs::tls::PeerSubject(req.ssl);
  if (who.empty() && !token_.empty()) {
    who = TokenMatches(req)                 ? "(bearer token)"
          : req.has_header("Authorization") ? "(wrong bearer token)"
                                            : "(no bearer token)";
  }
  if (who.empty()) who = "(no certificate)";
  // A request cut short before its headers were read has no address or line yet.
  const std::string peer = req.remote_addr.empty()
                               ? guard_->PeerOfThisThread()
                               : req.remote_addr + ":" + std::to_string(req.remote_port);
  std::string line = peer + " \"" + Printable(who) + "\" " +
                     (req.method.empty() ? "(no request line)"
                                         : Printable(req.method, 16) + " " + Printable(req.path)) +
                     " " + std::to_string(res.status);
  if (req.path == "/v1/query" && !req.body.empty()) {  // a refused one was not read
    auto q = rs::wire::DecodeQueryRequest(req.body);
    line += q.ok() ? " sql=\"" + Printable(q->sql) + "\"" : " (not a query request)";
  }
  if (res.status >= 400) line += " " + Printable(rs::wire::DecodeError(res.body), 160);
  config_.log(line);
}

void Server::ExplainError(const httplib::Request&, httplib::Response& res) {
  if (!res.body.empty()) return;
  // The guard closed the connection while the request was read: say why, not "bad request".
  if (const ConnectionGuard::Cut cut = guard_->CutOfThisThread(); cut.status != 0) {
    res.status = cut.status;
    res.set_content(rs::wire::EncodeError(cut.why), kJson);
    return;
  }
  const char* why = res.status == 413   ? "the request is larger than this node accepts"
                    : res.status == 404 ? "no such endpoint (GET /v1/time, POST /v1/query, "
                                          "GET /v1/bundles, GET /v1/bundle/NAME)"
                    : res.status == 416 ? "the range is not within the file"
                                        : "the request was refused";
  res.set_content(
      rs::wire::EncodeError(std::string(why) + " (HTTP " + std::to_string(res.status) + ")"),
      kJson);
}

void Server::Query(const httplib::Request& req, httplib::Response& res) {
  guard_->RequestRead();
  struct Running {
    std::atomic<int>& n;
    ~Running() { --n; }
  } running{queries_running_};
  if (++queries_running_ > config_.options.max_queries) {
    res.set_header("Retry-After", "1");
    Fail(res, 503,
         "busy: " + std::to_string(config_.options.max_queries) +
             " queries are running on this node (its --max-queries); try again");
    return;
  }
  auto q = rs::wire::DecodeQueryRequest(req.body);
  if (!q.ok()) return Fail(res, 400, q.error().message());
  std::string source = q->bundle;
  std::string node = config_.node;
  rs::Result<rs::Db> db = rs::Error("");
  std::shared_ptr<rs::OpenedDb> keep;  // the decompressed bundle, while the query reads it
  if ((source.empty() || source == "live") && !config_.live_db.empty()) {
    source = "live";
    db = OpenQueryConnection(config_.live_db, node + " (the live recording)");
  } else {
    if (source.empty() || source == "live") {
      auto newest = store_.Newest();
      if (!newest.ok()) return Fail(res, 404, newest.error().message());
      source = *newest;
    }
    auto opened = store_.Open(source);
    if (!opened.ok()) return Fail(res, 404, opened.error().message());
    keep = *opened;
    node = keep->info().node;
    db = OpenQueryConnection(keep->sqlite_path(), source);
  }
  if (!db.ok()) return Fail(res, 500, db.error().message());
  auto body = RunWireQuery(*db, *q, node, source,
                           {config_.options.max_rows, config_.options.max_result_bytes,
                            config_.options.query_timeout_ns});
  if (!body.ok()) return Fail(res, 400, body.error().message());
  res.set_content(std::move(body).value(), kJson);
}

void Server::List(const httplib::Request& req, httplib::Response& res, bool summaries) {
  guard_->RequestRead();
  int64_t since = 0, until = 0;
  for (auto [key, dest] : {std::pair{"since", &since}, std::pair{"until", &until}}) {
    if (!req.has_param(key)) continue;
    auto t = rs::ParseTimeArg(req.get_param_value(key), key);
    if (!t.ok()) return Fail(res, 400, rs::EscapeText(t.error().message()));
    if (t->relative) {
      return Fail(res, 400, std::string(key) + ": expected epoch nanoseconds or ISO 8601 UTC");
    }
    *dest = t->ns;
  }
  auto listing = store_.List();
  if (!listing.ok()) return Fail(res, 500, listing.error().message());
  std::vector<rs::wire::BundleEntry> out;
  for (const auto& b : listing->bundles) {
    if (!rs::wire::Overlaps(b, since, until)) continue;
    if (!summaries) {
      out.push_back(b);
      continue;
    }
    auto summary = store_.Summary(b.name);
    if (!summary.ok()) return Fail(res, 500, summary.error().message());
    out.push_back(summary->entry);
  }
  res.set_content(rs::wire::EncodeBundleList(config_.node, out), kJson);
}

void Server::Send(const httplib::Request& req, httplib::Response& res, bool summary) {
  guard_->RequestRead();
  // cpp-httplib applies req.ranges to whatever reply this makes: an error's JSON must not be
  // cut to the range, and a range that ends past the file is the rest of the file (RFC 9110).
  auto& ranges = const_cast<httplib::Request&>(req).ranges;
  std::vector<std::pair<ssize_t, ssize_t>> asked(ranges.begin(), ranges.end());
  ranges.clear();
  auto found = summary ? store_.Summary(req.matches[1].str()) : store_.Find(req.matches[1].str());
  if (!found.ok()) return Fail(res, 404, found.error().message());
  const int fd = open(found->path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0) close(fd);
    return Fail(res, 404, found->entry.name + ": " + std::strerror(errno));
  }
  if (st.st_size != found->entry.bytes) {
    close(fd);
    return Fail(res, 409, found->entry.name + " changed since it was listed; list again");
  }
  if (!asked.empty()) {
    auto range = SatisfiableRange(asked, st.st_size);
    if (!range.ok()) {
      close(fd);
      res.set_header("Content-Range", "bytes */" + std::to_string(st.st_size));
      return Fail(res, 416, found->entry.name + ": " + range.error().message());
    }
    ranges = {*range};
  }
  res.set_header(rs::wire::kXxh64Header, found->entry.xxh64);
  res.set_header("Accept-Ranges", "bytes");
  res.set_content_provider(
      static_cast<size_t>(st.st_size), "application/octet-stream",
      [fd](size_t offset, size_t length, httplib::DataSink& sink) {
        std::vector<char> buf(std::min<size_t>(length, 256 << 10));
        const ssize_t n = pread(fd, buf.data(), buf.size(), static_cast<off_t>(offset));
        if (n <= 0) return false;
        return sink.write(buf.data(), static_cast<size_t>(n));
      },
      [fd](bool) { close(fd); });
}

}  // namespace rs::serve
