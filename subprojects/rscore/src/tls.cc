#include "rscore/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace rs::tls {
namespace {

Result<void> Readable(const std::string& path, const char* what) {
  if (path.empty()) return Error(std::string("no ") + what + " file given");
  if (access(path.c_str(), R_OK) != 0) {
    return ErrnoError(path + ": cannot read the " + what, errno);
  }
  return Ok();
}

Result<void> Common(SSL_CTX* ctx) {
  ERR_clear_error();
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1) {
    return Error("cannot require TLS 1.3: " + TakeErrors());
  }
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  return Ok();
}

Result<void> OwnCertificate(SSL_CTX* ctx, const Files& files) {
  RETURN_IF_ERROR(Readable(files.cert, "certificate"));
  RETURN_IF_ERROR(Readable(files.key, "private key"));
  if (SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return Error(files.cert + ": not a PEM certificate: " + TakeErrors());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    return Error(files.key + ": not an unencrypted PEM private key: " + TakeErrors());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return Error(files.key + ": the private key does not match the certificate " + files.cert);
  }
  return Ok();
}

Result<void> TrustOnly(SSL_CTX* ctx, const std::string& ca) {
  RETURN_IF_ERROR(Readable(ca, "CA certificate"));
  if (SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr) != 1) {
    return Error(ca + ": no PEM CA certificate in it: " + TakeErrors());
  }
  return Ok();
}

}  // namespace

Result<void> ConfigureServer(SSL_CTX* ctx, const Files& files, bool require_client_cert) {
  RETURN_IF_ERROR(Common(ctx));
  RETURN_IF_ERROR(OwnCertificate(ctx, files));
  if (!require_client_cert) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return Ok();
  }
  RETURN_IF_ERROR(TrustOnly(ctx, files.ca));
  // The CA names sent to clients, so that one with several certificates picks the right one.
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.ca.c_str());
  if (names == nullptr) return Error(files.ca + ": no CA certificate names: " + TakeErrors());
  SSL_CTX_set_client_CA_list(ctx, names);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return Ok();
}

Result<void> ConfigureClient(SSL_CTX* ctx, const Files& files) {
  RETURN_IF_ERROR(Common(ctx));
  if (!files.cert.empty() || !files.key.empty()) RETURN_IF_ERROR(OwnCertificate(ctx, files));
  RETURN_IF_ERROR(TrustOnly(ctx, files.ca));
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return Ok();
}

std::string PeerSubject(const SSL* ssl) {
  if (ssl == nullptr) return "";
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  std::string out;
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio != nullptr) {
    X509_NAME_print_ex(bio, X509_get_subject_name(cert), 0,
                       XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
    char* data = nullptr;
    long n = BIO_get_mem_data(bio, &data);
    if (n > 0) out.assign(data, static_cast<size_t>(n));
    BIO_free(bio);
  }
  X509_free(cert);
  return out;
}

std::string TakeErrors(const std::string& fallback) {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    const char* reason = ERR_reason_error_string(e);
    if (!out.empty()) out += "; ";
    out += reason ? reason : buf;
  }
  return out.empty() ? fallback : out;
}

std::string AlertText(int ret) {
  switch (ret & 0xff) {
    case 116:
      return "certificate required: no client certificate was sent";
    case 109:
      return "missing extension";
    case 120:
      return "no application protocol";
    default:
      return SSL_alert_desc_string_long(ret);
  }
}

std::string VerifyResultText(long result) { return X509_verify_cert_error_string(result); }

Result<std::string> ReadTokenFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return ErrnoError(path, errno);
  if ((st.st_mode & 077) != 0) {
    return Error(path + ": a token file must not be readable by others (chmod 600 " + path + ")");
  }
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token)) return Error(path + ": cannot read the token");
  const size_t b = token.find_first_not_of(" \t\r");
  const size_t e = token.find_last_not_of(" \t\r");
  token = b == std::string::npos ? "" : token.substr(b, e - b + 1);
  if (token.size() < 16) {
    return Error(path +
                 ": the token is shorter than 16 characters (make one with: openssl rand "
                 "-hex 32 > " +
                 path + ")");
  }
  return token;
}

}  // namespace rs::tls
