// librankscope-serve.so: rs::serve::Server behind the C interface of serve_module.h.
#include "recorder/serve/serve_module.h"

#include <cstdio>
#include <memory>

#include "recorder/serve/server.h"

struct rankscope_serve {
  std::unique_ptr<rs::serve::Server> server;
};

namespace {

const char* Text(const char* s) { return s ? s : ""; }

}  // namespace

extern "C" __attribute__((visibility("default"))) rankscope_serve* rankscope_serve_bind(
    const rankscope_serve_args* a, char* error, size_t error_size) {
  auto fail = [&](const std::string& why) -> rankscope_serve* {
    if (error_size > 0) std::snprintf(error, error_size, "%s", why.c_str());
    return nullptr;
  };
  if (a == nullptr || a->abi != RANKSCOPE_SERVE_ABI) {
    return fail(
        "librankscope-serve.so speaks another version of its interface than this "
        "rankscope-record: install both from the same release");
  }
  rs::serve::ServerConfig c;
  c.options.host = Text(a->host);
  c.options.port = a->port;
  c.options.tls = {Text(a->ca), Text(a->cert), Text(a->key)};
  c.options.token_file = Text(a->token_file);
  c.options.max_connections = a->max_connections;
  c.options.max_queries = a->max_queries;
  c.options.max_request_bytes = a->max_request_bytes;
  c.options.max_rows = a->max_rows;
  c.options.max_result_bytes = a->max_result_bytes;
  c.options.query_timeout_ns = a->query_timeout_ns;
  c.options.simulate_clock_offset_ns = a->simulate_clock_offset_ns;
  c.node = Text(a->node);
  c.bundle_dir = Text(a->bundle_dir);
  c.live_db = Text(a->live_db);
  if (a->log != nullptr) {
    auto log = a->log;
    void* ctx = a->log_ctx;
    c.log = [log, ctx](const std::string& line) { log(ctx, line.c_str()); };
  }
  auto s = rs::serve::Server::Bind(std::move(c));
  if (!s.ok()) return fail(s.error().message());
  return new rankscope_serve{std::move(s).value()};
}

extern "C" __attribute__((visibility("default"))) int rankscope_serve_port(rankscope_serve* s) {
  return s->server->port();
}

extern "C" __attribute__((visibility("default"))) void rankscope_serve_run(rankscope_serve* s) {
  s->server->Run();
}

extern "C" __attribute__((visibility("default"))) void rankscope_serve_stop(rankscope_serve* s) {
  if (s == nullptr) return;
  s->server->Stop();
  delete s;
}
