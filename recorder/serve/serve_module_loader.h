// rankscope-record --serve: the fleet server loaded from librankscope-serve.so (serve_module.h)
// only when asked for, so that a recorder that does not serve maps neither the server nor
// cpp-httplib nor OpenSSL. The options are checked before (serve_options.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "recorder/serve/serve_module.h"
#include "recorder/serve/serve_options.h"
#include "rscore/result.h"

namespace rs::serve {

// Where the module is looked for, in order: $RANKSCOPE_SERVE_MODULE, the installed one
// (LIBDIR/rankscope/librankscope-serve.so), serve/ beside the executable (a build tree).
std::vector<std::string> ServeModuleCandidates();

class LoadedServer {
 public:
  // Loads the module and binds the address (no thread yet; see Run). Errors name the module
  // looked for, or what the server refused (a certificate, the address).
  static rs::Result<std::unique_ptr<LoadedServer>> Bind(
      const ServeOptions& options, const std::string& node, const std::string& bundle_dir,
      const std::string& live_db, std::function<void(const std::string&)> log);
  ~LoadedServer();
  LoadedServer(const LoadedServer&) = delete;
  LoadedServer& operator=(const LoadedServer&) = delete;
  void Run();
  // Stops serving and joins the server's threads (once).
  void Stop();
  int port() const { return port_; }
  const std::string& module() const { return module_; }

 private:
  LoadedServer() = default;
  std::function<void(const std::string&)> log_;
  std::string module_;
  void* handle_ = nullptr;
  rankscope_serve* server_ = nullptr;
  rankscope_serve_run_fn run_ = nullptr;
  rankscope_serve_stop_fn stop_ = nullptr;
  int port_ = 0;
};

}  // namespace rs::serve
