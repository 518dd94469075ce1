// SPDX-License-Identifier: MIT
// The parameter server against a client that holds the run token (issue 15): a real
// `dasp server` with two real `dasp worker` processes training, and this test as the
// attacker, with wrong-size, empty, NaN/Inf, huge and outlier gradients, out-of-range
// ranks and versions, bogus chunk streams, out-of-range Control, Join and Report values,
// floods of joins and parked pulls, and Watch streams that are never read. Every call
// gets a clean status, the server stays up, its memory grows by a bounded amount, the
// parameters stay finite, and the workers keep training. A second case cuts off a
// watcher that does not read.
#include "tests/support/security_fixtures.h"
#include "core/params/parameter_store.h"
#include "tests/support/specs.h"

#include <QJsonArray>
#include <QScopeGuard>

#include <signal.h>

#include <cstdio>
#include <cstdlib>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <thread>

namespace pb = dasp::ps::v1;
using grpc::StatusCode;
using RE = dasp::v1::RunEvent;

namespace {

constexpr const char* kToken = "attacker-holds-this-token-0123456789";
constexpr double kDeadline = 10.0;

// VmRSS of a live process, in kB (0 when it cannot be read).
long rssKb(qint64 pid) {
  const std::string text = test_support::procFile(pid, "status");
  const auto at = text.find("VmRSS:");
  return at == std::string::npos ? 0 : std::stol(text.substr(at + 6));
}

std::string bytesOf(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// The attacker: a raw stub whose every call carries the run token and a deadline.
class Attacker {
 public:
  Attacker(const std::string& address, std::int64_t parameters)
      : m_parameters(parameters),
        m_stub(pb::ParameterServer::NewStub(dasp::net::openChannel(
            address, security_fixtures::withToken(kToken), grpc::ChannelArguments()))) {}
  pb::ParameterServer::Stub& stub() { return *m_stub; }
  void prepare(grpc::ClientContext& c, double deadline = kDeadline) const {
    dasp::net::setDeadline(c, deadline);
    c.AddMetadata(dasp::net::kTokenMetadataKey, kToken);
  }
  std::vector<float> gradient(float value) const { return std::vector<float>(static_cast<std::size_t>(m_parameters), value); }
  grpc::Status push(int rank, const std::string& gradient, std::int64_t base = 0) {
    grpc::ClientContext c;
    prepare(c);
    pb::PushRequest req;
    req.set_rank(rank);
    req.set_base_version(base);
    req.set_gradient(gradient);
    pb::PushReply reply;
    return m_stub->Push(&c, req, &reply);
  }
  grpc::Status pushPull(int rank, const std::string& gradient) {
    grpc::ClientContext c;
    prepare(c);
    pb::PushRequest req;
    req.set_rank(rank);
    req.set_gradient(gradient);
    pb::PullReply reply;
    return m_stub->PushPull(&c, req, &reply);
  }
  // A chunked push of the given chunks (each: header rank or -1 for none, and data).
  grpc::Status chunks(const std::vector<std::pair<int, std::string>>& parts) {
    grpc::ClientContext c;
    prepare(c);
    pb::PushReply reply;
    auto writer = m_stub->PushChunks(&c, &reply);
    for (const auto& [rank, data] : parts) {
      pb::PushChunk chunk;
      if (rank != -1) chunk.mutable_header()->set_rank(rank);
      chunk.set_data(data);
      if (!writer->Write(chunk)) break;
    }
    (void)writer->WritesDone();
    return writer->Finish();
  }
  grpc::Status join(const pb::JoinRequest& req) {
    grpc::ClientContext c;
    prepare(c);
    pb::JoinReply reply;
    return m_stub->Join(&c, req, &reply);
  }
  grpc::Status control(const pb::ControlRequest& req) {
    grpc::ClientContext c;
    prepare(c);
    pb::ControlReply reply;
    return m_stub->Control(&c, req, &reply);
  }
  grpc::Status report(const pb::EvaluationReport& req) {
    grpc::ClientContext c;
    prepare(c);
    pb::ReportReply reply;
    return m_stub->Report(&c, req, &reply);
  }
  // The evaluator's pull: the parameters once the version is at least `minVersion`.
  grpc::Status pullParameters(std::int64_t minVersion, pb::PullReply& reply, double deadline = kDeadline) {
    grpc::ClientContext c;
    prepare(c, deadline);
    pb::PullRequest req;
    req.set_rank(-1);
    req.set_min_version(minVersion);
    return m_stub->Pull(&c, req, &reply);
  }

 private:
  std::int64_t m_parameters;
  std::unique_ptr<pb::ParameterServer::Stub> m_stub;
};

// Calls started with the callback API whose statuses arrive on gRPC's threads.
class Inflight {
 public:
  std::function<void(grpc::Status)> done() {
    {
      std::lock_guard<std::mutex> lock(m_mu);
      ++m_started;
    }
    return [this](grpc::Status st) {
      std::lock_guard<std::mutex> lock(m_mu);
      ++m_codes[st.error_code()];
      ++m_finished;
      m_cv.notify_all();
    };
  }
  // Waits until `n` calls have finished (false at the deadline).
  bool waitFinished(int n, double seconds) {
    std::unique_lock<std::mutex> lock(m_mu);
    return m_cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return m_finished >= n; });
  }
  int count(StatusCode code) {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_codes[code];
  }
  int finished() {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_finished;
  }

 private:
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::map<StatusCode, int> m_codes;
  int m_started = 0, m_finished = 0;
};

// An authorized watcher that reads everything, as the runner does, on its own thread.
class Reader {
 public:
  explicit Reader(Attacker& a) {
    a.prepare(m_context, 600);
    m_reader = a.stub().Watch(&m_context, pb::WatchRequest());
    m_thread = std::thread([this] {
      pb::EventBatch batch;
      while (m_reader->Read(&batch)) {
        std::lock_guard<std::mutex> lock(m_mu);
        for (const auto& e : batch.events()) m_events.push_back(e);
      }
    });
  }
  ~Reader() {
    m_context.TryCancel();
    m_thread.join();
    (void)m_reader->Finish();
  }
  std::vector<pb::ClusterEvent> events() {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_events;
  }

 private:
  grpc::ClientContext m_context;
  std::unique_ptr<grpc::ClientReader<pb::EventBatch>> m_reader;
  std::thread m_thread;
  std::mutex m_mu;
  std::vector<pb::ClusterEvent> m_events;
};

// The run: logreg on synthetic data, ASP, two workers, until the test stops it.
QString runSpec(const QString& dir) {
  test_support::SyntheticSpec base;
  base.name = QStringLiteral("adversarial");
  base.workers = 2;
  QJsonObject spec = base.json();
  QJsonObject stop;
  stop["max_updates"] = 1000000;
  spec["stop"] = stop;
  return test_support::writeSpecFile(dir, "adversarial", spec);
}

QProcessEnvironment tokenEnvironment() {
  auto env = QProcessEnvironment::systemEnvironment();
  env.insert(QString::fromLatin1(dasp::net::kTokenEnvironment), QString::fromLatin1(kToken));
  return env;
}

}  // namespace

class TestAdversarial : public QObject {
  Q_OBJECT

 private slots:
  void attackerWithTheToken();
  void unreadWatchIsCutOff();

 private:
  void attackGradients(Attacker& a, std::int64_t n, int& refusedByGuard);
  void attackChunks(Attacker& a, std::int64_t n, int& refusedByGuard);
  void attackFields(Attacker& a, std::int64_t n);
  QTemporaryDir m_dir;
};

// Gradients: wrong size, empty, NaN, Inf, huge, outliers (unary and PushPull); out-of-range
// ranks, versions and other push fields. Adds the guard's refusals to `refusedByGuard`.
void TestAdversarial::attackGradients(Attacker& a, std::int64_t n, int& refusedByGuard) {
  const std::vector<float> nan = a.gradient(std::numeric_limits<float>::quiet_NaN());
  std::vector<float> oneInf = a.gradient(0.001f);
  oneInf[3] = std::numeric_limits<float>::infinity();
  const std::string huge = bytesOf(a.gradient(3e38f));
  const std::string outlier = bytesOf(a.gradient(100.0f));  // norm 100·√n: far beyond 20 × a real one
  const std::vector<std::string> bad{bytesOf(std::vector<float>(static_cast<std::size_t>(n - 1), 0.01f)),
                                     std::string(),
                                     bytesOf(nan),
                                     bytesOf(oneInf),
                                     huge,
                                     bytesOf(a.gradient(1e30f)),
                                     outlier,
                                     std::string(static_cast<std::size_t>(n) * 4 + 3, '\x7f')};
  for (int round = 0; round < 100; ++round) {
    for (std::size_t i = 0; i < bad.size(); ++i) {
      const int rank = static_cast<int>(i % 2);
      for (const auto& status : {a.push(rank, bad[i]), a.pushPull(rank, bad[i])}) {
        QVERIFY2(status.error_code() == StatusCode::INVALID_ARGUMENT,
                 qPrintable(QString("gradient %1: %2").arg(i).arg(QString::fromStdString(dasp::net::describe(status)))));
      }
      if (i >= 2 && i <= 6) refusedByGuard += 2;
    }
  }
  // The huge one is refused by the hard cap, the outlier as an outlier, each saying so.
  auto capStatus = a.push(0, huge);
  QVERIFY2(capStatus.error_message().find("max_norm") != std::string::npos, capStatus.error_message().c_str());
  auto outlierStatus = a.push(1, outlier);
  QVERIFY2(outlierStatus.error_message().find("outlier") != std::string::npos, outlierStatus.error_message().c_str());
  refusedByGuard += 2;
  // Out-of-range ranks and versions.
  const std::string small = bytesOf(a.gradient(0.0f));
  for (int rank : {-1, 2, 1 << 30, std::numeric_limits<int>::min()}) {
    QCOMPARE(a.push(rank, small).error_code(), StatusCode::INVALID_ARGUMENT);
  }
  QCOMPARE(a.push(0, small, -5).error_code(), StatusCode::INVALID_ARGUMENT);
  // A version from the future counts as the current one: applied (a zero gradient).
  auto st = a.push(0, small, std::numeric_limits<std::int64_t>::max());
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  {
    grpc::ClientContext c;
    a.prepare(c);
    pb::PushRequest req;
    req.set_rank(0);
    req.set_gradient(small);
    req.set_compute_s(std::numeric_limits<double>::infinity());
    pb::PushReply reply;
    st = a.stub().Push(&c, req, &reply);
    QCOMPARE(st.error_code(), StatusCode::INVALID_ARGUMENT);
    QVERIFY2(st.error_message().find("compute_s") != std::string::npos, st.error_message().c_str());
  }
  {
    grpc::ClientContext c;
    a.prepare(c);
    pb::PushRequest req;
    req.set_rank(1);
    req.set_gradient(small);
    req.set_backlog_total(1000000);
    pb::PushReply reply;
    QCOMPARE(a.stub().Push(&c, req, &reply).error_code(), StatusCode::INVALID_ARGUMENT);
  }
}

// Bogus chunk streams, and two chunked pushes of one rank at once.
void TestAdversarial::attackChunks(Attacker& a, std::int64_t n, int& refusedByGuard) {
  const std::vector<float> nan = a.gradient(std::numeric_limits<float>::quiet_NaN());
  // Bogus chunk streams: no header, an unknown rank, too many or too few bytes, two
  // headers, NaN in chunks.
  const std::string half = bytesOf(std::vector<float>(static_cast<std::size_t>(n / 2), 0.01f));
  const std::vector<std::vector<std::pair<int, std::string>>> streams{
      {{-1, half}},
      {{7, half}},
      {{0, half}, {-1, half}, {-1, half}},
      {{0, half}},
      {{0, half}, {1, half}},
      {{1, bytesOf(nan)}},
      {}};
  refusedByGuard += 1;  // the NaN one
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const auto status = a.chunks(streams[i]);
    QVERIFY2(status.error_code() == StatusCode::INVALID_ARGUMENT,
             qPrintable(QString("stream %1: %2").arg(i).arg(QString::fromStdString(dasp::net::describe(status)))));
  }
  // Two chunked pushes of one rank at once: the second is refused (one receive buffer).
  // A second whose header lands before the first's claims the buffer itself, and then the
  // first is the one refused: such a try (the second ends as half a gradient) starts both
  // again, as polling the server with second streams would keep stealing the buffer.
  bool secondRefused = false;
  for (int attempt = 0; attempt < 50 && !secondRefused; ++attempt) {
    grpc::ClientContext first;
    a.prepare(first);
    pb::PushReply reply;
    auto writer = a.stub().PushChunks(&first, &reply);
    pb::PushChunk chunk;
    chunk.mutable_header()->set_rank(1);
    chunk.set_data(half);
    QVERIFY(writer->Write(chunk));
    const auto second = a.chunks({{1, half}}).error_code();
    (void)writer->WritesDone();
    const auto firstEnd = writer->Finish().error_code();
    if (second == StatusCode::RESOURCE_EXHAUSTED) {
      QCOMPARE(firstEnd, StatusCode::INVALID_ARGUMENT);  // half a gradient
      secondRefused = true;
    } else {
      QCOMPARE(second, StatusCode::INVALID_ARGUMENT);  // it came first: half a gradient
    }
  }
  QVERIFY2(secondRefused, "no second chunked push of rank 1 was refused while the first was in flight");

}

// Out-of-range Control, Join, Report and Pull fields.
void TestAdversarial::attackFields(Attacker& a, std::int64_t n) {
  const std::vector<float> nan = a.gradient(std::numeric_limits<float>::quiet_NaN());
  grpc::Status st;
  auto control = [&](int rank, double slowdown, pb::ControlRequest::Action action) {
    pb::ControlRequest req;
    req.set_action(action);
    req.set_rank(rank);
    req.set_slowdown(slowdown);
    req.set_t_s(slowdown);
    return a.control(req);
  };
  for (double s : {1e12, 1001.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    st = control(0, s, pb::ControlRequest::SET_SLOWDOWN);
    QVERIFY2(st.error_code() == StatusCode::INVALID_ARGUMENT && st.error_message().find("slowdown") != std::string::npos,
             dasp::net::describe(st).c_str());
  }
  QCOMPARE(control(2, 2.0, pb::ControlRequest::SET_SLOWDOWN).error_code(), StatusCode::INVALID_ARGUMENT);
  QCOMPARE(control(-7, 0, pb::ControlRequest::MARK_DOWN).error_code(), StatusCode::INVALID_ARGUMENT);
  QCOMPARE(control(-1, std::nan(""), pb::ControlRequest::PROMOTE).error_code(), StatusCode::INVALID_ARGUMENT);
  QCOMPARE(control(0, 0, static_cast<pb::ControlRequest::Action>(42)).error_code(), StatusCode::INVALID_ARGUMENT);
  pb::JoinRequest join = security_fixtures::workerJoin();
  join.set_parameter_count(n);
  join.set_model("logreg");
  join.set_role("admin");
  st = a.join(join);
  QVERIFY2(st.error_code() == StatusCode::INVALID_ARGUMENT && st.error_message().find("unknown role") != std::string::npos,
           dasp::net::describe(st).c_str());
  join.set_role("worker");
  join.set_requested_rank(99);
  QCOMPARE(a.join(join).error_code(), StatusCode::INVALID_ARGUMENT);
  join.set_requested_rank(0);
  join.set_held_parameters(bytesOf(nan));
  join.set_held_version(1LL << 60);
  QCOMPARE(a.join(join).error_code(), StatusCode::INVALID_ARGUMENT);
  join.clear_held_parameters();
  join.set_model("resnet8");
  QCOMPARE(a.join(join).error_code(), StatusCode::FAILED_PRECONDITION);
  pb::EvaluationReport report;
  report.set_accuracy(std::nan(""));
  QCOMPARE(a.report(report).error_code(), StatusCode::INVALID_ARGUMENT);
  report.set_accuracy(0.5);
  report.set_version(-3);
  QCOMPARE(a.report(report).error_code(), StatusCode::INVALID_ARGUMENT);
  {
    grpc::ClientContext c;
    a.prepare(c);
    pb::PullRequest req;
    req.set_rank(5);
    pb::PullReply reply;
    QCOMPARE(a.stub().Pull(&c, req, &reply).error_code(), StatusCode::INVALID_ARGUMENT);
  }

}

namespace {

// After an attack: the parameters are finite and sane, and training goes on (100 more
// versions), with every worker still running.
void verifyTrainingGoesOn(Attacker& a, std::int64_t n, const std::vector<std::unique_ptr<QProcess>>& workers) {
  pb::PullReply pulled;
  auto st = a.pullParameters(0, pulled);
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  const std::int64_t versionAfter = pulled.version();
  QCOMPARE(static_cast<std::int64_t>(pulled.parameters().size()), n * 4);
  const auto* p = reinterpret_cast<const float*>(pulled.parameters().data());
  QVERIFY(dasp::allFinite(p, n));
  float largest = 0;
  for (std::int64_t i = 0; i < n; ++i) largest = std::max(largest, std::abs(p[i]));
  QVERIFY2(largest < 100, qPrintable(QString::number(largest)));
  // The parked pulls' cancellations reach the server on its own threads: until it has let
  // them all go, one more parked pull of rank -1 is refused by the bound it keeps.
  for (int tries = 0; tries < 10000; ++tries) {
    st = a.pullParameters(versionAfter + 100, pulled, 60);
    if (st.error_code() != StatusCode::RESOURCE_EXHAUSTED) break;
  }
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  for (auto& w : workers) QCOMPARE(w->state(), QProcess::Running);
}

// Every refusal of the guard was an event with the worker's rank, the norm and its code.
void verifyGuardEvents(Reader& reader, int refusedByGuard) {
  int guardEvents = 0, hugeSeen = 0;
  for (const auto& e : reader.events()) {
    if (e.kind() != pb::ClusterEvent::REJECT || e.code() != RE::GRADIENT_REFUSED) continue;
    ++guardEvents;
    QVERIFY(e.rank() == 0 || e.rank() == 1);
    if (e.norm() > 1e38) ++hugeSeen;
  }
  QCOMPARE(guardEvents, refusedByGuard);
  QVERIFY(hugeSeen >= 200);
}

}  // namespace

void TestAdversarial::attackerWithTheToken() {
  const QString specPath = runSpec(m_dir.path());
  QProcess server;
  server.setProcessEnvironment(tokenEnvironment());
  test_support::startDasp(server, {"server", "--spec", specPath, "--workers", "2", "--port", "0"});
  QVERIFY(server.waitForStarted());
  QString out;
  const QRegularExpression listening(QStringLiteral("dasp-server listening (\\S+) parameters=(\\d+)"));
  QTRY_VERIFY_WITH_TIMEOUT((out += QString::fromUtf8(server.readAllStandardOutput())).contains(listening), 30000);
  const auto match = listening.match(out);
  const std::string address = match.captured(1).toStdString();
  const std::int64_t n = match.captured(2).toLongLong();
  QVERIFY(n > 0);
  std::vector<std::unique_ptr<QProcess>> workers;
  for (int r = 0; r < 2; ++r) {
    auto w = std::make_unique<QProcess>();
    w->setProcessEnvironment(tokenEnvironment());
    w->setProcessChannelMode(QProcess::MergedChannels);
    test_support::startDasp(*w, {"worker", "--server", QString::fromStdString(address), "--rank", QString::number(r), "--name",
              QStringLiteral("worker-%1").arg(r)});
    QVERIFY(w->waitForStarted());
    workers.push_back(std::move(w));
  }
  Attacker a(address, n);
  Reader reader(a);
  pb::PullReply pulled;
  // Training runs: 100 updates, and the guard's warm-up is long over.
  auto st = a.pullParameters(100, pulled, 60);
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  const long rssBefore = rssKb(server.processId());
  QVERIFY(rssBefore > 0);

  int refusedByGuard = 0;
  attackGradients(a, n, refusedByGuard);
  attackChunks(a, n, refusedByGuard);
  attackFields(a, n);
  if (QTest::currentTestFailed()) return;
  const std::vector<float> nan = a.gradient(std::numeric_limits<float>::quiet_NaN());
  pb::JoinRequest join = security_fixtures::workerJoin();
  join.set_parameter_count(n);

  // --- floods: joins, parked pulls, Watch streams nobody reads.
  Inflight joins, pulls;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<pb::JoinReply>> joinReplies;
  std::vector<std::unique_ptr<pb::PullReply>> pullReplies;
  join.set_model("logreg");
  join.set_requested_rank(-1);  // every rank is taken: RESOURCE_EXHAUSTED
  constexpr int kJoins = 2000, kPulls = 500, kWatches = 40;
  // On every way out (a failed check returns early) the calls still in flight are cancelled
  // and finish before their contexts and replies are freed: gRPC writes into them until then.
  const auto drainCalls = qScopeGuard([&] {
    for (auto& c : contexts) c->TryCancel();
    (void)joins.waitFinished(kJoins, 60);
    (void)pulls.waitFinished(kPulls, 60);
  });
  for (int i = 0; i < kJoins; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    a.prepare(*contexts.back());
    joinReplies.push_back(std::make_unique<pb::JoinReply>());
    a.stub().async()->Join(contexts.back().get(), &join, joinReplies.back().get(), joins.done());
  }
  pb::PullRequest never;
  never.set_rank(-1);
  never.set_min_version(std::numeric_limits<std::int64_t>::max());  // parked for ever
  std::vector<grpc::ClientContext*> parkedContexts;
  for (int i = 0; i < kPulls; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    a.prepare(*contexts.back(), 120);
    parkedContexts.push_back(contexts.back().get());
    pullReplies.push_back(std::make_unique<pb::PullReply>());
    a.stub().async()->Pull(contexts.back().get(), &never, pullReplies.back().get(), pulls.done());
  }
  std::vector<std::unique_ptr<grpc::ClientContext>> watchContexts;
  std::vector<std::unique_ptr<grpc::ClientReader<pb::EventBatch>>> unread;
  for (int i = 0; i < kWatches; ++i) {
    watchContexts.push_back(std::make_unique<grpc::ClientContext>());
    a.prepare(*watchContexts.back(), 120);
    unread.push_back(a.stub().Watch(watchContexts.back().get(), pb::WatchRequest()));
  }
  // The streams nobody reads end on every way out, before their contexts go.
  const auto endWatches = qScopeGuard([&] {
    for (auto& c : watchContexts) c->TryCancel();
    for (auto& r : unread) (void)r->Finish();
  });
  QVERIFY(joins.waitFinished(kJoins, 60));
  QCOMPARE(joins.count(StatusCode::RESOURCE_EXHAUSTED), kJoins);
  // At most 8 pulls of one rank wait; the others are refused at once.
  QVERIFY(pulls.waitFinished(kPulls - 8, 60));
  QCOMPARE(pulls.count(StatusCode::RESOURCE_EXHAUSTED), kPulls - 8);
  // More refused gradients while the watchers do not read: their events pile up to a bound.
  for (int i = 0; i < 3000; ++i) QCOMPARE(a.push(i % 2, bytesOf(nan)).error_code(), StatusCode::INVALID_ARGUMENT);
  refusedByGuard += 3000;

  // --- the server is up, its memory bounded, the parameters finite, training goes on.
  const long rssAfter = rssKb(server.processId());
  const long growthKb = rssAfter - rssBefore;
  qInfo("server VmRSS %ld kB before the attack, %ld kB after (growth %ld kB)", rssBefore, rssAfter, growthKb);
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer keeps freed memory in its quarantine: the server's RSS then says
  // nothing of its own bounds (the release build's run checks them).
  qInfo("AddressSanitizer build: the RSS bound is not checked");
#else
  QVERIFY2(growthKb < 96 * 1024, qPrintable(QString("server RSS grew by %1 kB").arg(growthKb)));
#endif
  QCOMPARE(server.state(), QProcess::Running);
  // A further watcher is refused: the streams nobody reads hold every slot but the reader's.
  {
    grpc::ClientContext c;
    a.prepare(c);
    auto extra = a.stub().Watch(&c, pb::WatchRequest());
    pb::EventBatch batch;
    while (extra->Read(&batch)) {
    }
    QCOMPARE(extra->Finish().error_code(), StatusCode::RESOURCE_EXHAUSTED);
  }
  // The parked pulls end when their callers give up (as a deadline would end them).
  for (auto* c : parkedContexts) c->TryCancel();
  QVERIFY(pulls.waitFinished(kPulls, 30));
  QCOMPARE(pulls.count(StatusCode::CANCELLED), 8);
  verifyTrainingGoesOn(a, n, workers);
  verifyGuardEvents(reader, refusedByGuard);
  if (QTest::currentTestFailed()) return;

  // The run ends cleanly: the workers stop when told, the server on SIGTERM.
  pb::ControlRequest stopRun;
  stopRun.set_action(pb::ControlRequest::STOP);
  st = a.control(stopRun);
  QVERIFY2(st.ok(), dasp::net::describe(st).c_str());
  for (auto& w : workers) {
    QVERIFY(w->waitForFinished(30000));
    QVERIFY2(w->exitCode() == 0, w->readAll().constData());
  }
  server.terminate();
  QVERIFY(server.waitForFinished(30000));
  out += QString::fromUtf8(server.readAllStandardOutput());
  QCOMPARE(server.exitCode(), 0);
  QVERIFY2(out.contains(QStringLiteral("gradient guard: %1 refused").arg(refusedByGuard)), qPrintable(out));
}

// A watcher that never reads is cut off once kWatcherPendingMax events wait for it (the
// server counts it; the stream ends with RESOURCE_EXHAUSTED); a watcher that reads goes on
// getting every event. The one that does
// not read is another process (this binary, see main()) stopped with SIGSTOP after its
// first batch: nothing on its side takes in data, so the server's writes to it stall.
void TestAdversarial::unreadWatchIsCutOff() {
  using namespace security_fixtures;
  auto server = startServer(withToken(kToken));
  const auto address = addressOf(*server);
  Attacker a(address, kParameters);
  Reader reader(a);
  QProcess child;
  auto env = QProcessEnvironment::systemEnvironment();
  env.insert(QStringLiteral("DASP_TEST_WATCH_AND_STOP"), QString::fromStdString(address));
  child.setProcessEnvironment(env);
  child.start(QCoreApplication::applicationFilePath(), {});
  QVERIFY(child.waitForStarted());
  pb::PushRequest req;
  req.set_rank(0);
  req.set_gradient(bytesOf(std::vector<float>(static_cast<std::size_t>(kParameters), std::nanf(""))));
  auto stopped = [&] {
    const auto stat = test_support::procFile(child.processId(), "stat");
    const auto close = stat.rfind(')');
    return close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'T';
  };
  // One refused push at a time until the child has its first batch and has stopped.
  int sent = 0;
  QTRY_VERIFY_WITH_TIMEOUT((++sent, a.push(0, req.gradient()).ok() || stopped()), 30000);
  // 250,000 refused pushes, 250,000 REJECT events (in flights of 500): more than the
  // transports between the two take in, and more than kWatcherPendingMax.
  constexpr int kPushes = 250000, kFlight = 500;
  Inflight pushes;
  for (int done = 0; done < kPushes; done += kFlight) {
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    std::vector<pb::PushReply> replies(kFlight);
    for (int i = 0; i < kFlight; ++i) {
      contexts.push_back(std::make_unique<grpc::ClientContext>());
      a.prepare(*contexts.back());
      a.stub().async()->Push(contexts.back().get(), &req, &replies[static_cast<std::size_t>(i)], pushes.done());
    }
    QVERIFY(pushes.waitFinished(done + kFlight, 60));
  }
  QCOMPARE(pushes.count(StatusCode::INVALID_ARGUMENT), kPushes);
  // The reader got every event; the stopped watcher was cut off: resumed, it reads what
  // was in flight and ends with RESOURCE_EXHAUSTED.
  auto refusals = [&] {
    int count = 0;
    for (const auto& e : reader.events()) count += e.code() == RE::GRADIENT_REFUSED ? 1 : 0;
    return count;
  };
  QTRY_COMPARE_WITH_TIMEOUT(refusals(), kPushes + sent, 30000);
  QCOMPARE(server->stats().guardRefused, static_cast<long long>(kPushes + sent));
  QCOMPARE(server->stats().watchersCutOff, 1LL);
  // Resumed, the child reads what was in flight; its stream ends with RESOURCE_EXHAUSTED
  // (or, when its connection went first, UNAVAILABLE: it is never answered OK).
  ::kill(static_cast<pid_t>(child.processId()), SIGCONT);
  QVERIFY(child.waitForFinished(60000));
  const auto said = QString::fromUtf8(child.readAllStandardOutput());
  QVERIFY2(child.exitCode() == 0 || said.contains("UNAVAILABLE"), qPrintable(said));
  qInfo("the cut-off watcher's stream ended: %s", qPrintable(said.trimmed()));
}

namespace {

// The child of unreadWatchIsCutOff: watches, stops itself after the first batch, and once
// continued reads to the end and prints the stream's status (exit 0 for RESOURCE_EXHAUSTED).
int watchAndStop(const std::string& address) {
  Attacker a(address, security_fixtures::kParameters);
  grpc::ClientContext c;
  a.prepare(c, 120);
  auto reader = a.stub().Watch(&c, pb::WatchRequest());
  pb::EventBatch batch;
  if (!reader->Read(&batch)) return 2;
  ::raise(SIGSTOP);
  while (reader->Read(&batch)) {
  }
  const auto st = reader->Finish();
  std::printf("%s\n", dasp::net::describe(st).c_str());
  return st.error_code() == StatusCode::RESOURCE_EXHAUSTED ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* address = std::getenv("DASP_TEST_WATCH_AND_STOP")) return watchAndStop(address);
  QCoreApplication app(argc, argv);
  TestAdversarial test;
  return QTest::qExec(&test, argc, argv);
}

#include "tst_adversarial.moc"
