// What a client of the node server may do before and while it is served, enforced below
// cpp-httplib. Debian's cpp-httplib 0.11 is a compiled library (its CPPHTTPLIB_* limits are
// fixed in it): it reads a header line whole whatever its length and keeps any number of
// them (150,000 headers of 8 KB ended the server with std::bad_alloc), reads a chunked body
// whole whatever --max-request-bytes says, and waits on a client for as long as it sends a byte
// within each read timeout. So the guard watches every TLS connection as OpenSSL reads it:
//  - bytes: a request (its TLS records, headers and body) may not pass kMaxHeaderBytes +
//    the body limit + kTlsAllowance; past that its reading stops and it gets 413. What
//    one connection makes the server hold while reading is bounded by that, not by the client.
//  - time: a connection must authenticate (the TLS handshake and a request with its
//    certificate or token) within auth_timeout of its start, and every request must arrive
//    whole within request_timeout of its first byte; else closed, logged as 408 (a byte every
//    3 s holds a thread for no longer than that).
//  - places: at most max_unauthenticated connections wait to authenticate at once; one more
//    closes the oldest of them, so clients without a certificate or token never hold the
//    threads that authenticated clients are served on.
// Every connection closed by the guard is logged with its address and why.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace rs::serve {

// A request's line and header fields together at most (a client of the fleet sends a few
// hundred bytes), and at most this many header fields.
inline constexpr int64_t kMaxHeaderBytes = 32 << 10;
inline constexpr int kMaxHeaderFields = 100;
// TLS records' framing and the handshake (a client's certificate chain) counted beside a
// request's bytes.
inline constexpr int64_t kTlsAllowance = 64 << 10;

struct ConnectionLimits {
  int max_unauthenticated = 8;
  int64_t max_body_bytes = 64 << 10;  // --max-request-bytes
  std::chrono::milliseconds auth_timeout{10'000};
  std::chrono::milliseconds request_timeout{10'000};
};

class ConnectionGuard {
 public:
  ConnectionGuard(ConnectionLimits limits, std::function<void(const std::string&)> log);
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  // Watches every connection of `ctx` (its message and info callbacks; the info callback also
  // logs the TLS alerts: refused handshakes with the peer's address). Once, before serving.
  void Install(SSL_CTX* ctx);

  // The calls below concern the connection the calling thread serves (cpp-httplib serves one
  // connection on one thread from its handshake to its close); outside one they do nothing.

  // The request came with the credentials this node wants: the connection no longer counts
  // among those waiting to authenticate.
  void Authenticated();
  // The request has been read whole (its handler runs): its read deadline is over.
  void RequestRead();
  // Its response has been written: the next request counts from zero.
  void ResponseSent();
  // No further request is read on this connection (the response being made is still
  // written): after a refusal whose body was not read.
  void EndAfterResponse();

  struct Cut {
    int status = 0;   // the HTTP status for the reply, 0: the guard did not close it
    std::string why;  // for the reply and the log
  };
  // What the guard did to this thread's connection.
  Cut CutOfThisThread() const;
  // This thread's client as "address:port" ("" outside a connection).
  std::string PeerOfThisThread() const;

  // Connections waiting to authenticate now (for tests).
  int Unauthenticated() const;

  struct Conn;  // one connection (connection_guard.cc)

 private:
  friend struct ConnectionGuardCallbacks;

  void Begin(SSL* ssl);
  void Received(SSL* ssl, int64_t bytes);
  void Forget(Conn* c);
  // Stops `c`'s reading and notes why (with mu_ held); returns the log line.
  std::string CutLocked(Conn* c, int status, const std::string& why);
  void Watch();
  void LogAlert(const SSL* ssl, int where, int ret);

  const ConnectionLimits limits_;
  const std::function<void(const std::string&)> log_;
  mutable std::mutex mu_;
  std::vector<Conn*> conns_;  // every connection between its handshake's start and its end
  uint64_t started_ = 0;      // connections begun, for their order
  bool stop_ = false;
  std::condition_variable wake_;
  std::thread watchdog_;
};

}  // namespace rs::serve
