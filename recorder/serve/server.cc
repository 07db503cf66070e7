#include "recorder/serve/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "recorder/serve/query_service.h"
#include "rscore/fleet_wire.h"
#include "rscore/time_arg.h"
#include "rscore/tls.h"

namespace serve {
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

std::string PeerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "?";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* a = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return std::string(host) + ":" + std::to_string(port);
}

// Text for a log line: control characters as spaces, at most `max` bytes.
std::string Printable(std::string_view s, size_t max = 200) {
  std::string out(s.substr(0, max));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '"') c = c == '"' ? '\'' : ' ';
  }
  return s.size() > max ? out + "..." : out;
}

// TLS alerts: the handshakes the server refused (a client without a certificate, one of another
// CA) and the ones clients refused, logged with the peer's address.
void OnTlsInfo(const SSL* ssl, int where, int ret) {
  if (!(where & SSL_CB_ALERT)) return;
  if (std::strcmp(SSL_alert_type_string(ret), "F") != 0) return;  // warnings: close_notify
  auto* log = static_cast<std::function<void(const std::string&)>*>(
      SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (log == nullptr || !*log) return;
  const std::string peer = PeerAddress(SSL_get_fd(ssl));
  const std::string desc = rs::tls::AlertText(ret);
  if (where & SSL_CB_WRITE) {
    (*log)("refused a TLS connection from " + peer + ": " + desc);
  } else {
    (*log)("the client at " + peer + " refused the TLS connection: " + desc);
  }
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
  thread_ = std::thread([this] { http_->listen_after_bind(); });
}

rs::Result<std::unique_ptr<Server>> Server::Bind(ServerConfig config) {
  RETURN_IF_ERROR(CheckServeOptions(config.options, "--"));
  std::unique_ptr<Server> s(new Server(std::move(config)));
  const ServeOptions& o = s->config_.options;
  if (!o.token_file.empty()) {
    ASSIGN_OR_RETURN(s->token_, rs::tls::ReadTokenFile(o.token_file));
  }
  rs::Result<void> tls = rs::Ok();
  auto* log = &s->config_.log;
  s->http_ = std::make_unique<httplib::SSLServer>([&](SSL_CTX& ctx) {
    tls = rs::tls::ConfigureServer(&ctx, o.tls, /*require_client_cert=*/!o.tls.ca.empty());
    SSL_CTX_set_app_data(&ctx, log);
    SSL_CTX_set_info_callback(&ctx, OnTlsInfo);
    return tls.ok();
  });
  if (!tls.ok()) return tls.error();
  if (!s->http_->is_valid()) return rs::Error("cannot set up TLS: " + rs::tls::TakeErrors());
  const int threads = o.max_connections;
  s->http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
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

void Server::Stop() {
  if (!http_) return;
  http_->stop();
  if (thread_.joinable()) thread_.join();
}

void Server::Route() {
  const ServeOptions& o = config_.options;
  http_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    ++requests_;
    if (token_.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string want = "Bearer " + token_;
    const std::string got = req.get_header_value("Authorization");
    if (got.size() != want.size() || CRYPTO_memcmp(got.data(), want.data(), want.size()) != 0) {
      res.set_header("WWW-Authenticate", "Bearer");
      Fail(res, 401, "this node needs a bearer token (rankscope-fleet --token-file)");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    if (!config_.log) return;
    std::string who = rs::tls::PeerSubject(req.ssl);
    if (who.empty()) who = token_.empty() ? "(no certificate)" : "(bearer token)";
    std::string line = req.remote_addr + ":" + std::to_string(req.remote_port) + " \"" +
                       Printable(who) + "\" " + req.method + " " + Printable(req.path) + " " +
                       std::to_string(res.status);
    if (req.path == "/v1/query") {
      auto q = rs::wire::DecodeQueryRequest(req.body);
      line += q.ok() ? " sql=\"" + Printable(q->sql) + "\"" : " (not a query request)";
    }
    if (res.status >= 400) line += " " + Printable(rs::wire::DecodeError(res.body), 160);
    config_.log(line);
  });

  http_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const char* why = res.status == 413   ? "the request is larger than this node accepts"
                      : res.status == 404 ? "no such endpoint (GET /v1/time, POST /v1/query, "
                                            "GET /v1/bundles, GET /v1/bundle/NAME)"
                      : res.status == 416 ? "the range is not within the file"
                                          : "the request was refused";
    res.set_content(
        rs::wire::EncodeError(std::string(why) + " (HTTP " + std::to_string(res.status) + ")"),
        kJson);
  });

  http_->Get("/v1/time", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        rs::wire::EncodeTime(config_.node, RealtimeNs() + config_.options.simulate_clock_offset_ns),
        kJson);
  });

  http_->Post("/v1/query", [this, &o](const httplib::Request& req, httplib::Response& res) {
    struct Running {
      std::atomic<int>& n;
      ~Running() { --n; }
    } running{queries_running_};
    if (++queries_running_ > o.max_queries) {
      res.set_header("Retry-After", "1");
      Fail(res, 503,
           "busy: " + std::to_string(o.max_queries) +
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
    auto body =
        RunWireQuery(*db, *q, node, source, {o.max_rows, o.max_result_bytes, o.query_timeout_ns});
    if (!body.ok()) return Fail(res, 400, body.error().message());
    res.set_content(std::move(body).value(), kJson);
  });

  http_->Get("/v1/bundles", [this](const httplib::Request& req, httplib::Response& res) {
    int64_t since = 0, until = 0;
    for (auto [key, dest] : {std::pair{"since", &since}, std::pair{"until", &until}}) {
      if (!req.has_param(key)) continue;
      auto t = rs::ParseTimeArg(req.get_param_value(key), key);
      if (!t.ok() || t->relative) {
        return Fail(res, 400, std::string(key) + ": expected epoch nanoseconds or ISO 8601 UTC");
      }
      *dest = t->ns;
    }
    auto listing = store_.List();
    if (!listing.ok()) return Fail(res, 500, listing.error().message());
    std::vector<rs::wire::BundleEntry> out;
    for (const auto& b : listing->bundles) {
      if (rs::wire::Overlaps(b, since, until)) out.push_back(b);
    }
    res.set_content(rs::wire::EncodeBundleList(config_.node, out), kJson);
  });

  http_->Get("/v1/bundle/(.+)", [this](const httplib::Request& req, httplib::Response& res) {
    auto found = store_.Find(req.matches[1].str());
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
  });
}

}  // namespace serve
