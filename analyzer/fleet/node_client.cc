#include "analyzer/fleet/node_client.h"

#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "rscore/duration.h"
#include "rscore/file_checksum.h"
#include "rscore/output.h"

namespace rs::fleet {
namespace {

// The fatal alerts the node sent: why it ended the handshake (a certificate it does not
// accept, none given).
void OnTlsInfo(const SSL* ssl, int where, int ret) {
  if (!(where & SSL_CB_ALERT) || !(where & SSL_CB_READ)) return;
  if (std::strcmp(SSL_alert_type_string(ret), "F") != 0) return;
  auto* alert = static_cast<std::string*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (alert != nullptr) *alert = rs::tls::AlertText(ret);
}

std::string Seconds(int64_t ns) { return rs::FormatDuration(ns); }

// The most of one node's query reply this workstation holds (a node's own --max-result-bytes
// is 16 MiB by default).
constexpr size_t kMaxReplyBytes = size_t{256} << 20;

// Why a plain TCP connection to host:port fails, in words (the HTTP library says only that it
// did): at most `timeout_ms`.
std::string WhyNoConnection(const std::string& host, int port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    return std::string("cannot resolve ") + host + ": " + gai_strerror(rc);
  }
  std::string why = "no answer to the connection within " + std::to_string(timeout_ms) +
                    " ms: the node is down or unreachable";
  const int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd >= 0) {
    int err = connect(fd, res->ai_addr, res->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      err = poll(&p, 1, timeout_ms) == 1 ? -1 : ETIMEDOUT;
      if (err == -1) {
        socklen_t len = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      why = "the TCP connection works now but failed before (the node is restarting?)";
    } else if (err == ECONNREFUSED) {
      why = "connection refused: nothing serves on port " + std::to_string(port);
    } else if (err != ETIMEDOUT) {
      why = std::string(std::strerror(err)) + ": the node is down or unreachable";
    }
    close(fd);
  }
  freeaddrinfo(res);
  return why;
}

}  // namespace

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t RealtimeNowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

rs::Result<void> CheckClientAuth(const ClientAuth& auth) {
  if (auth.tls.ca.empty()) {
    return rs::Error("--ca FILE is required: the CA the nodes' certificates are signed by");
  }
  if (auth.tls.cert.empty() != auth.tls.key.empty()) {
    return rs::Error("--cert and --key go together (this workstation's certificate and key)");
  }
  if (auth.tls.cert.empty() && auth.token.empty()) {
    return rs::Error(
        "give this workstation's --cert FILE --key FILE (mutual TLS) or "
        "--token-file FILE (bearer token)");
  }
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  if (!ctx) return rs::Error("cannot set up TLS: " + rs::tls::TakeErrors());
  return rs::tls::ConfigureClient(ctx.get(), auth.tls);
}

NodeClient::NodeClient(NodeAddress node, const ClientAuth& auth, int64_t timeout_ns,
                       bool per_request)
    : node_(std::move(node)),
      auth_(auth),
      timeout_ns_(timeout_ns),
      per_request_(per_request),
      deadline_ns_(SteadyNowNs() + timeout_ns) {
  http_ = std::make_unique<httplib::SSLClient>(node_.host, node_.port);
  SSL_CTX* ctx = http_->ssl_context();
  if (ctx == nullptr) {
    setup_ = rs::Error("cannot set up TLS: " + rs::tls::TakeErrors());
    return;
  }
  setup_ = rs::tls::ConfigureClient(ctx, auth_.tls);
  SSL_CTX_set_app_data(ctx, &alert_);
  SSL_CTX_set_info_callback(ctx, OnTlsInfo);
  // Only --ca: without a path httplib would also trust the system's CAs.
  http_->set_ca_cert_path(auth_.tls.ca);
  http_->enable_server_certificate_verification(true);
  http_->set_keep_alive(true);
  http_->set_tcp_nodelay(true);  // the clock's round trips without Nagle's delay
  if (!auth_.token.empty()) http_->set_bearer_token_auth(auth_.token);
}

NodeClient::~NodeClient() = default;

int64_t NodeClient::LeftNs() const {
  return per_request_ ? timeout_ns_ : deadline_ns_ - SteadyNowNs();
}

rs::Result<void> NodeClient::Prepare() {
  RETURN_IF_ERROR(setup_);
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    if (stopped_) return rs::Error("no answer within " + Seconds(timeout_ns_) + " (--timeout)");
  }
  const int64_t left = LeftNs();
  if (left <= 0) return rs::Error("no answer within " + Seconds(timeout_ns_) + " (--timeout)");
  const time_t sec = static_cast<time_t>(left / 1'000'000'000);
  const time_t usec = static_cast<time_t>(left % 1'000'000'000 / 1000);
  http_->set_connection_timeout(sec, usec);
  http_->set_read_timeout(sec, usec);
  http_->set_write_timeout(sec, usec);
  alert_.clear();
  return rs::Ok();
}

rs::Error NodeClient::Failure(int error, const std::string& doing) const {
  const auto e = static_cast<httplib::Error>(error);
  bool stopped;
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopped = stopped_;
  }
  // cpp-httplib (0.11) waits with poll(), its timeout in whole milliseconds (the usec part
  // divided by 1000): a request given the time left can fail just before the deadline as
  // measured here. Seen in a full test run: a stalled node's handshake reported as "TLS
  // handshake failed: shutdown while in init" 3.00 s into a 3 s --timeout.
  constexpr int64_t kTimerSlackNs = 10'000'000;
  const bool late = stopped || LeftNs() <= kTimerSlackNs;
  std::string why;
  switch (e) {
    case httplib::Error::Connection:
    case httplib::Error::ConnectionTimeout:
      why = late ? "no connection within " + Seconds(timeout_ns_) +
                       " (--timeout): the node is down or unreachable"
                 : "cannot connect: " + WhyNoConnection(node_.host, node_.port,
                                                        static_cast<int>(std::clamp<int64_t>(
                                                            LeftNs() / 1'000'000, 1, 1000)));
      break;
    case httplib::Error::SSLConnection:
      if (!alert_.empty()) {
        why = "TLS: the node refused the handshake (" + alert_ +
              "): is this workstation's --cert signed by the nodes' CA?";
      } else if (late) {
        (void)rs::tls::TakeErrors();
        why = "no answer within " + Seconds(timeout_ns_) +
              " (--timeout): the node is stalled or too slow (the TLS handshake did not finish)";
      } else {
        why = "TLS handshake failed: " + rs::tls::TakeErrors("no TLS answer");
      }
      break;
    case httplib::Error::SSLServerVerification: {
      const long vr = http_->get_openssl_verify_result();
      why = vr != X509_V_OK
                ? "TLS: the node's certificate is not trusted (" + rs::tls::VerifyResultText(vr) +
                      "): it is not signed by --ca " + auth_.tls.ca
                : "TLS: the node's certificate does not name " + node_.host;
      break;
    }
    case httplib::Error::SSLLoadingCerts:
      why = "TLS: cannot load --ca " + auth_.tls.ca;
      break;
    case httplib::Error::Read:
    case httplib::Error::Write:
    case httplib::Error::Canceled:
      if (!alert_.empty()) {
        why = "TLS: the node refused this workstation (" + alert_ +
              "): is --cert signed by the nodes' CA?";
      } else if (late) {
        why = "no answer within " + Seconds(timeout_ns_) +
              " (--timeout): the node is stalled or too slow";
      } else {
        why = "the connection broke while " +
              std::string(e == httplib::Error::Write ? "sending" : "reading");
      }
      break;
    default:
      why = httplib::to_string(e);
  }
  return rs::Error(doing + ": " + why);
}

rs::Error NodeClient::HttpError(int status, const std::string& body,
                                const std::string& doing) const {
  std::string msg = rs::wire::DecodeError(body);
  if (status == 401) msg = "the node wants a bearer token it was not given: " + msg;
  return rs::Error(doing + ": HTTP " + std::to_string(status) + ": " + msg);
}

rs::Result<rs::WireClock> NodeClient::MeasureClock(int exchanges) {
  std::vector<rs::ClockExchange> ex;
  for (int i = 0; i < exchanges; ++i) {
    RETURN_IF_ERROR(Prepare());
    const int64_t t0 = RealtimeNowNs();
    auto res = http_->Get("/v1/time");
    const int64_t t3 = RealtimeNowNs();
    if (!res) return Failure(static_cast<int>(res.error()), "clock");
    if (res->status != 200) return HttpError(res->status, res->body, "clock");
    auto t = rs::wire::DecodeTime(res->body);
    if (!t.ok()) return t.error().Wrap("clock");
    answered_name_ = t->node;
    ex.push_back({t0, t->time_ns, t3});
  }
  auto c = rs::EstimateWireClock(ex);
  if (!c) return rs::Error("clock: this workstation's clock went back during the exchanges");
  c->node = answered_name_;
  c->address = node_.address();
  return *c;
}

rs::Result<rs::wire::QueryReply> NodeClient::Query(rs::wire::QueryRequest req) {
  RETURN_IF_ERROR(Prepare());
  // The node stops the query itself a little before this client would give up on it.
  const int64_t left_ms = LeftNs() / 1'000'000;
  req.timeout_ms = std::max<int64_t>(1, std::min(req.timeout_ms, left_ms - left_ms / 10));
  // The reply is held in memory: at most kMaxReplyBytes of it, whatever a node sends.
  httplib::Request post;
  post.method = "POST";
  post.path = "/v1/query";
  post.body = rs::wire::EncodeQueryRequest(req);
  post.set_header("Content-Type", "application/json");
  std::string body;
  bool too_big = false;
  post.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) {
    if (body.size() + len > kMaxReplyBytes) {
      too_big = true;
      return false;
    }
    body.append(data, len);
    return true;
  };
  auto res = http_->send(post);
  if (too_big) {
    return rs::Error("query: the reply is larger than " + std::to_string(kMaxReplyBytes >> 20) +
                     " MiB, more than this workstation takes from a node");
  }
  if (!res) return Failure(static_cast<int>(res.error()), "query");
  if (res->status != 200) return HttpError(res->status, body, "query");
  auto reply = rs::wire::DecodeQueryReply(body);
  if (!reply.ok()) return reply.error().Wrap("query");
  answered_name_ = reply->node;
  return reply;
}

rs::Result<rs::wire::BundleList> NodeClient::ListBundles(int64_t since_ns, int64_t until_ns,
                                                         bool summaries) {
  RETURN_IF_ERROR(Prepare());
  std::string path = summaries ? "/v1/summaries" : "/v1/bundles";
  std::string sep = "?";
  if (since_ns) path += sep + "since=" + std::to_string(since_ns), sep = "&";
  if (until_ns) path += sep + "until=" + std::to_string(until_ns);
  auto res = http_->Get(path);
  if (!res) return Failure(static_cast<int>(res.error()), "bundle list");
  if (res->status != 200) return HttpError(res->status, res->body, "bundle list");
  auto list = rs::wire::DecodeBundleList(res->body);
  if (!list.ok()) return list.error();
  answered_name_ = list->node;
  return list;
}

rs::Result<NodeClient::Download> NodeClient::Fetch(const rs::wire::BundleEntry& entry,
                                                   const std::string& dest, bool summary) {
  Download d;
  d.bytes = entry.bytes;
  const std::string what = (summary ? "summary of " : "bundle ") + entry.name;
  if (access(dest.c_str(), F_OK) == 0) {
    auto sum = rs::FileXxh64(dest);
    if (sum.ok() && *sum == entry.xxh64) {
      d.already_there = true;
      return d;
    }
    return rs::Error(what + ": " + dest + " exists with other contents; move it away first");
  }
  const std::string part = dest + ".part";
  struct stat st {};
  if (stat(part.c_str(), &st) == 0 && st.st_size <= entry.bytes) d.resumed_from = st.st_size;
  const int fd = open(part.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return rs::Error(part + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  if (ftruncate(fd, d.resumed_from) != 0 || lseek(fd, d.resumed_from, SEEK_SET) < 0) {
    return rs::Error(part + ": " + std::strerror(errno));
  }
  if (d.resumed_from < entry.bytes) {
    RETURN_IF_ERROR(Prepare());
    httplib::Headers headers;
    if (d.resumed_from > 0) {
      headers.emplace("Range", "bytes=" + std::to_string(d.resumed_from) + "-");
    }
    std::string write_error;
    int status = 0;
    std::string error_body;
    const std::string url = (summary ? "/v1/summary/" : "/v1/bundle/") + entry.name;
    auto res = http_->Get(
        url, headers,
        [&](const httplib::Response& r) {
          status = r.status;
          if (r.status == 200 && d.resumed_from > 0) {  // the node sent all of it
            d.resumed_from = 0;
            if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) < 0) {
              write_error = std::strerror(errno);
              return false;
            }
          }
          if (r.status == 200 || r.status == 206) {
            const std::string sum = r.get_header_value(rs::wire::kXxh64Header);
            if (sum != entry.xxh64) {
              write_error = "the node's checksum changed since it listed it";
              return false;
            }
          }
          return true;
        },
        [&](const char* data, size_t len) {
          if (status != 200 && status != 206) {
            if (error_body.size() < 4096) error_body.append(data, len);
            return true;
          }
          auto w = rs::WriteAllTo(fd, data, len, part);
          if (!w.ok()) {
            write_error = w.error().message();
            return false;
          }
          d.transferred += static_cast<int64_t>(len);
          return true;
        });
    if (!write_error.empty()) return rs::Error(what + ": " + write_error);
    if (!res) return Failure(static_cast<int>(res.error()), what);
    if (status != 200 && status != 206) return HttpError(status, error_body, what);
  }
  if (fsync(fd) != 0) return rs::Error(part + ": " + std::strerror(errno));
  auto sum = rs::FileXxh64(part);
  if (!sum.ok()) return sum.error();
  if (*sum != entry.xxh64) {
    unlink(part.c_str());
    return rs::Error(what + ": checksum mismatch (XXH64 " + *sum + ", the node says " +
                     entry.xxh64 + "); the partial file was removed, run collect again");
  }
  if (rename(part.c_str(), dest.c_str()) != 0) {
    return rs::Error(dest + ": " + std::strerror(errno));
  }
  return d;
}

void NodeClient::Stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  stopped_ = true;
  if (http_) http_->stop();
}

}  // namespace rs::fleet
