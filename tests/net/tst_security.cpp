// SPDX-License-Identifier: MIT
// Node traffic security, the run token: every dasp.ps.v1 RPC without the run's token, or
// with another one, is refused (PERMISSION_DENIED) before it does anything, counted, and
// reported as a REJECT event, rate-limited under a flood; chain replicas authenticate to
// each other; a hand-started `dasp server` makes its own token file. TLS: tst_tls.cpp.
#include "tests/support/security_fixtures.h"

#include <fstream>

using namespace security_fixtures;

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
  void manualServerWritesItsTokenFile();

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
    test_support::startDasp(worker, {"worker", "--server", "127.0.0.1:1"});
    QVERIFY(worker.waitForFinished(30000));
    QVERIFY(worker.exitCode() != 0);
    const auto err = QString::fromUtf8(worker.readAllStandardError());
    QVERIFY2(err.contains("no run token") && err.contains("DASP_RUN_TOKEN") && err.contains("--token-file"),
             qPrintable(err));
  }
  QProcess server;
  server.setProcessEnvironment(env);
  test_support::startDasp(server, {"server", "--spec", specPath, "--workers", "1", "--port", "0"});
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

QTEST_GUILESS_MAIN(TestSecurity)
#include "tst_security.moc"
