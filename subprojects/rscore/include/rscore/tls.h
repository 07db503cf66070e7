// TLS for the fleet (rankscope-serve, rankscope-record --serve, rankscope-fleet): OpenSSL
// contexts set up one way for both ends. TLS 1.3 only; certificates and keys from PEM files;
// the peer's certificate must chain to the given CA (the cluster's). The HTTP on top is
// cpp-httplib's (recorder/serve/, analyzer/fleet/). Linked only by the tools that serve or
// query over the network (library rscore_net), never by the recorder core.
#pragma once

#include <string>

#include "rscore/result.h"

// OpenSSL's types, declared as <openssl/ssl.h> does: the files below (a plain struct) are also
// what the recorder checks its --serve options into, without OpenSSL's headers or library.
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace rs::tls {

struct Files {
  std::string ca;    // PEM: the certificate(s) a peer's certificate must chain to
  std::string cert;  // PEM: own certificate (chain), leaf first
  std::string key;   // PEM: own private key, unencrypted
};

// The server side: TLS 1.3 only, `files.cert` / `files.key` (checked to match). With
// `require_client_cert`, a client must present a certificate chaining to `files.ca` (mutual
// TLS) or the handshake fails; without it no client certificate is asked for (bearer-token
// mode) and `files.ca` may be empty. Errors name the file and OpenSSL's reason.
Result<void> ConfigureServer(SSL_CTX* ctx, const Files& files, bool require_client_cert);

// The client side: TLS 1.3 only; the server's certificate must chain to `files.ca` (only that:
// the system's CAs are not trusted); `files.cert` / `files.key` when given are presented to
// the server. (The host name or address is checked against the certificate by the caller's
// HTTP library.)
Result<void> ConfigureClient(SSL_CTX* ctx, const Files& files);

// The subject of the peer's certificate as one line ("CN=ws1,O=lab"); empty when there is none.
std::string PeerSubject(const SSL* ssl);

// OpenSSL's error queue as text (emptied); `fallback` when it was empty.
std::string TakeErrors(const std::string& fallback = "unknown TLS error");

// A TLS alert (the `ret` of an info callback's SSL_CB_ALERT) in words, including the TLS 1.3
// alerts OpenSSL 3.0 does not name ("certificate required": a client sent no certificate).
std::string AlertText(int ret);

// A certificate verification result (X509_V_*) in words.
std::string VerifyResultText(long result);

// A bearer token (the fleet's mode for sites without a CA for clients): the first line of
// `path` without surrounding blanks, at least 16 characters, from a file that others cannot
// read (mode 0600 or stricter).
Result<std::string> ReadTokenFile(const std::string& path);

}  // namespace rs::tls
