// SPDX-License-Identifier: MIT
#include "net/security/node_security.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace dasp::net {
namespace {

// The whole file, or an error naming the field and the file.
Result<std::string> readPem(const std::string& path, const std::string& field) {
  if (path.empty()) return Status::error(field + ": no file given");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(field + ": cannot read " + path + " (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::error(field + ": cannot read " + path);
  return text.str();
}

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct NamesDeleter {
  void operator()(GENERAL_NAMES* n) const { GENERAL_NAMES_free(n); }
};

std::unique_ptr<BIO, BioDeleter> memoryBio(const std::string& text) {
  return std::unique_ptr<BIO, BioDeleter>(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// The canonical text of an IP literal ("" when `host` is not one).
std::string canonicalIp(const std::string& host) {
  unsigned char buf[16];
  char text[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, host.c_str(), buf) == 1) return inet_ntop(AF_INET, buf, text, sizeof text) ? text : "";
  if (inet_pton(AF_INET6, host.c_str(), buf) == 1) return inet_ntop(AF_INET6, buf, text, sizeof text) ? text : "";
  return {};
}

bool isLoopback(const std::string& ip) { return ip.rfind("127.", 0) == 0 || ip == "::1"; }

}  // namespace

const std::string& NodeSecurity::processRunToken() {
  static const std::string token = [] {
    if (const char* given = std::getenv(kTokenEnvironment); given != nullptr && *given != '\0') {
      return std::string(given);
    }
    if (auto fresh = newRunToken()) return fresh.value();
    // No /dev/urandom: still unguessable enough to keep other processes out.
    std::random_device rd;
    std::string t;
    for (int i = 0; i < 4; ++i) {
      char part[9];
      std::snprintf(part, sizeof part, "%08x", static_cast<unsigned>(rd()));
      t += part;
    }
    return t;
  }();
  return token;
}

Result<std::string> newRunToken() {
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(std::string("run token: cannot open /dev/urandom (") + std::strerror(errno) + ")");
  unsigned char bytes[16];
  std::size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::read(fd, bytes + got, sizeof bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got != sizeof bytes) return Status::error("run token: short read from /dev/urandom");
  static const char* hex = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += hex[b >> 4];
    token += hex[b & 15];
  }
  return token;
}

Status checkToken(const std::string& token, const std::string& source) {
  if (token.size() < 16) {
    return Status::error(source + ": the run token is too short (" + std::to_string(token.size()) +
                         " characters; at least 16)");
  }
  for (char c : token) {
    if (c <= ' ' || c > '~') return Status::error(source + ": the run token may hold only printable characters without spaces");
  }
  return Status::ok();
}

Result<std::string> readTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::error("--token-file: cannot read " + path + " (" + std::strerror(errno) + ")");
  std::string line;
  std::getline(in, line);
  const auto begin = line.find_first_not_of(" \t\r\n");
  const auto end = line.find_last_not_of(" \t\r\n");
  line = begin == std::string::npos ? std::string() : line.substr(begin, end - begin + 1);
  if (auto st = checkToken(line, "--token-file " + path); !st) return st;
  return line;
}

Result<std::string> writeTokenFile(const std::string& token) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dasp-token-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const int fd = ::mkstemp(buf.data());  // creates the file with mode 0600
  if (fd < 0) return Status::error("cannot create a token file " + pattern + " (" + std::strerror(errno) + ")");
  const std::string text = token + "\n";
  const bool ok = ::fchmod(fd, S_IRUSR | S_IWUSR) == 0 &&
                  ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  if (!ok) {
    ::unlink(buf.data());
    return Status::error(std::string("cannot write the token file ") + buf.data());
  }
  return std::string(buf.data());
}

bool tokensEqual(std::string_view given, std::string_view expected) {
  // Every byte of `expected` is looked at whatever `given` holds: the time reveals its
  // length at most, never how much of it matched.
  volatile unsigned char diff = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff = static_cast<unsigned char>(diff | (g ^ static_cast<unsigned char>(expected[i])));
  }
  return diff == 0 && !expected.empty();
}

Result<std::shared_ptr<const TlsMaterial>> loadTls(const std::string& certPath, const std::string& keyPath) {
  const std::string certField = "security.tls_cert (--tls-cert)";
  const std::string keyField = "security.tls_key (--tls-key)";
  auto m = std::make_shared<TlsMaterial>();
  m->certPath = certPath;
  m->keyPath = keyPath;
  auto cert = readPem(certPath, certField);
  if (!cert) return cert.status();
  m->certPem = std::move(cert).value();
  auto certBio = memoryBio(m->certPem);
  std::unique_ptr<X509, X509Deleter> x509(PEM_read_bio_X509(certBio.get(), nullptr, nullptr, nullptr));
  if (!x509) return Status::error(certField + ": " + certPath + " holds no PEM certificate");
  std::unique_ptr<GENERAL_NAMES, NamesDeleter> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x509.get(), NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names.get(), i);
    if (name->type == GEN_DNS) {
      const auto* s = name->d.dNSName;
      m->dnsNames.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                               static_cast<std::size_t>(ASN1_STRING_length(s)));
    } else if (name->type == GEN_IPADD) {
      const auto* s = name->d.iPAddress;
      const int length = ASN1_STRING_length(s);
      char text[INET6_ADDRSTRLEN];
      const int family = length == 4 ? AF_INET : length == 16 ? AF_INET6 : 0;
      if (family != 0 && inet_ntop(family, ASN1_STRING_get0_data(s), text, sizeof text)) m->ipAddresses.push_back(text);
    }
  }
  if (m->dnsNames.empty()) {
    char cn[256];
    const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(x509.get()), NID_commonName, cn, sizeof cn);
    if (n > 0) m->dnsNames.emplace_back(cn, static_cast<std::size_t>(n));
  }
  if (!keyPath.empty()) {
    auto key = readPem(keyPath, keyField);
    if (!key) return key.status();
    m->keyPem = std::move(key).value();
    auto keyBio = memoryBio(m->keyPem);
    std::unique_ptr<EVP_PKEY, KeyDeleter> pkey(PEM_read_bio_PrivateKey(keyBio.get(), nullptr, nullptr, nullptr));
    if (!pkey) return Status::error(keyField + ": " + keyPath + " holds no PEM private key (or it is encrypted)");
    if (X509_check_private_key(x509.get(), pkey.get()) != 1) {
      return Status::error(keyField + ": the key in " + keyPath + " does not belong to the certificate in " + certPath);
    }
  }
  return std::shared_ptr<const TlsMaterial>(std::move(m));
}

std::string targetNameFor(const std::string& address, const TlsMaterial& tls) {
  const std::string ip = canonicalIp(hostOf(address));
  if (ip.empty()) return {};  // a DNS name: checked against the certificate as it is
  if (std::find(tls.ipAddresses.begin(), tls.ipAddresses.end(), ip) != tls.ipAddresses.end()) return {};
  std::vector<std::string> usable;
  for (const auto& n : tls.dnsNames) {
    if (!n.empty() && n.find('*') == std::string::npos) usable.push_back(n);
  }
  if (usable.empty()) return {};
  if (isLoopback(ip) && std::find(usable.begin(), usable.end(), "localhost") != usable.end()) return "localhost";
  return usable.front();
}

std::shared_ptr<grpc::Channel> openChannel(const std::string& address, const NodeSecurity& security,
                                           grpc::ChannelArguments args) {
  if (!security.tls) return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = security.tls->certPem;
  if (const auto name = targetNameFor(address, *security.tls); !name.empty()) args.SetSslTargetNameOverride(name);
  return grpc::CreateCustomChannel(address, grpc::SslCredentials(ssl), args);
}

void attachToken(grpc::ClientContext& context, const NodeSecurity& security) {
  context.AddMetadata(kTokenMetadataKey, security.token);
}

std::shared_ptr<grpc::ServerCredentials> serverCredentials(const NodeSecurity& security) {
  if (!security.tls) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({security.tls->keyPem, security.tls->certPem});
  return grpc::SslServerCredentials(ssl);
}

std::string hostOf(const std::string& address) {
  if (!address.empty() && address.front() == '[') {
    const auto close = address.find(']');
    return close == std::string::npos ? address.substr(1) : address.substr(1, close - 1);
  }
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || address.find(':') != colon) return address;  // bare host or bare IPv6
  return address.substr(0, colon);
}

std::string hostPort(const std::string& host, int port) {
  const bool bareV6 = host.find(':') != std::string::npos && host.front() != '[';
  return (bareV6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string dialableHost(const std::string& bindHost, const std::string& wildcardHost) {
  const bool v4 = bindHost == "0.0.0.0" || bindHost.empty();
  const bool v6 = bindHost == "::" || bindHost == "[::]";
  if (!v4 && !v6) return bindHost;
  if (!wildcardHost.empty()) return wildcardHost;
  return v4 ? "127.0.0.1" : "::1";
}

}  // namespace dasp::net
