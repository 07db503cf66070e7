#include "recorder/serve/serve_module_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#ifndef RANKSCOPE_SERVE_MODULE_DIR
#define RANKSCOPE_SERVE_MODULE_DIR "/usr/local/lib/rankscope"
#endif

namespace rs::serve {

std::vector<std::string> ServeModuleCandidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("RANKSCOPE_SERVE_MODULE"); env && *env) out.push_back(env);
  out.push_back(std::string(RANKSCOPE_SERVE_MODULE_DIR) + "/" + RANKSCOPE_SERVE_MODULE_NAME);
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir.resize(dir.rfind('/'));
    out.push_back(dir + "/serve/" + RANKSCOPE_SERVE_MODULE_NAME);
  }
  return out;
}

rs::Result<std::unique_ptr<LoadedServer>> LoadedServer::Bind(
    const ServeOptions& o, const std::string& node, const std::string& bundle_dir,
    const std::string& live_db, std::function<void(const std::string&)> log) {
  std::unique_ptr<LoadedServer> s(new LoadedServer());
  s->log_ = std::move(log);
  std::string tried;
  for (const std::string& path : ServeModuleCandidates()) {
    if (access(path.c_str(), F_OK) != 0) {
      tried += (tried.empty() ? "" : ", ") + path;
      continue;
    }
    s->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (s->handle_ == nullptr) return rs::Error(path + ": cannot load it: " + dlerror());
    s->module_ = path;
    break;
  }
  if (s->handle_ == nullptr) {
    return rs::Error("the server module " + std::string(RANKSCOPE_SERVE_MODULE_NAME) +
                     " is not installed (looked for " + tried +
                     "; $RANKSCOPE_SERVE_MODULE names another)");
  }
  auto bind = reinterpret_cast<rankscope_serve_bind_fn>(dlsym(s->handle_, "rankscope_serve_bind"));
  auto port = reinterpret_cast<rankscope_serve_port_fn>(dlsym(s->handle_, "rankscope_serve_port"));
  s->run_ = reinterpret_cast<rankscope_serve_run_fn>(dlsym(s->handle_, "rankscope_serve_run"));
  s->stop_ = reinterpret_cast<rankscope_serve_stop_fn>(dlsym(s->handle_, "rankscope_serve_stop"));
  if (!bind || !port || !s->run_ || !s->stop_) {
    return rs::Error(s->module_ + ": not rankscope's server module (a function is missing)");
  }
  rankscope_serve_args a{};
  a.abi = RANKSCOPE_SERVE_ABI;
  a.host = o.host.c_str();
  a.port = o.port;
  a.ca = o.tls.ca.c_str();
  a.cert = o.tls.cert.c_str();
  a.key = o.tls.key.c_str();
  a.token_file = o.token_file.c_str();
  a.max_connections = o.max_connections;
  a.max_queries = o.max_queries;
  a.max_request_bytes = o.max_request_bytes;
  a.max_rows = o.max_rows;
  a.max_result_bytes = o.max_result_bytes;
  a.query_timeout_ns = o.query_timeout_ns;
  a.simulate_clock_offset_ns = o.simulate_clock_offset_ns;
  a.node = node.c_str();
  a.bundle_dir = bundle_dir.c_str();
  a.live_db = live_db.c_str();
  a.log = [](void* ctx, const char* line) {
    auto* self = static_cast<LoadedServer*>(ctx);
    if (self->log_) self->log_(line);
  };
  a.log_ctx = s.get();
  char error[1024] = {};
  s->server_ = bind(&a, error, sizeof error);
  if (s->server_ == nullptr) return rs::Error(error);
  s->port_ = port(s->server_);
  return s;
}

void LoadedServer::Run() {
  if (server_ != nullptr) run_(server_);
}

void LoadedServer::Stop() {
  if (server_ == nullptr) return;
  stop_(server_);
  server_ = nullptr;
}

// The module stays loaded: nothing of it runs once stopped, and unloading code that created
// threads (OpenSSL's, cpp-httplib's) gains nothing at the end of a recording.
LoadedServer::~LoadedServer() { Stop(); }

}  // namespace rs::serve
