// What a node's fleet server does and what it allows: the options rankscope-serve takes as
// --NAME and rankscope-record as --serve-NAME (man rankscope-serve, OPTIONS).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "rscore/result.h"
#include "rscore/tls.h"

namespace rs::serve {

inline constexpr int kDefaultPort = 7443;

struct ServeOptions {
  std::string host;  // the address to listen on ("0.0.0.0", "10.0.0.3", "::")
  int port = kDefaultPort;
  rs::tls::Files tls;       // ca (the clients' CA), cert, key (the node's)
  std::string token_file;   // bearer-token mode: the token clients must send
  int max_connections = 8;  // connections served at once (threads)
  int max_queries = 2;      // queries run at once; more are answered 503
  int64_t max_request_bytes = 64 << 10;
  int64_t max_rows = 100000;            // rows a query returns at most
  int64_t max_result_bytes = 16 << 20;  // a query's reply at most
  int64_t query_timeout_ns = int64_t{30} * 1'000'000'000;
  // Testing only: the clock the node reports (/v1/time) is shifted by this.
  int64_t simulate_clock_offset_ns = 0;
};

// "10.0.0.3:7443", "[::1]:7443", ":7443" (every address), "10.0.0.3" (the default port).
rs::Result<void> ParseListen(std::string_view text, ServeOptions& o);

// One option by its name without prefix ("ca", "cert", "key", "token-file",
// "max-connections", "max-queries", "max-request-bytes", "max-rows", "max-result-bytes",
// "query-timeout", "simulate-clock-offset"). Unknown names are an error.
rs::Result<void> SetServeOption(std::string_view name, std::string_view value, ServeOptions& o);

// After all options: a certificate and key; a CA (mutual TLS) or a token file or both. `prefix`
// is how the flags are spelled in errors ("--" or "--serve-").
rs::Result<void> CheckServeOptions(const ServeOptions& o, std::string_view prefix);

// The options' lines for --help, with `prefix` ("--" or "--serve-").
std::string ServeOptionsHelp(std::string_view prefix);

}  // namespace rs::serve
