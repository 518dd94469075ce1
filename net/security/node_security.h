// SPDX-License-Identifier: MIT
#pragma once
// Node traffic security: the run's token and optional TLS, shared by every end of the
// dasp.ps.v1 protocol (the server, its chain replicator, workers, the evaluator and the
// runner's watch/control client).
//
// - Token: every RPC carries the run's random token in the metadata key `x-dasp-token`;
//   the server refuses a call without it or with another one (PERMISSION_DENIED) before
//   doing anything. The runner creates one per run (newRunToken) and hands it to its
//   children in the environment variable DASP_RUN_TOKEN, never on a command line (ps shows
//   argv); `--token-file PATH` is the alternative for nodes started by hand.
// - TLS (spec.security.tls): the server presents tls_cert/tls_key; clients trust exactly
//   tls_cert. Lab certificates name hosts, so a client that dials an IP address checks the
//   certificate against one of its own names (targetNameFor).
//
// Threading: plain values and pure functions; a NodeSecurity is copied into every client
// and server (the TLS material is shared, immutable, between copies).

#include "core/common/result.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace dasp::net {

// gRPC metadata key of the run token (metadata keys are lower case).
inline constexpr const char* kTokenMetadataKey = "x-dasp-token";
// The environment variable through which the runner hands the token to its children.
inline constexpr const char* kTokenEnvironment = "DASP_RUN_TOKEN";

// The TLS files of a run, read once (PEM text) and checked.
struct TlsMaterial {
  std::string certPath;
  std::string keyPath;  // empty on clients
  std::string certPem;
  std::string keyPem;   // empty on clients
  // The certificate's names: DNS names (subject alternative names, else the common name)
  // and IP addresses (IP subject alternative names), in certificate order.
  std::vector<std::string> dnsNames;
  std::vector<std::string> ipAddresses;
};

// Reads and checks the PEM files: the certificate (always) and the key (when `keyPath` is
// not empty: the server), and that the key belongs to the certificate. Errors name the
// spec field, the flag and the file ("security.tls_cert (--tls-cert): cannot read ...").
Result<std::shared_ptr<const TlsMaterial>> loadTls(const std::string& certPath, const std::string& keyPath = {});

struct NodeSecurity {
  // Default: this process's own token (DASP_RUN_TOKEN if the process has it, else a random
  // one made once), so a server and its clients in one process (tests, benches) agree
  // without set-up, and no other process can guess it.
  std::string token = processRunToken();
  std::shared_ptr<const TlsMaterial> tls;  // null: plaintext

  static const std::string& processRunToken();
};

// A new random 128-bit token (from /dev/urandom) as 32 hex digits.
Result<std::string> newRunToken();
// The token in the first line of `path` (surrounding whitespace ignored). It must be at
// least 16 printable characters without spaces (it travels as gRPC metadata).
Result<std::string> readTokenFile(const std::string& path);
// A token someone gave us (file or environment): the same rules as readTokenFile.
Status checkToken(const std::string& token, const std::string& source);
// Writes `token` into a new file (mode 0600) in $TMPDIR (or /tmp); returns its path.
Result<std::string> writeTokenFile(const std::string& token);
// Compares in time that depends only on `expected`'s length, not on where they differ.
bool tokensEqual(std::string_view given, std::string_view expected);

// Client side: a channel to `address` (host:port) with the security's credentials
// (plaintext or TLS trusting the certificate; the target-name override set as
// targetNameFor says), and the token on a call's context.
std::shared_ptr<grpc::Channel> openChannel(const std::string& address, const NodeSecurity& security,
                                           grpc::ChannelArguments args);
void attachToken(grpc::ClientContext& context, const NodeSecurity& security);
// The name a TLS client checks the server's certificate against when it dials `address`:
// empty (no override) when the host is a DNS name or an IP the certificate names; else one
// of the certificate's DNS names ("localhost" first for a loopback address).
std::string targetNameFor(const std::string& address, const TlsMaterial& tls);

// Server side: the listening credentials (plaintext, or TLS with the certificate and key).
std::shared_ptr<grpc::ServerCredentials> serverCredentials(const NodeSecurity& security);

// The host part of "host:port", "[v6]:port" or a bare host, without brackets.
std::string hostOf(const std::string& address);
// "host:port" for gRPC from a bind host and a port ("::" becomes "[::]:port").
std::string hostPort(const std::string& host, int port);
// An address clients can dial for a server bound to `bindHost`: the host itself, or for a
// wildcard bind (0.0.0.0, ::) `wildcardHost` when given (the server host's address, for
// clients elsewhere), else the loopback address of the bind's family.
std::string dialableHost(const std::string& bindHost, const std::string& wildcardHost = {});

}  // namespace dasp::net
