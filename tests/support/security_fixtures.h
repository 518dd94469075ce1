// SPDX-License-Identifier: MIT
#pragma once
// The node-security tests' fixtures (tests/net/tst_security.cpp, tst_tls.cpp): specs,
// tokens, every RPC called once, lab certificates, /proc readers.
#include "core/store/run_store.h"
#include "core/spec/spec.h"
#include "net/security/node_security.h"
#include "net/client/ps_client.h"
#include "net/server/ps_server.h"
#include "tests/support/processes.h"

#include <sys/stat.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <optional>
#include <regex>

namespace security_fixtures {

namespace pb = dasp::ps::v1;
using dasp::net::NodeSecurity;

inline constexpr std::int64_t kParameters = 64;
inline constexpr double kDeadlineS = 5.0;

inline QString certScript() { return QStringLiteral(DASP_SOURCE_DIR "/tools/make-lab-cert.sh"); }
inline bool haveOpenssl() { return !QStandardPaths::findExecutable(QStringLiteral("openssl")).isEmpty(); }

inline dasp::ExperimentSpec baseSpec() {
  dasp::ExperimentSpec spec;
  spec.mutable_model()->set_name("logreg");
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_strategy()->set_name("asp");
  spec.mutable_cluster()->set_count(1);
  spec.set_device("cpu");
  return spec;
}

inline NodeSecurity withToken(const std::string& token, std::shared_ptr<const dasp::net::TlsMaterial> tls = nullptr) {
  NodeSecurity s;
  s.token = token;
  s.tls = std::move(tls);
  return s;
}

// An in-process server of a "flat" model of kParameters zeros on 127.0.0.1, port 0.
inline std::unique_ptr<dasp::net::ParameterServer> startServer(const NodeSecurity& security,
                                                        const dasp::ExperimentSpec& spec = baseSpec(),
                                                        bool replica = false, const std::string& chainNext = {}) {
  dasp::net::ServerOptions options;
  options.spec = dasp::withDefaults(spec);
  options.workers = 1;
  options.modelName = "flat";
  options.initialParameters.assign(static_cast<std::size_t>(kParameters), 0.0f);
  options.security = security;
  options.replica = replica;
  options.chainNext = chainNext;
  auto server = dasp::net::ParameterServer::start(std::move(options));
  if (!server) qFatal("%s", server.message().c_str());
  return std::move(server).value();
}

inline std::string addressOf(const dasp::net::ParameterServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

inline pb::JoinRequest workerJoin() {
  pb::JoinRequest req;
  req.set_role("worker");
  req.set_name("worker-0");
  req.set_model("flat");
  req.set_parameter_count(kParameters);
  req.set_requested_rank(0);
  return req;
}

inline std::string gradientBytes(float value = 0.01f) {
  std::vector<float> g(static_cast<std::size_t>(kParameters), value);
  return std::string(reinterpret_cast<const char*>(g.data()), g.size() * sizeof(float));
}

struct Call {
  std::string rpc;
  grpc::Status status;
};

// Every RPC of the protocol once, over plaintext, each with a deadline; the token in the
// metadata when given (nullopt: no token at all).
inline std::vector<Call> callEveryRpc(const std::string& address, const std::optional<std::string>& token) {
  auto stub = pb::ParameterServer::NewStub(
      dasp::net::openChannel(address, withToken(token.value_or("unused-unused-unused")), grpc::ChannelArguments()));
  auto context = [&](grpc::ClientContext& c) {
    dasp::net::setDeadline(c, kDeadlineS);
    if (token) c.AddMetadata(dasp::net::kTokenMetadataKey, *token);
  };
  std::vector<Call> calls;
  {
    grpc::ClientContext c;
    context(c);
    pb::JoinReply reply;
    calls.push_back({"Join", stub->Join(&c, workerJoin(), &reply)});
  }
  pb::PullRequest pull;
  pull.set_rank(0);
  {
    grpc::ClientContext c;
    context(c);
    pb::PullReply reply;
    calls.push_back({"Pull", stub->Pull(&c, pull, &reply)});
  }
  pb::PushRequest push;
  push.set_rank(0);
  push.set_gradient(gradientBytes());
  {
    grpc::ClientContext c;
    context(c);
    pb::PushReply reply;
    calls.push_back({"Push", stub->Push(&c, push, &reply)});
  }
  {
    grpc::ClientContext c;
    context(c);
    pb::PullReply reply;
    calls.push_back({"PushPull", stub->PushPull(&c, push, &reply)});
  }
  {
    grpc::ClientContext c;
    context(c);
    auto reader = stub->PullChunks(&c, pull);
    pb::PullChunk chunk;
    while (reader->Read(&chunk)) {
    }
    calls.push_back({"PullChunks", reader->Finish()});
  }
  {
    grpc::ClientContext c;
    context(c);
    pb::PushReply reply;
    auto writer = stub->PushChunks(&c, &reply);
    pb::PushChunk chunk;
    chunk.mutable_header()->set_rank(0);
    chunk.set_data(gradientBytes());
    (void)writer->Write(chunk);
    (void)writer->WritesDone();
    calls.push_back({"PushChunks", writer->Finish()});
  }
  {
    grpc::ClientContext c;
    context(c);
    auto reader = stub->Watch(&c, pb::WatchRequest());
    pb::EventBatch batch;
    while (reader->Read(&batch)) {
    }
    calls.push_back({"Watch", reader->Finish()});
  }
  {
    grpc::ClientContext c;
    context(c);
    pb::EvaluationReport report;
    report.set_version(0);
    report.set_accuracy(0.5);
    pb::ReportReply reply;
    calls.push_back({"Report", stub->Report(&c, report, &reply)});
  }
  {
    grpc::ClientContext c;
    context(c);
    pb::ControlRequest stop;
    stop.set_action(pb::ControlRequest::STOP);
    pb::ControlReply reply;
    calls.push_back({"Control", stub->Control(&c, stop, &reply)});
  }
  {
    grpc::ClientContext c;
    context(c);
    pb::ReplicaUpdate update;
    update.set_version(1);
    update.set_gradient(gradientBytes());
    pb::ReplicaAck ack;
    calls.push_back({"Replicate", stub->Replicate(&c, update, &ack)});
  }
  return calls;
}

// The first batch of events an authorized watcher gets: what was published while nobody
// watched.
inline std::vector<pb::ClusterEvent> eventsSoFar(const std::string& address, const NodeSecurity& security) {
  dasp::net::PsClient client(address, kParameters, security);
  grpc::ClientContext context;
  dasp::net::setDeadline(context, kDeadlineS);
  auto reader = client.watch(context);
  pb::EventBatch batch;
  std::vector<pb::ClusterEvent> out;
  if (reader->Read(&batch)) out.assign(batch.events().begin(), batch.events().end());
  context.TryCancel();
  (void)reader->Finish();
  return out;
}

struct Cert {
  QString cert, key;
};

// tools/make-lab-cert.sh into `dir` (empty paths and the script's output in `error` on
// failure).
inline Cert makeLabCert(const QString& dir, const QStringList& names, QString* error) {
  QProcess p;
  p.start(QStringLiteral("bash"), QStringList{certScript(), QStringLiteral("-o"), dir} + names);
  if (!p.waitForFinished(60000) || p.exitCode() != 0) {
    *error = QString::fromUtf8(p.readAllStandardError() + p.readAllStandardOutput());
    return {};
  }
  const auto out = QString::fromUtf8(p.readAllStandardOutput());
  if (!out.contains(QStringLiteral("\"tls\": true"))) *error = "no spec snippet printed: " + out;
  return {dir + "/lab-cert.pem", dir + "/lab-key.pem"};
}

inline std::shared_ptr<const dasp::net::TlsMaterial> tlsOf(const Cert& c, bool withKey) {
  auto tls = dasp::net::loadTls(c.cert.toStdString(), withKey ? c.key.toStdString() : std::string());
  if (!tls) qFatal("%s", tls.message().c_str());
  return tls.value();
}

inline grpc::Status joinWith(const std::string& address, const NodeSecurity& security, pb::JoinReply* out = nullptr) {
  dasp::net::PsClient client(address, kParameters, security);
  pb::JoinReply reply;
  auto st = client.join(workerJoin(), reply, kDeadlineS);
  if (out) *out = reply;
  return st;
}

// NUL-separated /proc file (cmdline, environ) of a live process.
inline std::vector<std::string> procList(std::int64_t pid, const char* what) {
  const std::string text = test_support::procFile(pid, what);
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin < text.size()) {
    auto end = text.find('\0', begin);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

}  // namespace security_fixtures
