// A node's fleet server: HTTPS only (TLS 1.3), mutual TLS against the cluster's CA or a bearer
// token, read-only. Serves the node's clock, guarded queries (query_service.h) on a bundle or
// on the live recording, and the bundles themselves (bundle_store.h) for download with ranges
// and a checksum (one range per request; a range past the end is 416). Requests beyond the
// limits are refused (413 too large, 431 too many header fields, 411 a body without a length,
// 503 too many queries at once); what a connection may send, for how long, and how many may
// wait to authenticate is the ConnectionGuard's (connection_guard.h). Every request is logged
// with the client certificate's subject, or whether its bearer token was right. The HTTP and TLS
// are cpp-httplib's over OpenSSL. Runs on threads of its own: rankscope-serve's, or beside the
// recorder's event loop (rankscope-record --serve), whose database it only reads through
// connections of its own.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "recorder/serve/bundle_store.h"
#include "recorder/serve/connection_guard.h"
#include "recorder/serve/serve_options.h"
#include "rscore/result.h"

namespace httplib {
class SSLServer;
struct Request;
struct Response;
}  // namespace httplib

namespace rs::serve {

struct ServerConfig {
  ServeOptions options;
  std::string node;        // the node's name, as its recordings carry it
  std::string bundle_dir;  // bundles to list, download and query; empty: none
  std::string live_db;     // the live recording's database (WAL); empty: none
  // Where the request log and the server's notes go (one line each, without newline).
  std::function<void(const std::string&)> log;
};

class Server {
 public:
  // Loads the certificates and binds the address, without starting a thread yet (the
  // recorder may still have to change its mount namespace, which a process with threads
  // cannot). Errors name the file, option or address.
  static rs::Result<std::unique_ptr<Server>> Bind(ServerConfig config);
  // Starts serving on threads of its own (once).
  void Run();
  // Bind, then Run.
  static rs::Result<std::unique_ptr<Server>> Start(ServerConfig config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Stops accepting, finishes the requests being served and joins the threads.
  void Stop();
  int port() const { return port_; }
  // Requests answered so far (for tests and the final line).
  int64_t requests() const { return requests_.load(); }

 private:
  explicit Server(ServerConfig config);
  void Route();
  // The request's credentials and form, checked before any handler: false where it was refused
  // (the reply says why).
  bool Admit(const httplib::Request& req, httplib::Response& res);
  // One line per request: who, what, the status (and a query's SQL, an error's reason).
  void LogRequest(const httplib::Request& req, const httplib::Response& res);
  // An error reply without a body of its own gets one saying why.
  void ExplainError(const httplib::Request& req, httplib::Response& res);
  void Query(const httplib::Request& req, httplib::Response& res);
  // GET /v1/bundles, or /v1/summaries (`summaries`).
  void List(const httplib::Request& req, httplib::Response& res, bool summaries);
  // GET /v1/bundle/NAME, or /v1/summary/NAME (`summary`).
  void Send(const httplib::Request& req, httplib::Response& res, bool summary);
  // The request carries this node's bearer token (compared in constant time).
  bool TokenMatches(const httplib::Request& req) const;

  ServerConfig config_;
  std::string token_;
  std::unique_ptr<ConnectionGuard> guard_;  // outlives http_: its connections end first
  std::unique_ptr<httplib::SSLServer> http_;
  BundleStore store_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> queries_running_{0};
  std::atomic<int64_t> requests_{0};
};

}  // namespace rs::serve
