// SPDX-License-Identifier: MIT
// Node traffic security: every dasp.ps.v1 RPC without the run's token, or with another
// one, is refused (PERMISSION_DENIED) before it does anything, counted, and reported as a
// REJECT event, rate-limited under a flood; chain replicas authenticate to each other; a
// TLS server refuses plaintext clients and serves TLS clients that trust its certificate
// (also when they dial 127.0.0.1 and the certificate names only a host); a hand-started
// `dasp server` makes its own token file; and a whole `dasp run` with security.tls
// completes, hands the token to its nodes through the environment only, and records a
// refused call as a "reject" event.
#include "core/run_store.h"
#include "core/spec.h"
#include "net/node_security.h"
#include "net/ps_client.h"
#include "net/ps_server.h"

#include <sys/stat.h>

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <fstream>
#include <optional>
#include <regex>

namespace {

namespace pb = dasp::ps::v1;
using dasp::net::NodeSecurity;

constexpr std::int64_t kParameters = 64;
constexpr double kDeadlineS = 5.0;

QString daspBin() { return QStringLiteral(DASP_BINARY_DIR "/bin/dasp"); }
QString certScript() { return QStringLiteral(DASP_SOURCE_DIR "/tools/make-lab-cert.sh"); }
bool haveOpenssl() { return !QStandardPaths::findExecutable(QStringLiteral("openssl")).isEmpty(); }

dasp::ExperimentSpec baseSpec() {
  dasp::ExperimentSpec spec;
  spec.mutable_model()->set_name("logreg");
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_strategy()->set_name("asp");
  spec.mutable_cluster()->set_count(1);
  spec.set_device("cpu");
  return spec;
}

NodeSecurity withToken(const std::string& token, std::shared_ptr<const dasp::net::TlsMaterial> tls = nullptr) {
  NodeSecurity s;
  s.token = token;
  s.tls = std::move(tls);
  return s;
}

// An in-process server of a "flat" model of kParameters zeros on 127.0.0.1, port 0.
std::unique_ptr<dasp::net::ParameterServer> startServer(const NodeSecurity& security,
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

std::string addressOf(const dasp::net::ParameterServer& server) {
  return "127.0.0.1:" + std::to_string(server.port());
}

pb::JoinRequest workerJoin() {
  pb::JoinRequest req;
  req.set_role("worker");
  req.set_name("worker-0");
  req.set_model("flat");
  req.set_parameter_count(kParameters);
  req.set_requested_rank(0);
  return req;
}

std::string gradientBytes(float value = 0.01f) {
  std::vector<float> g(static_cast<std::size_t>(kParameters), value);
  return std::string(reinterpret_cast<const char*>(g.data()), g.size() * sizeof(float));
}

struct Call {
  std::string rpc;
  grpc::Status status;
};

// Every RPC of the protocol once, over plaintext, each with a deadline; the token in the
// metadata when given (nullopt: no token at all).
std::vector<Call> callEveryRpc(const std::string& address, const std::optional<std::string>& token) {
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
std::vector<pb::ClusterEvent> eventsSoFar(const std::string& address, const NodeSecurity& security) {
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
Cert makeLabCert(const QString& dir, const QStringList& names, QString* error) {
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

std::shared_ptr<const dasp::net::TlsMaterial> tlsOf(const Cert& c, bool withKey) {
  auto tls = dasp::net::loadTls(c.cert.toStdString(), withKey ? c.key.toStdString() : std::string());
  if (!tls) qFatal("%s", tls.message().c_str());
  return tls.value();
}

grpc::Status joinWith(const std::string& address, const NodeSecurity& security, pb::JoinReply* out = nullptr) {
  dasp::net::PsClient client(address, kParameters, security);
  pb::JoinReply reply;
  auto st = client.join(workerJoin(), reply, kDeadlineS);
  if (out) *out = reply;
  return st;
}

std::string fileText(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// NUL-separated /proc file (cmdline, environ) of a live process.
std::vector<std::string> procList(std::int64_t pid, const char* what) {
  const std::string text = fileText("/proc/" + std::to_string(pid) + "/" + what);
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

}  // namespace

class TestSecurity : public QObject {
  Q_OBJECT

 private slots:
  void tokenHelpers();
  void everyRpcNeedsTheToken_data();
  void everyRpcNeedsTheToken();
  void floodIsCountedButEventsAreRateLimited();
  void chainReplicasAuthenticate_data();
  void chainReplicasAuthenticate();
  void specValidation();
  void tlsFilesAreNamedWhenWrong();
  void targetNameRules();
  void tlsServerRefusesPlaintextAndServesTls();
  void tlsClientDialingAnIpUsesTheCertificatesName();
  void manualServerWritesItsTokenFile();
  void unreadableTlsFilesStopTheStart();
  void tlsRunCompletes();

 private:
  QTemporaryDir m_dir;
};

void TestSecurity::tokenHelpers() {
  using dasp::net::tokensEqual;
  const std::string t = "0123456789abcdef0123456789abcdef";
  QVERIFY(tokensEqual(t, t));
  QVERIFY(!tokensEqual("0123456789abcdef0123456789abcdee", t));  // the last character differs
  QVERIFY(!tokensEqual(t.substr(0, 31), t));                      // a prefix
  QVERIFY(!tokensEqual(t + "0", t));                              // longer
  QVERIFY(!tokensEqual("", t));
  QVERIFY(!tokensEqual("", ""));  // an empty expected token never matches

  auto a = dasp::net::newRunToken();
  auto b = dasp::net::newRunToken();
  QVERIFY(a.isOk() && b.isOk());
  QVERIFY(std::regex_match(a.value(), std::regex("^[0-9a-f]{32}$")));
  QVERIFY(a.value() != b.value());

  auto path = dasp::net::writeTokenFile(a.value());
  QVERIFY2(path.isOk(), path.message().c_str());
  struct stat st {};
  QCOMPARE(::stat(path->c_str(), &st), 0);
  QCOMPARE(static_cast<int>(st.st_mode & 0777), 0600);
  auto read = dasp::net::readTokenFile(path.value());
  QVERIFY2(read.isOk(), read.message().c_str());
  QCOMPARE(read.value(), a.value());
  ::unlink(path->c_str());

  // The first line counts, without surrounding whitespace.
  const std::string padded = m_dir.filePath("padded.token").toStdString();
  std::ofstream(padded) << "  " << t << "\r\nsecond line\n";
  QCOMPARE(dasp::net::readTokenFile(padded).value(), t);
  const std::string shortFile = m_dir.filePath("short.token").toStdString();
  std::ofstream(shortFile) << "abc\n";
  auto bad = dasp::net::readTokenFile(shortFile);
  QVERIFY(!bad.isOk());
  QVERIFY2(bad.message().find(shortFile) != std::string::npos && bad.message().find("too short") != std::string::npos,
           bad.message().c_str());
  auto missing = dasp::net::readTokenFile(m_dir.filePath("nope.token").toStdString());
  QVERIFY2(!missing.isOk() && missing.message().find("nope.token") != std::string::npos, missing.message().c_str());
}

void TestSecurity::everyRpcNeedsTheToken_data() {
  QTest::addColumn<bool>("sendToken");
  QTest::addColumn<QString>("expected");
  QTest::newRow("missing") << false << "missing run token";
  QTest::newRow("wrong") << true << "wrong run token";
}

void TestSecurity::everyRpcNeedsTheToken() {
  QFETCH(bool, sendToken);
  QFETCH(QString, expected);
  const auto security = withToken("right-token-0123456789abcdef");
  auto server = startServer(security);
  const auto address = addressOf(*server);
  const auto calls = callEveryRpc(address, sendToken ? std::optional<std::string>("wrong-token-0123456789abcdef")
                                                     : std::nullopt);
  QCOMPARE(calls.size(), std::size_t{10});
  for (const auto& c : calls) {
    const QString what = QString::fromStdString(c.rpc + ": " + dasp::net::describe(c.status));
    QVERIFY2(c.status.error_code() == grpc::StatusCode::PERMISSION_DENIED, qPrintable(what));
    QVERIFY2(c.status.error_message().find(expected.toStdString()) != std::string::npos, qPrintable(what));
  }
  // Counted, and nothing happened: no update, no stop, nobody joined.
  const auto stats = server->stats();
  QCOMPARE(stats.unauthorized, 10LL);
  QCOMPARE(stats.pushes, 0LL);
  QCOMPARE(stats.version, 0LL);
  QVERIFY(!server->stopRequested());
  // Reported as REJECT events, each naming the call and the reason (at most the burst).
  const auto events = eventsSoFar(address, security);
  QVERIFY(!events.empty());
  QVERIFY2(events.size() <= 10, qPrintable(QString::number(events.size())));
  for (const auto& e : events) {
    QCOMPARE(e.kind(), pb::ClusterEvent::REJECT);
    QVERIFY2(e.detail().find(expected.toStdString()) != std::string::npos, e.detail().c_str());
  }
  QVERIFY2(events.front().detail().rfind("Join from ", 0) == 0, events.front().detail().c_str());
  // The right token still works.
  pb::JoinReply reply;
  auto st = joinWith(address, security, &reply);
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  QCOMPARE(reply.rank(), 0);
  QCOMPARE(server->stats().unauthorized, 10LL);
}

void TestSecurity::floodIsCountedButEventsAreRateLimited() {
  const auto security = withToken("right-token-0123456789abcdef");
  auto server = startServer(security);
  const auto address = addressOf(*server);
  constexpr int kFlood = 300;
  const auto start = std::chrono::steady_clock::now();
  {
    dasp::net::PsClient intruder(address, kParameters, withToken("wrong-token-0123456789abcdef"));
    for (int i = 0; i < kFlood; ++i) {
      pb::JoinReply reply;
      QCOMPARE(intruder.join(workerJoin(), reply, kDeadlineS).error_code(), grpc::StatusCode::PERMISSION_DENIED);
    }
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  QCOMPARE(server->stats().unauthorized, static_cast<long long>(kFlood));
  const auto events = eventsSoFar(address, security);
  // A burst of 5, then one per second: far fewer events than refused calls.
  const double bound = 5 + elapsed + 1;
  QVERIFY2(!events.empty() && static_cast<double>(events.size()) <= bound,
           qPrintable(QString("%1 events for %2 refused calls in %3 s").arg(events.size()).arg(kFlood).arg(elapsed)));
  std::int64_t reported = 0;
  for (const auto& e : events) {
    QCOMPARE(e.kind(), pb::ClusterEvent::REJECT);
    reported += e.count();
  }
  QVERIFY(reported <= kFlood);
}

void TestSecurity::chainReplicasAuthenticate_data() {
  QTest::addColumn<bool>("sameToken");
  QTest::newRow("same token") << true;
  QTest::newRow("other token") << false;
}

void TestSecurity::chainReplicasAuthenticate() {
  QFETCH(bool, sameToken);
  auto spec = baseSpec();
  spec.mutable_recovery()->set_mode(dasp::v1::RecoverySpec::CHAIN);
  spec.mutable_recovery()->set_replicas(2);
  spec.mutable_recovery()->set_forward_every(1);
  const auto headSecurity = withToken("chain-token-0123456789abcdef");
  const auto tailSecurity = sameToken ? headSecurity : withToken("other-token-0123456789abcdef");
  auto tail = startServer(tailSecurity, spec, true);
  auto head = startServer(headSecurity, spec, false, addressOf(*tail));
  dasp::net::PsClient client(addressOf(*head), kParameters, headSecurity);
  pb::JoinReply joined;
  QVERIFY(client.join(workerJoin(), joined, kDeadlineS).ok());
  pb::PushRequest push;
  push.set_rank(0);
  push.set_gradient(gradientBytes());
  pb::PushReply pushed;
  auto st = client.push(push, pushed, kDeadlineS);
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  QCOMPARE(pushed.outcome(), std::string("applied"));
  std::vector<float> params;
  if (sameToken) {
    // The head forwards the update with the token: the tail applies it.
    QTRY_COMPARE_WITH_TIMEOUT(tail->snapshot(params), 1LL, 10000);
    QCOMPARE(tail->stats().unauthorized, 0LL);
  } else {
    // The tail refuses the head's forwarding: counted there, never applied.
    QTRY_VERIFY_WITH_TIMEOUT(tail->stats().unauthorized >= 1, 10000);
    QCOMPARE(tail->snapshot(params), 0LL);
  }
  head->shutdown(0.5);
  tail->shutdown(0.5);
}

void TestSecurity::specValidation() {
  auto spec = baseSpec();
  QVERIFY(dasp::validateSpec(spec).isOk());
  spec.mutable_security()->set_tls(true);
  auto st = dasp::validateSpec(spec);
  QVERIFY2(!st.isOk() && st.message().find("security.tls_cert") != std::string::npos, st.message().c_str());
  spec.mutable_security()->set_tls_cert("/lab/cert.pem");
  st = dasp::validateSpec(spec);
  QVERIFY2(!st.isOk() && st.message().find("security.tls_key") != std::string::npos, st.message().c_str());
  spec.mutable_security()->set_tls_key("/lab/key.pem");
  QVERIFY(dasp::validateSpec(spec).isOk());
  for (const char* good : {"0.0.0.0", "::", "::1", "10.1.2.3", "lab-host.example"}) {
    spec.mutable_security()->set_bind(good);
    st = dasp::validateSpec(spec);
    QVERIFY2(st.isOk(), qPrintable(QString(good) + ": " + QString::fromStdString(st.message())));
  }
  for (const char* bad : {"10.1.2.3:5000", "lab host", "*"}) {
    spec.mutable_security()->set_bind(bad);
    st = dasp::validateSpec(spec);
    QVERIFY2(!st.isOk() && st.message().find("security.bind") != std::string::npos, bad);
  }
}

void TestSecurity::tlsFilesAreNamedWhenWrong() {
  const std::string missing = m_dir.filePath("missing-cert.pem").toStdString();
  auto tls = dasp::net::loadTls(missing);
  QVERIFY(!tls.isOk());
  QVERIFY2(tls.message().find("security.tls_cert") != std::string::npos && tls.message().find(missing) != std::string::npos,
           tls.message().c_str());
  const std::string notPem = m_dir.filePath("not.pem").toStdString();
  std::ofstream(notPem) << "hello\n";
  tls = dasp::net::loadTls(notPem);
  QVERIFY2(!tls.isOk() && tls.message().find("no PEM certificate") != std::string::npos, tls.message().c_str());
  if (!haveOpenssl()) QSKIP("openssl is not installed: the certificate/key pair checks need tools/make-lab-cert.sh");
  QString error;
  const auto a = makeLabCert(m_dir.filePath("named-a"), {"lab-a"}, &error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  const auto b = makeLabCert(m_dir.filePath("named-b"), {"lab-b"}, &error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  tls = dasp::net::loadTls(a.cert.toStdString(), m_dir.filePath("missing-key.pem").toStdString());
  QVERIFY2(!tls.isOk() && tls.message().find("security.tls_key") != std::string::npos &&
               tls.message().find("missing-key.pem") != std::string::npos,
           tls.message().c_str());
  tls = dasp::net::loadTls(a.cert.toStdString(), b.key.toStdString());
  QVERIFY2(!tls.isOk() && tls.message().find("does not belong") != std::string::npos, tls.message().c_str());
  tls = dasp::net::loadTls(a.cert.toStdString(), a.key.toStdString());
  QVERIFY2(tls.isOk(), tls.message().c_str());
  QVERIFY(tls.value()->dnsNames == (std::vector<std::string>{"lab-a", "localhost"}));
  QVERIFY(tls.value()->ipAddresses == (std::vector<std::string>{"127.0.0.1"}));
}

void TestSecurity::targetNameRules() {
  dasp::net::TlsMaterial m;
  m.dnsNames = {"lab-host", "localhost"};
  QCOMPARE(dasp::net::targetNameFor("lab-host:5000", m), std::string());  // a name: checked as it is
  QCOMPARE(dasp::net::targetNameFor("127.0.0.1:5000", m), std::string("localhost"));
  QCOMPARE(dasp::net::targetNameFor("10.0.0.7:5000", m), std::string("lab-host"));
  QCOMPARE(dasp::net::targetNameFor("[::1]:5000", m), std::string("localhost"));
  m.ipAddresses = {"127.0.0.1", "10.0.0.7"};
  QCOMPARE(dasp::net::targetNameFor("10.0.0.7:5000", m), std::string());  // the certificate names the IP
  QCOMPARE(dasp::net::targetNameFor("10.0.0.8:5000", m), std::string("lab-host"));
  m.dnsNames = {"*.lab", "node-1.lab"};
  QCOMPARE(dasp::net::targetNameFor("10.0.0.8:5000", m), std::string("node-1.lab"));  // never a wildcard
}

void TestSecurity::tlsServerRefusesPlaintextAndServesTls() {
  if (!haveOpenssl()) QSKIP("openssl is not installed: tools/make-lab-cert.sh cannot make a certificate");
  QString error;
  const auto cert = makeLabCert(m_dir.filePath("tls-server"), {"lab-host"}, &error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  const auto other = makeLabCert(m_dir.filePath("tls-other"), {"lab-host"}, &error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  const std::string token = "tls-token-0123456789abcdef";
  auto server = startServer(withToken(token, tlsOf(cert, true)));
  const auto address = addressOf(*server);

  // A plaintext client (with the right token) gets no answer: the handshake fails.
  pb::JoinReply reply;
  auto st = joinWith(address, withToken(token), &reply);
  QVERIFY2(st.error_code() == grpc::StatusCode::UNAVAILABLE, dasp::net::describe(st).c_str());
  QCOMPARE(reply.world_size(), 0);
  // A TLS client that trusts another certificate is refused by its own check.
  st = joinWith(address, withToken(token, tlsOf(other, false)));
  QVERIFY2(st.error_code() == grpc::StatusCode::UNAVAILABLE, dasp::net::describe(st).c_str());
  // Neither reached a handler.
  QCOMPARE(server->stats().unauthorized, 0LL);

  // TLS still needs the token.
  st = joinWith(address, withToken("wrong-token-0123456789abcdef", tlsOf(cert, false)));
  QVERIFY2(st.error_code() == grpc::StatusCode::PERMISSION_DENIED &&
               st.error_message().find("wrong run token") != std::string::npos,
           dasp::net::describe(st).c_str());
  QCOMPARE(server->stats().unauthorized, 1LL);

  // The right certificate and token: join, push, pull.
  dasp::net::PsClient client(address, kParameters, withToken(token, tlsOf(cert, false)));
  st = client.join(workerJoin(), reply, kDeadlineS);
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  std::vector<float> gradient(static_cast<std::size_t>(kParameters), 0.5f);
  pb::PushRequest push;
  push.set_rank(0);
  pb::PushReply pushed;
  st = client.pushGradient(push, gradient.data(), pushed, kDeadlineS);
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  pb::PullRequest pull;
  pull.set_rank(0);
  pb::PullReply pulled;
  const float* params = nullptr;
  st = client.pullParameters(pull, pulled, params, kDeadlineS);
  QVERIFY2(st.ok() && params != nullptr, dasp::net::describe(st).c_str());
  QCOMPARE(pulled.version(), 1LL);
  QVERIFY(params[0] != 0.0f);
  server->shutdown(0.5);
}

void TestSecurity::tlsClientDialingAnIpUsesTheCertificatesName() {
  if (!haveOpenssl()) QSKIP("openssl is not installed: cannot make a certificate");
  // A certificate that names only a host (no IP, no localhost), as lab certificates often do.
  const QString dir = m_dir.filePath("host-only");
  QVERIFY(QDir().mkpath(dir));
  QProcess p;
  p.start(QStringLiteral("openssl"),
          {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
           "-subj", "/CN=lab-host", "-addext", "subjectAltName=DNS:lab-host", "-keyout", dir + "/key.pem", "-out",
           dir + "/cert.pem"});
  QVERIFY(p.waitForFinished(60000));
  QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  const Cert cert{dir + "/cert.pem", dir + "/key.pem"};
  const auto clientTls = tlsOf(cert, false);
  QCOMPARE(dasp::net::targetNameFor("127.0.0.1:1", *clientTls), std::string("lab-host"));
  const std::string token = "host-token-0123456789abcdef";
  auto server = startServer(withToken(token, tlsOf(cert, true)));
  const auto address = addressOf(*server);
  // Without the override the name check fails (the certificate does not name 127.0.0.1)...
  {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = clientTls->certPem;
    auto stub = pb::ParameterServer::NewStub(grpc::CreateChannel(address, grpc::SslCredentials(ssl)));
    grpc::ClientContext c;
    dasp::net::setDeadline(c, kDeadlineS);
    c.AddMetadata(dasp::net::kTokenMetadataKey, token);
    pb::JoinReply reply;
    const auto st = stub->Join(&c, workerJoin(), &reply);
    QVERIFY2(st.error_code() == grpc::StatusCode::UNAVAILABLE, dasp::net::describe(st).c_str());
  }
  // ...with it (openChannel), the client checks the certificate against lab-host.
  const auto st = joinWith(address, withToken(token, clientTls));
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  server->shutdown(0.5);
}

void TestSecurity::manualServerWritesItsTokenFile() {
  const QString specPath = m_dir.filePath("manual.json");
  {
    QFile f(specPath);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"model": {"name": "logreg"}, "dataset": {"name": "synthetic", "synthetic": {"train_count": 256,
      "test_count": 64}}, "strategy": {"name": "asp"}, "cluster": {"count": 1}, "device": "cpu"})");
  }
  auto env = QProcessEnvironment::systemEnvironment();
  env.remove(QString::fromLatin1(dasp::net::kTokenEnvironment));
  // A worker without any token refuses to start, saying how to give it one.
  {
    QProcess worker;
    worker.setProcessEnvironment(env);
    worker.start(daspBin(), {"worker", "--server", "127.0.0.1:1"});
    QVERIFY(worker.waitForFinished(30000));
    QVERIFY(worker.exitCode() != 0);
    const auto err = QString::fromUtf8(worker.readAllStandardError());
    QVERIFY2(err.contains("no run token") && err.contains("DASP_RUN_TOKEN") && err.contains("--token-file"),
             qPrintable(err));
  }
  QProcess server;
  server.setProcessEnvironment(env);
  server.start(daspBin(), {"server", "--spec", specPath, "--workers", "1", "--port", "0"});
  QVERIFY(server.waitForStarted());
  QString out;
  const QRegularExpression listening(QStringLiteral("dasp-server listening (\\S+) "));
  QTRY_VERIFY_WITH_TIMEOUT((out += QString::fromUtf8(server.readAllStandardOutput())).contains(listening), 30000);
  const auto tokenMatch = QRegularExpression(QStringLiteral("dasp-server token-file (\\S+) ")).match(out);
  QVERIFY2(tokenMatch.hasMatch(), qPrintable(out));
  const std::string tokenFile = tokenMatch.captured(1).toStdString();
  const std::string address = listening.match(out).captured(1).toStdString();
  QVERIFY2(out.contains("bind=127.0.0.1") && out.contains("tls=off"), qPrintable(out));
  struct stat st {};
  QCOMPARE(::stat(tokenFile.c_str(), &st), 0);
  QCOMPARE(static_cast<int>(st.st_mode & 0777), 0600);
  auto token = dasp::net::readTokenFile(tokenFile);
  QVERIFY2(token.isOk(), token.message().c_str());
  QVERIFY(std::regex_match(token.value(), std::regex("^[0-9a-f]{32}$")));

  dasp::net::PsClient good(address, kParameters, withToken(token.value()));
  pb::JoinRequest probe;
  probe.set_role("probe");
  pb::JoinReply reply;
  auto status = good.join(probe, reply, kDeadlineS);
  QVERIFY2(status.ok(), dasp::net::describe(status).c_str());
  QCOMPARE(reply.spec().model().name(), std::string("logreg"));
  dasp::net::PsClient stranger(address, kParameters);  // this process's own token
  QCOMPARE(stranger.join(probe, reply, kDeadlineS).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  server.terminate();  // SIGTERM: a clean stop
  QVERIFY(server.waitForFinished(30000));
  out += QString::fromUtf8(server.readAllStandardOutput());
  QVERIFY2(out.contains(", 1 unauthorized"), qPrintable(out));
  QVERIFY2(::access(tokenFile.c_str(), F_OK) != 0, "the token file outlived the server");
}

void TestSecurity::unreadableTlsFilesStopTheStart() {
  const QString missingCert = m_dir.filePath("absent/cert.pem");
  const QString missingKey = m_dir.filePath("absent/key.pem");
  // `dasp run`: the runner reads the certificate before it starts any node.
  const QString specPath = m_dir.filePath("unreadable.json");
  {
    QFile f(specPath);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QStringLiteral(R"({"model": {"name": "logreg"}, "dataset": {"name": "synthetic"},
      "strategy": {"name": "asp"}, "cluster": {"count": 1}, "stop": {"max_seconds": 2}, "device": "cpu",
      "security": {"tls": true, "tls_cert": "%1", "tls_key": "%2"}})")
                .arg(missingCert, missingKey)
                .toUtf8());
  }
  QProcess run;
  run.start(daspBin(), {"run", specPath, "--db", m_dir.filePath("unreadable.sqlite"), "--quiet"});
  QVERIFY(run.waitForFinished(60000));
  QVERIFY(run.exitCode() != 0);
  auto err = QString::fromUtf8(run.readAllStandardError());
  QVERIFY2(err.contains("security.tls_cert") && err.contains(missingCert), qPrintable(err));
  // `dasp server`: a key it cannot read is named before it listens.
  if (!haveOpenssl()) QSKIP("openssl is not installed: the server case needs a readable certificate");
  QString error;
  const auto cert = makeLabCert(m_dir.filePath("unreadable-key"), {}, &error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  QProcess server;
  server.start(daspBin(), {"server", "--spec", specPath, "--workers", "1", "--port", "0", "--tls-cert", cert.cert,
                           "--tls-key", missingKey});
  QVERIFY(server.waitForFinished(60000));
  QVERIFY(server.exitCode() != 0);
  err = QString::fromUtf8(server.readAllStandardError());
  QVERIFY2(err.contains("security.tls_key") && err.contains(missingKey), qPrintable(err));
  QVERIFY(!QString::fromUtf8(server.readAllStandardOutput()).contains("listening"));
}

void TestSecurity::tlsRunCompletes() {
  if (!haveOpenssl()) QSKIP("openssl is not installed: tools/make-lab-cert.sh cannot make a certificate");
  QString error;
  const auto cert = makeLabCert(m_dir.filePath("run-tls"), {"lab-host"}, &error);
  QVERIFY2(error.isEmpty(), qPrintable(error));
  const QString specPath = m_dir.filePath("tls-run.json");
  {
    QFile f(specPath);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QStringLiteral(R"({
      "name": "tls-run",
      "model": {"name": "logreg"},
      "dataset": {"name": "synthetic", "synthetic": {"train_count": 2048, "test_count": 256}},
      "batch_size": 32,
      "cluster": {"count": 2, "base_iteration_ms": 10},
      "strategy": {"name": "asp"},
      "stop": {"max_seconds": 4},
      "evaluation": {"every_s": 0.3, "every_steps": 1000000},
      "security": {"tls": true, "tls_cert": "%1", "tls_key": "%2"},
      "device": "cpu"
    })").arg(cert.cert, cert.key).toUtf8());
  }
  const auto db = m_dir.filePath("tls-run.sqlite");
  QProcess p;
  p.start(daspBin(), {"run", specPath, "--db", db, "--json", "--quiet"});
  QVERIFY(p.waitForStarted());
  // Once it trains: every node got the token in its environment, none on its command line;
  // then an intruder with the certificate but another token calls the server.
  std::int64_t runId = 0;
  std::string address;
  std::vector<dasp::NodeRow> nodes;
  auto training = [&]() -> bool {
    auto store = dasp::RunStore::open(db.toStdString());
    if (!store) return false;
    auto runs = store.value()->listRuns();
    if (!runs || runs->empty()) return false;
    runId = runs->front().id;
    auto evals = store.value()->evaluations(runId);
    if (!evals || evals->empty()) return false;
    for (const auto& line : store.value()->logs(runId, "server").value()) {
      std::smatch m;
      static const std::regex listening(R"(dasp-server listening (\S+) )");
      if (std::regex_search(line.line, m, listening)) address = m[1].str();
    }
    nodes = store.value()->nodes(runId).value();
    return !address.empty() && nodes.size() >= 4;
  };
  QTRY_VERIFY_WITH_TIMEOUT(training(), 30000);
  std::string runToken;
  for (const auto& n : nodes) {
    std::string token;
    for (const auto& kv : procList(n.pid, "environ")) {
      if (kv.rfind(std::string(dasp::net::kTokenEnvironment) + "=", 0) == 0) token = kv.substr(kv.find('=') + 1);
    }
    QVERIFY2(!token.empty(), qPrintable(QString::fromStdString(n.node + ": no DASP_RUN_TOKEN in its environment")));
    QVERIFY(runToken.empty() || token == runToken);
    runToken = token;
    for (const auto& arg : procList(n.pid, "cmdline")) {
      QVERIFY2(arg.find(token) == std::string::npos, qPrintable(QString::fromStdString(n.node + ": token in argv")));
    }
  }
  QVERIFY(std::regex_match(runToken, std::regex("^[0-9a-f]{32}$")));
  const auto st = joinWith(address, withToken("intruder-0123456789abcdef", tlsOf(cert, false)));
  QVERIFY2(st.error_code() == grpc::StatusCode::PERMISSION_DENIED, dasp::net::describe(st).c_str());

  QVERIFY(p.waitForFinished(90000));
  const auto err = QString::fromUtf8(p.readAllStandardError());
  QVERIFY2(p.exitCode() == 0, qPrintable(err));
  const auto lines = QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n');
  const auto json = QJsonDocument::fromJson(lines.last().toUtf8()).object();
  QVERIFY2(json["updates"].toInt() > 10, qPrintable(lines.last()));
  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  QCOMPARE(store.value()->run(runId)->status, dasp::RunStatus::Completed);
  bool tlsOn = false, oneRefused = false;
  for (const auto& l : store.value()->logs(runId, "server").value()) {
    tlsOn = tlsOn || (l.line.find("dasp-server listening") != std::string::npos && l.line.find("tls=on") != std::string::npos);
    oneRefused = oneRefused || (l.line.find("dasp-server stopped") != std::string::npos &&
                                l.line.find(", 1 unauthorized") != std::string::npos);
  }
  QVERIFY(tlsOn);
  QVERIFY2(oneRefused, "the server's stop line does not count exactly the intruder's call");
  bool rejectEvent = false;
  for (const auto& e : store.value()->events(runId).value()) {
    rejectEvent = rejectEvent || (e.kind == dasp::v1::RunEvent::REJECT && e.detail.find("wrong run token") != std::string::npos);
  }
  QVERIFY(rejectEvent);
}

QTEST_GUILESS_MAIN(TestSecurity)
#include "tst_security.moc"
