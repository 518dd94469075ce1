// SPDX-License-Identifier: MIT
// Node traffic security, TLS: a TLS server refuses plaintext clients and serves TLS
// clients that trust its certificate (also when they dial 127.0.0.1 and the certificate
// names only a host); wrong or unreadable files are named; and a whole `dasp run` with
// security.tls completes, hands the token to its nodes through the environment only, and
// records a refused call as a "reject" event.
#include "tests/support/security_fixtures.h"

#include <fstream>

using namespace security_fixtures;

class TestTls : public QObject {
  Q_OBJECT

 private slots:
  void tlsFilesAreNamedWhenWrong();
  void targetNameRules();
  void tlsServerRefusesPlaintextAndServesTls();
  void tlsClientDialingAnIpUsesTheCertificatesName();
  void unreadableTlsFilesStopTheStart();
  void tlsRunCompletes();

 private:
  QTemporaryDir m_dir;
};
void TestTls::tlsFilesAreNamedWhenWrong() {
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

void TestTls::targetNameRules() {
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

void TestTls::tlsServerRefusesPlaintextAndServesTls() {
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
  // No payload socket with TLS: push and pull stay inside gRPC, encrypted.
  QCOMPARE(reply.payload_port(), 0);
  QVERIFY(!client.onPayloadSocket());
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

void TestTls::tlsClientDialingAnIpUsesTheCertificatesName() {
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

void TestTls::unreadableTlsFilesStopTheStart() {
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
  test_support::startDasp(run, {"run", specPath, "--db", m_dir.filePath("unreadable.sqlite"), "--quiet"});
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
  test_support::startDasp(server, {"server", "--spec", specPath, "--workers", "1", "--port", "0", "--tls-cert", cert.cert,
                           "--tls-key", missingKey});
  QVERIFY(server.waitForFinished(60000));
  QVERIFY(server.exitCode() != 0);
  err = QString::fromUtf8(server.readAllStandardError());
  QVERIFY2(err.contains("security.tls_key") && err.contains(missingKey), qPrintable(err));
  QVERIFY(!QString::fromUtf8(server.readAllStandardOutput()).contains("listening"));
}

void TestTls::tlsRunCompletes() {
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
  test_support::startDasp(p, {"run", specPath, "--db", db, "--json", "--quiet"});
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

QTEST_GUILESS_MAIN(TestTls)
#include "tst_tls.moc"
