#include "recorder/serve/serve_options.h"

#include <charconv>
#include <cstring>

#include "rscore/byte_size.h"
#include "rscore/duration.h"
#include "rscore/host_port.h"

namespace rs::serve {
namespace {

rs::Result<int64_t> PositiveInt(std::string_view v, int64_t max) {
  int64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n <= 0 || n > max) {
    return rs::Error("expected a whole number from 1 to " + std::to_string(max) + ", got '" +
                     std::string(v) + "'");
  }
  return n;
}

rs::Result<int64_t> Bytes(std::string_view v) {
  ASSIGN_OR_RETURN(uint64_t b, rs::ParseByteSize(v));
  if (b == 0 || b > (uint64_t{1} << 40)) return rs::Error("expected a size from 1 to 1T");
  return static_cast<int64_t>(b);
}

}  // namespace

rs::Result<void> ParseListen(std::string_view text, ServeOptions& o) {
  ASSIGN_OR_RETURN(rs::HostPort a, rs::ParseHostPort(text));
  o.host = a.host.empty() ? "0.0.0.0" : a.host;
  o.port = a.port ? a.port : kDefaultPort;
  return rs::Ok();
}

rs::Result<void> SetServeOption(std::string_view name, std::string_view value, ServeOptions& o) {
  auto wrap = [&](const rs::Error& e) { return e.Wrap(std::string(name)); };
  if (name == "ca") {
    o.tls.ca = value;
  } else if (name == "cert") {
    o.tls.cert = value;
  } else if (name == "key") {
    o.tls.key = value;
  } else if (name == "token-file") {
    o.token_file = value;
  } else if (name == "max-connections" || name == "max-queries") {
    auto n = PositiveInt(value, 1024);
    if (!n.ok()) return wrap(n.error());
    (name == "max-queries" ? o.max_queries : o.max_connections) = static_cast<int>(*n);
  } else if (name == "max-rows") {
    auto n = PositiveInt(value, int64_t{1} << 40);
    if (!n.ok()) return wrap(n.error());
    o.max_rows = *n;
  } else if (name == "max-request-bytes" || name == "max-result-bytes") {
    auto b = Bytes(value);
    if (!b.ok()) return wrap(b.error());
    (name == "max-request-bytes" ? o.max_request_bytes : o.max_result_bytes) = *b;
  } else if (name == "query-timeout") {
    auto d = rs::ParseDuration(value);
    if (!d.ok()) return wrap(d.error());
    o.query_timeout_ns = *d;
  } else if (name == "simulate-clock-offset") {
    int64_t ns = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), ns);
    if (ec != std::errc() || p != value.data() + value.size()) {
      return rs::Error(std::string(name) + ": expected nanoseconds, got '" + std::string(value) +
                       "'");
    }
    o.simulate_clock_offset_ns = ns;
  } else {
    return rs::Error("unknown server option '" + std::string(name) + "'");
  }
  return rs::Ok();
}

rs::Result<void> CheckServeOptions(const ServeOptions& o, std::string_view prefix) {
  const std::string p(prefix);
  if (o.tls.cert.empty() || o.tls.key.empty()) {
    return rs::Error("serving needs the node's certificate and key: " + p + "cert FILE " + p +
                     "key FILE (HTTPS only; see the man page's CERTIFICATES for making them)");
  }
  if (o.tls.ca.empty() && o.token_file.empty()) {
    return rs::Error("who may connect: " + p +
                     "ca FILE (clients with a certificate of that CA) or " + p +
                     "token-file FILE (clients that send that bearer token), or both");
  }
  return rs::Ok();
}

std::string ServeOptionsHelp(std::string_view prefix) {
  const std::string p(prefix);
  auto line = [&](const std::string& flag, const std::string& what) {
    std::string l = "      " + p + flag;
    l += l.size() < 30 ? std::string(30 - l.size(), ' ') : "\n" + std::string(30, ' ');
    return l + what + "\n";
  };
  return line("cert FILE", "the node's certificate (PEM; HTTPS only, TLS 1.3)") +
         line("key FILE", "its private key (PEM)") +
         line("ca FILE", "clients must present a certificate of this CA (mutual TLS)") +
         line("token-file FILE", "or: clients must send this bearer token (mode 0600)") +
         line("max-connections N", "connections served at once (default 8)") +
         line("max-queries N", "queries run at once, more get 503 (default 2)") +
         line("max-request-bytes N", "largest request body (default 64K)") +
         line("max-rows N", "rows a query returns at most (default 100000)") +
         line("max-result-bytes N", "largest query reply (default 16M)") +
         line("query-timeout D", "a query still running after D fails (default 30s)");
}

}  // namespace rs::serve
