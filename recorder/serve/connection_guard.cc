#include "recorder/serve/connection_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "rscore/tls.h"

namespace rs::serve {

using Clock = std::chrono::steady_clock;

struct ConnectionGuard::Conn {
  ConnectionGuard* guard = nullptr;
  SSL* ssl = nullptr;  // touched only on the connection's own thread
  int fd = -1;
  std::string peer;
  uint64_t order = 0;
  Clock::time_point auth_deadline;  // until it authenticates
  bool authenticated = false;
  bool reading = false;  // a request's bytes are arriving (since its first record)
  Clock::time_point read_deadline;
  int64_t bytes = 0;  // TLS record bytes received since the last response
  Cut cut;
};

namespace {

// The connection the calling thread serves (set at its handshake's start, cleared when OpenSSL
// frees it, which cpp-httplib does before it closes the socket).
thread_local ConnectionGuard::Conn* t_conn = nullptr;

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

std::string Seconds(std::chrono::milliseconds d) {
  const int64_t ms = d.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

std::string KiB(int64_t bytes) { return std::to_string(bytes >> 10) + " KiB"; }

int ConnIndex();

// No further read on `ssl` returns data: OpenSSL's SSL_read answers an end of file from now on
// (as after the client's close_notify), while writing still works. A socket's shutdown(SHUT_RD)
// alone does not stop Linux from delivering what is queued or still arriving. Only on the
// connection's own thread.
void StopReading(SSL* ssl) { SSL_set_shutdown(ssl, SSL_get_shutdown(ssl) | SSL_RECEIVED_SHUTDOWN); }

}  // namespace

// OpenSSL's callbacks (C functions) into the guard.
struct ConnectionGuardCallbacks {
  static void Free(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
    auto* c = static_cast<ConnectionGuard::Conn*>(ptr);
    if (c == nullptr) return;
    c->guard->Forget(c);
    if (t_conn == c) t_conn = nullptr;
    delete c;
  }

  static void Info(const SSL* ssl, int where, int ret) {
    auto* g = static_cast<ConnectionGuard*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
    if (g == nullptr) return;
    if (where & SSL_CB_HANDSHAKE_START) g->Begin(const_cast<SSL*>(ssl));
    if (where & SSL_CB_ALERT) g->LogAlert(ssl, where, ret);
  }

  // Every TLS record read: its header (5 bytes: type, version, length) comes first.
  static void Message(int write_p, int, int content_type, const void* buf, size_t len, SSL* ssl,
                      void* arg) {
    if (write_p != 0 || content_type != SSL3_RT_HEADER || len < 5) return;
    const auto* h = static_cast<const unsigned char*>(buf);
    static_cast<ConnectionGuard*>(arg)->Received(ssl, 5 + ((int64_t{h[3]} << 8) | h[4]));
  }
};

namespace {

int ConnIndex() {
  static const int index =
      SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, ConnectionGuardCallbacks::Free);
  return index;
}

}  // namespace

ConnectionGuard::ConnectionGuard(ConnectionLimits limits,
                                 std::function<void(const std::string&)> log)
    : limits_(limits), log_(std::move(log)) {
  watchdog_ = std::thread([this] { Watch(); });
}

ConnectionGuard::~ConnectionGuard() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  watchdog_.join();
}

void ConnectionGuard::Install(SSL_CTX* ctx) {
  (void)ConnIndex();
  SSL_CTX_set_app_data(ctx, this);
  SSL_CTX_set_info_callback(ctx, ConnectionGuardCallbacks::Info);
  SSL_CTX_set_msg_callback(ctx, ConnectionGuardCallbacks::Message);
  SSL_CTX_set_msg_callback_arg(ctx, this);
}

void ConnectionGuard::Begin(SSL* ssl) {
  if (SSL_get_ex_data(ssl, ConnIndex()) != nullptr) return;  // a later handshake message
  auto* c = new Conn;
  c->guard = this;
  c->ssl = ssl;
  c->fd = SSL_get_fd(ssl);
  c->peer = PeerAddress(c->fd);
  c->auth_deadline = Clock::now() + limits_.auth_timeout;
  SSL_set_ex_data(ssl, ConnIndex(), c);
  t_conn = c;
  std::vector<std::string> lines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    c->order = ++started_;
    conns_.push_back(c);
    // Places for those still to authenticate: when they are all taken, the oldest goes (a
    // slow client has had the longest to finish; a client that authenticates does so in
    // milliseconds).
    for (;;) {
      std::vector<Conn*> waiting;
      for (Conn* o : conns_) {
        if (!o->authenticated && o->cut.status == 0) waiting.push_back(o);
      }
      if (static_cast<int>(waiting.size()) <= limits_.max_unauthenticated) break;
      Conn* oldest = *std::min_element(waiting.begin(), waiting.end(),
                                       [](Conn* a, Conn* b) { return a->order < b->order; });
      lines.push_back(CutLocked(oldest, 503,
                                std::to_string(limits_.max_unauthenticated) +
                                    " connections were waiting to authenticate (--max-"
                                    "connections), this one the longest"));
    }
  }
  for (const std::string& l : lines) log_(l);
}

void ConnectionGuard::Received(SSL* ssl, int64_t bytes) {
  auto* c = static_cast<Conn*>(SSL_get_ex_data(ssl, ConnIndex()));
  if (c == nullptr) return;
  std::string line;
  bool stop = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!c->reading) {
      c->reading = true;
      c->read_deadline = Clock::now() + limits_.request_timeout;
    }
    c->bytes += bytes;
    const int64_t allowed = kMaxHeaderBytes + limits_.max_body_bytes + kTlsAllowance;
    if (c->bytes > allowed && c->cut.status == 0) {
      line = CutLocked(c, 413,
                       "the request passed " + KiB(allowed) + " (headers at most " +
                           KiB(kMaxHeaderBytes) + ", a body at most " +
                           std::to_string(limits_.max_body_bytes) + " bytes: --max-request-bytes)");
    }
    stop = c->cut.status != 0;  // this time, or earlier by the watchdog
  }
  if (stop) StopReading(ssl);
  if (!line.empty()) log_(line);
}

std::string ConnectionGuard::CutLocked(Conn* c, int status, const std::string& why) {
  c->cut = {status, why};
  // On the connection's own thread its reading stops at once (Received), and the reply that
  // says why still goes out. From another thread (the watchdog, a newer connection) the
  // socket's reading side is shut, which ends the read its thread is blocked in (cpp-httplib
  // then takes the connection for closed and writes no reply).
  if (c != t_conn) shutdown(c->fd, SHUT_RD);
  return "closed the connection from " + c->peer + ": " + why;
}

void ConnectionGuard::Forget(Conn* c) {
  std::lock_guard<std::mutex> lock(mu_);
  conns_.erase(std::remove(conns_.begin(), conns_.end(), c), conns_.end());
}

void ConnectionGuard::Watch() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::milliseconds(200));
    const auto now = Clock::now();
    std::vector<std::string> lines;
    for (Conn* c : conns_) {
      if (c->cut.status != 0) continue;
      if (!c->authenticated && now >= c->auth_deadline) {
        lines.push_back(CutLocked(c, 408,
                                  "it did not authenticate within " +
                                      Seconds(limits_.auth_timeout) +
                                      " (the TLS handshake and a request with its certificate "
                                      "or token)"));
      } else if (c->reading && now >= c->read_deadline) {
        lines.push_back(CutLocked(
            c, 408, "its request did not arrive whole within " + Seconds(limits_.request_timeout)));
      }
    }
    if (lines.empty()) continue;
    lock.unlock();
    for (const std::string& l : lines) log_(l);
    lock.lock();
  }
}

void ConnectionGuard::LogAlert(const SSL* ssl, int where, int ret) {
  if (std::strcmp(SSL_alert_type_string(ret), "F") != 0) return;  // warnings: close_notify
  if (!log_) return;
  // The address noted at the handshake's start: by the time of an alert the socket may be
  // gone.
  const auto* c = static_cast<const Conn*>(SSL_get_ex_data(ssl, ConnIndex()));
  const std::string peer = c != nullptr ? c->peer : PeerAddress(SSL_get_fd(ssl));
  const std::string desc = rs::tls::AlertText(ret);
  if (where & SSL_CB_WRITE) {
    log_("refused a TLS connection from " + peer + ": " + desc);
  } else {
    log_("the client at " + peer + " refused the TLS connection: " + desc);
  }
}

void ConnectionGuard::Authenticated() {
  if (t_conn == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  t_conn->authenticated = true;
}

void ConnectionGuard::RequestRead() {
  if (t_conn == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  t_conn->reading = false;
}

void ConnectionGuard::ResponseSent() {
  if (t_conn == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  t_conn->reading = false;
  t_conn->bytes = 0;
}

void ConnectionGuard::EndAfterResponse() {
  if (t_conn != nullptr) StopReading(t_conn->ssl);
}

ConnectionGuard::Cut ConnectionGuard::CutOfThisThread() const {
  if (t_conn == nullptr) return {};
  std::lock_guard<std::mutex> lock(mu_);
  return t_conn->cut;
}

std::string ConnectionGuard::PeerOfThisThread() const {
  return t_conn == nullptr ? "" : t_conn->peer;
}

int ConnectionGuard::Unauthenticated() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(conns_.begin(), conns_.end(), [](const Conn* c) {
    return !c->authenticated && c->cut.status == 0;
  }));
}

}  // namespace rs::serve
