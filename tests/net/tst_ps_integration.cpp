// SPDX-License-Identifier: MIT
// The parameter server over real gRPC on 127.0.0.1 with real LibTorch workers on
// synthetic data: every strategy trains (the loss falls) over every transport (TCP, the
// Unix socket, shared memory), and bad input is refused with a clear status.
#include "core/data/dataset_loader.h"
#include "core/spec/spec.h"
#include "ml/node_compute.h"
#include "net/client/nodes.h"
#include "net/client/ps_client.h"
#include "net/server/ps_server.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>

namespace {

dasp::ExperimentSpec smallSpec(const std::string& strategy, int workers) {
  dasp::ExperimentSpec spec;
  spec.mutable_model()->set_name("logreg");
  spec.mutable_dataset()->set_name("synthetic");
  spec.mutable_dataset()->mutable_synthetic()->set_train_count(3072);
  spec.mutable_dataset()->mutable_synthetic()->set_test_count(512);
  spec.mutable_strategy()->set_name(strategy);
  spec.mutable_strategy()->set_barrier_timeout_s(5);
  spec.mutable_cluster()->set_count(workers);
  spec.mutable_stop()->set_max_updates(60);
  spec.set_batch_size(32);
  spec.set_device("cpu");
  return dasp::withDefaults(spec);
}

struct Fixture {
  dasp::ExperimentSpec spec;
  dasp::TrainTest data;
  std::unique_ptr<dasp::net::ParameterServer> server;
  std::string address;
  std::int64_t parameters = 0;
};

std::unique_ptr<Fixture> startServer(const dasp::ExperimentSpec& spec, int workers) {
  auto f = std::make_unique<Fixture>();
  f->spec = spec;
  f->data = dasp::loadDataset(spec.dataset(), spec.seed()).value();
  dasp::net::ServerOptions options;
  options.spec = spec;
  options.workers = workers;
  options.modelName = spec.model().name();
  options.initialParameters = dasp::ml::initialParameters(spec, f->data.train).value();
  f->parameters = static_cast<std::int64_t>(options.initialParameters.size());
  auto server = dasp::net::ParameterServer::start(std::move(options));
  if (!server) qFatal("%s", server.message().c_str());
  f->server = std::move(server).value();
  f->address = "127.0.0.1:" + std::to_string(f->server->port());
  return f;
}

dasp::net::WorkerOptions workerOptions(const Fixture& f, int rank,
                                       dasp::net::LocalTransport transport = dasp::net::LocalTransport::Tcp) {
  dasp::net::WorkerOptions o;
  o.transport = transport;
  o.server = f.address;
  o.name = "worker-" + std::to_string(rank);
  o.requestedRank = rank;
  o.model = f.spec.model().name();
  o.parameters = f.parameters;
  o.connectTimeoutS = 10;
  return o;
}

double testLoss(const Fixture& f, const std::vector<float>& params) {
  auto evaluator = dasp::ml::TestSetEvaluator::create(f.spec, f.data.train, f.data.test, 0).value();
  return evaluator->evaluate(params.data()).loss;
}

// A server (ASP unless told) of a flat model of `n` parameters, all 1, updated by θ -= 0.5·g.
dasp::Result<std::unique_ptr<dasp::net::ParameterServer>> startFlatServer(std::int64_t n, int workers,
                                                                         const std::string& strategy = "asp") {
  dasp::net::ServerOptions options;
  options.spec = smallSpec(strategy, workers);
  options.spec.mutable_optimizer()->set_momentum(0.0);
  options.spec.mutable_optimizer()->set_lr(0.5);
  options.workers = workers;
  options.modelName = "flat";
  options.initialParameters.assign(static_cast<std::size_t>(n), 1.0f);
  return dasp::net::ParameterServer::start(std::move(options));
}

grpc::Status joinFlat(dasp::net::PsClient& client, std::int64_t n, int rank, const std::string& role = "worker") {
  dasp::ps::v1::JoinRequest join;
  join.set_role(role);
  join.set_model("flat");
  join.set_parameter_count(n);
  join.set_requested_rank(rank);
  dasp::ps::v1::JoinReply joined;
  return client.join(join, joined, 10);
}

constexpr dasp::net::LocalTransport kTransports[] = {dasp::net::LocalTransport::Tcp, dasp::net::LocalTransport::Unix,
                                                    dasp::net::LocalTransport::Shm};

}  // namespace

class TestPsIntegration : public QObject {
  Q_OBJECT

 private slots:
  void everyStrategyTrains_data();
  void everyStrategyTrains();
  void wrongGradientSizeIsRejected();
  void nanGradientIsRejectedAndNotApplied();
  void joinWithOtherModelIsRejected();
  void busyPortIsAClearError();
  void unreachableServerRetriesThenFails();
  void vanishedWorkerDoesNotDeadlockBsp();
  void largeModelArrivesExactly_data();
  void largeModelArrivesExactly();
  void pullInFlightKeepsItsVersion();
  void sharedMemorySlotsHoldTheServersParameters_data();
  void sharedMemorySlotsHoldTheServersParameters();
};

// Every strategy over every transport a worker on the server's host can use.
void TestPsIntegration::everyStrategyTrains_data() {
  QTest::addColumn<QString>("strategy");
  QTest::addColumn<int>("transport");
  for (const auto& s : dasp::knownStrategies()) {
    for (auto t : kTransports) {
      QTest::newRow((s + " over " + dasp::net::nameOf(t)).c_str()) << QString::fromStdString(s) << static_cast<int>(t);
    }
  }
}

void TestPsIntegration::everyStrategyTrains() {
  QFETCH(QString, strategy);
  QFETCH(int, transport);
  const auto asked = static_cast<dasp::net::LocalTransport>(transport);
  auto f = startServer(smallSpec(strategy.toStdString(), 3), 3);
  std::vector<float> initial;
  f->server->snapshot(initial);
  std::vector<std::thread> threads;
  std::vector<std::string> errors(3);
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      auto o = workerOptions(*f, r, asked);
      auto join = dasp::net::joinServer(o, "worker");
      if (!join) {
        errors[static_cast<std::size_t>(r)] = join.message();
        return;
      }
      const auto* client = dynamic_cast<const dasp::net::PsClient*>(join->client.get());
      if (client->transport() != asked) {
        errors[static_cast<std::size_t>(r)] = std::string("joined over ") + dasp::net::nameOf(client->transport());
        return;
      }
      auto source = dasp::ml::ShardGradientSource::create(f->spec, f->data.train, r, 3).value();
      auto stats = dasp::net::runWorker(o, join.value(), *source);
      if (!stats) errors[static_cast<std::size_t>(r)] = stats.message();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) QVERIFY2(e.empty(), e.c_str());
  const auto stats = f->server->stats();
  QVERIFY2(stats.version >= 60, qPrintable(QString::number(stats.version)));
  std::vector<float> trained;
  f->server->snapshot(trained);
  const double before = testLoss(*f, initial);
  const double after = testLoss(*f, trained);
  QVERIFY2(after < 0.7 * before, qPrintable(QString("%1: test loss %2 -> %3").arg(strategy).arg(before).arg(after)));
  f->server->shutdown();
}

void TestPsIntegration::wrongGradientSizeIsRejected() {
  auto f = startServer(smallSpec("asp", 1), 1);
  dasp::net::PsClient client(f->address, f->parameters);
  dasp::ps::v1::PushRequest push;
  push.set_rank(0);
  std::vector<float> grad(static_cast<std::size_t>(f->parameters - 1), 0.1f);
  push.mutable_gradient()->assign(reinterpret_cast<const char*>(grad.data()), grad.size() * 4);
  dasp::ps::v1::PushReply reply;
  auto status = client.push(push, reply, 5);
  QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const auto msg = status.error_message();
  QVERIFY2(msg.find(std::to_string(f->parameters - 1)) != std::string::npos &&
               msg.find(std::to_string(f->parameters)) != std::string::npos,
           msg.c_str());
  QCOMPARE(f->server->stats().rejected, 1LL);
  QCOMPARE(f->server->stats().version, 0LL);
}

void TestPsIntegration::nanGradientIsRejectedAndNotApplied() {
  auto f = startServer(smallSpec("asp", 1), 1);
  std::vector<float> before;
  f->server->snapshot(before);
  dasp::net::PsClient client(f->address, f->parameters);
  dasp::ps::v1::PushRequest push;
  push.set_rank(0);
  std::vector<float> grad(static_cast<std::size_t>(f->parameters), 0.1f);
  grad[7] = std::numeric_limits<float>::quiet_NaN();
  push.mutable_gradient()->assign(reinterpret_cast<const char*>(grad.data()), grad.size() * 4);
  dasp::ps::v1::PushReply reply;
  auto status = client.push(push, reply, 5);
  QCOMPARE(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  QVERIFY2(status.error_message().find("NaN") != std::string::npos, status.error_message().c_str());
  grad[7] = std::numeric_limits<float>::infinity();
  push.mutable_gradient()->assign(reinterpret_cast<const char*>(grad.data()), grad.size() * 4);
  QCOMPARE(client.push(push, reply, 5).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::vector<float> after;
  QCOMPARE(f->server->snapshot(after), 0LL);
  QVERIFY(before == after);
  QCOMPARE(f->server->stats().rejected, 2LL);
}

void TestPsIntegration::joinWithOtherModelIsRejected() {
  auto f = startServer(smallSpec("bsp", 2), 2);
  auto o = workerOptions(*f, 0);
  o.model = "mlp";
  o.parameters = 12345;
  auto join = dasp::net::joinServer(o, "worker");
  QVERIFY(!join.isOk());
  QVERIFY2(join.message().find("mlp") != std::string::npos && join.message().find("logreg") != std::string::npos,
           join.message().c_str());
}

void TestPsIntegration::busyPortIsAClearError() {
  auto f = startServer(smallSpec("asp", 1), 1);
  dasp::net::ServerOptions options;
  options.spec = f->spec;
  options.workers = 1;
  options.port = f->server->port();
  options.modelName = "logreg";
  options.initialParameters.assign(static_cast<std::size_t>(f->parameters), 0.0f);
  auto second = dasp::net::ParameterServer::start(std::move(options));
  QVERIFY(!second.isOk());
  QVERIFY2(second.message().find(std::to_string(f->server->port())) != std::string::npos &&
               second.message().find("in use") != std::string::npos,
           second.message().c_str());
}

void TestPsIntegration::unreachableServerRetriesThenFails() {
  // A port nobody listens on: bind one, note it, close it.
  auto f = startServer(smallSpec("asp", 1), 1);
  const std::string address = f->address;
  auto o = workerOptions(*f, 0);
  f->server->shutdown();
  f.reset();
  o.server = address;
  o.connectTimeoutS = 1.0;
  std::vector<std::string> said;
  o.log = [&](const std::string& line) { said.push_back(line); };
  auto join = dasp::net::joinServer(o, "worker");
  QVERIFY(!join.isOk());
  QVERIFY2(join.message().find(address) != std::string::npos, join.message().c_str());
  // It said it was retrying, with the address, before giving up.
  QVERIFY(!said.empty());
  QVERIFY2(said.front().find("unreachable") != std::string::npos && said.front().find(address) != std::string::npos,
           said.front().c_str());
}

void TestPsIntegration::vanishedWorkerDoesNotDeadlockBsp() {
  auto spec = smallSpec("bsp", 3);
  spec.mutable_strategy()->set_barrier_timeout_s(0.5);
  spec.mutable_stop()->set_max_updates(30);
  auto f = startServer(spec, 3);
  // Worker 2 joins, pushes once and vanishes; workers 0 and 1 must still finish.
  {
    auto o = workerOptions(*f, 2);
    auto join = dasp::net::joinServer(o, "worker");
    QVERIFY(join.isOk());
  }
  std::vector<std::thread> threads;
  std::vector<std::string> errors(2);
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto o = workerOptions(*f, r);
      auto join = dasp::net::joinServer(o, "worker");
      auto source = dasp::ml::ShardGradientSource::create(f->spec, f->data.train, r, 3).value();
      auto stats = dasp::net::runWorker(o, join.value(), *source);
      if (!stats) errors[static_cast<std::size_t>(r)] = stats.message();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) QVERIFY2(e.empty(), e.c_str());
  QVERIFY(f->server->stats().version >= 30);
}

void TestPsIntegration::largeModelArrivesExactly_data() {
  QTest::addColumn<int>("transport");
  QTest::addColumn<bool>("payloadSocket");
  for (auto t : kTransports) QTest::newRow(dasp::net::nameOf(t)) << static_cast<int>(t) << true;
  QTest::newRow("tcp through gRPC") << static_cast<int>(dasp::net::LocalTransport::Tcp) << false;
}

void TestPsIntegration::largeModelArrivesExactly() {
  // 2M floats = 8 MB: above the 4 MB threshold, so over the Unix socket (and TCP without
  // the payload socket) push and pull go through the chunked RPCs; over TCP through the
  // payload socket, and through shared memory in none. The values must arrive exactly and
  // be applied once.
  QFETCH(int, transport);
  QFETCH(bool, payloadSocket);
  const auto asked = static_cast<dasp::net::LocalTransport>(transport);
  const std::int64_t n = 2'000'000;
  auto server = startFlatServer(n, 1);
  QVERIFY(server.isOk());
  const std::string address = "127.0.0.1:" + std::to_string(server.value()->port());
  dasp::net::PsClient client(address, n, dasp::net::NodeSecurity(), asked);
  client.usePayloadSocket(payloadSocket);
  QVERIFY(joinFlat(client, n, 0).ok());
  QCOMPARE(client.transport(), asked);
  const bool onSocket = asked == dasp::net::LocalTransport::Tcp && payloadSocket;
  QCOMPARE(client.onPayloadSocket(), onSocket);
  QCOMPARE(client.chunked(), asked != dasp::net::LocalTransport::Shm && !onSocket);
  std::vector<float> gradient(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) gradient[static_cast<std::size_t>(i)] = static_cast<float>(i % 1000) * 0.001f;
  dasp::ps::v1::PushRequest push;
  push.set_rank(0);
  dasp::ps::v1::PushReply pushed;
  auto status = client.pushGradient(push, gradient.data(), pushed, 30);
  QVERIFY2(status.ok(), status.error_message().c_str());
  QCOMPARE(pushed.outcome(), std::string("applied"));
  dasp::ps::v1::PullRequest pull;
  pull.set_rank(0);
  dasp::ps::v1::PullReply reply;
  const float* params = nullptr;
  status = client.pullParameters(pull, reply, params, 30);
  QVERIFY2(status.ok(), status.error_message().c_str());
  QVERIFY(params != nullptr);
  QCOMPARE(reply.parameters_in_shm(), asked == dasp::net::LocalTransport::Shm);
  QCOMPARE(reply.version(), 1LL);
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{999}, n / 2 + 7, n - 1}) {
    const float expected = 1.0f - 0.5f * gradient[static_cast<std::size_t>(i)];
    QCOMPARE(params[i], expected);
  }
  server.value()->shutdown();
}

void TestPsIntegration::pullInFlightKeepsItsVersion() {
  // A chunked pull sends the store's snapshot of the version it was answered with, not a
  // copy: an update that lands while the pull's chunks are still unread must leave them as
  // they were (the store writes the new version elsewhere), and the next pull has it.
  const std::int64_t n = 4'000'000;  // 16 MB: more than the flow-control window holds
  auto server = startFlatServer(n, 2);
  QVERIFY(server.isOk());
  const std::string address = "127.0.0.1:" + std::to_string(server.value()->port());
  std::vector<std::unique_ptr<dasp::net::PsClient>> clients;
  for (int rank = 0; rank < 2; ++rank) {
    clients.push_back(std::make_unique<dasp::net::PsClient>(address, n, dasp::net::NodeSecurity(),
                                                            dasp::net::LocalTransport::Tcp));
    QVERIFY(joinFlat(*clients.back(), n, rank).ok());
  }
  // Rank 0's pull, read one chunk at a time through the generated stub.
  auto stub = dasp::ps::v1::ParameterServer::NewStub(
      dasp::net::openChannel(address, dasp::net::NodeSecurity(), grpc::ChannelArguments()));
  grpc::ClientContext context;
  dasp::net::setDeadline(context, 30);
  dasp::net::attachToken(context, dasp::net::NodeSecurity());
  dasp::ps::v1::PullRequest request;
  request.set_rank(0);
  auto reader = stub->PullChunks(&context, request);
  dasp::ps::v1::PullChunk chunk;
  if (!reader->Read(&chunk)) QFAIL(dasp::net::describe(reader->Finish()).c_str());
  QCOMPARE(chunk.header().version(), 0LL);
  std::string received = chunk.data();
  // Rank 1's push is applied while most of rank 0's pull is unread.
  std::vector<float> gradient(static_cast<std::size_t>(n), 1.0f);
  dasp::ps::v1::PushRequest push;
  push.set_rank(1);
  dasp::ps::v1::PushReply pushed;
  auto status = clients[1]->pushGradient(push, gradient.data(), pushed, 30);
  QVERIFY2(status.ok(), status.error_message().c_str());
  QCOMPARE(pushed.outcome(), std::string("applied"));
  while (reader->Read(&chunk)) received += chunk.data();
  status = reader->Finish();
  QVERIFY2(status.ok(), status.error_message().c_str());
  const std::vector<float> version0(static_cast<std::size_t>(n), 1.0f);
  QCOMPARE(received.size(), version0.size() * sizeof(float));
  QVERIFY(std::memcmp(received.data(), version0.data(), received.size()) == 0);
  // The next pull has the update.
  dasp::ps::v1::PullRequest again;
  again.set_rank(1);
  dasp::ps::v1::PullReply reply;
  const float* params = nullptr;
  status = clients[1]->pullParameters(again, reply, params, 30);
  QVERIFY2(status.ok(), status.error_message().c_str());
  QVERIFY(params != nullptr);
  QCOMPARE(reply.version(), 1LL);
  for (std::int64_t i : {std::int64_t{0}, n / 2, n - 1}) QCOMPARE(params[i], 0.5f);
  server.value()->shutdown();
}

void TestPsIntegration::sharedMemorySlotsHoldTheServersParameters_data() {
  QTest::addColumn<QString>("strategy");
  QTest::addColumn<bool>("doorbell");
  for (const char* strategy : {"asp", "bsp"}) {
    QTest::newRow((std::string(strategy) + " doorbell").c_str()) << strategy << true;
    QTest::newRow((std::string(strategy) + " grpc").c_str()) << strategy << false;
  }
}

void TestPsIntegration::sharedMemorySlotsHoldTheServersParameters() {
  // A PushPull over shared memory answers through the worker's parameter slot. Through
  // the doorbell, the update its own push makes is written there as it is applied, so its
  // answer copies nothing; a pull answered after updates it did not make must copy (and
  // through gRPC every answer copies). Each round, one rank pushes
  // (a Push: held under BSP), the other's PushPull makes the update, then the first pulls;
  // the ranks swap each round, so a slot written by its own PushPull one round is stale
  // the next. Every slot must hold the server's parameters bit for bit, as an evaluator
  // pulls them over TCP.
  QFETCH(QString, strategy);
  QFETCH(bool, doorbell);
  const std::int64_t n = 10'003;
  auto server = startFlatServer(n, 2, strategy.toStdString());
  QVERIFY(server.isOk());
  const std::string address = "127.0.0.1:" + std::to_string(server.value()->port());
  std::vector<std::unique_ptr<dasp::net::PsClient>> workers;
  for (int rank = 0; rank < 2; ++rank) {
    workers.push_back(std::make_unique<dasp::net::PsClient>(address, n, dasp::net::NodeSecurity(),
                                                            dasp::net::LocalTransport::Shm));
    QVERIFY(joinFlat(*workers.back(), n, rank).ok());
    QCOMPARE(workers.back()->transport(), dasp::net::LocalTransport::Shm);
    workers.back()->useDoorbell(doorbell);
  }
  dasp::net::PsClient evaluator(address, n, dasp::net::NodeSecurity(), dasp::net::LocalTransport::Tcp);
  QVERIFY(joinFlat(evaluator, n, -1, "evaluator").ok());
  auto gradient = [n](int k) {
    std::vector<float> g(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) g[static_cast<std::size_t>(i)] = 1e-3f * static_cast<float>((i * (k + 3)) % 101);
    return g;
  };
  auto sameAsServer = [&](const float* params) {
    dasp::ps::v1::PullRequest pull;
    pull.set_rank(-1);
    dasp::ps::v1::PullReply reply;
    const float* current = nullptr;
    return params != nullptr && evaluator.pullParameters(pull, reply, current, 30).ok() && current != nullptr &&
           std::memcmp(params, current, static_cast<std::size_t>(n) * sizeof(float)) == 0;
  };
  std::int64_t version = 0;  // every gradient is of the current version, as BSP's must be
  for (int round = 0; round < 4; ++round) {
    const int first = round % 2, second = 1 - first;
    dasp::ps::v1::PushRequest push;
    push.set_rank(first);
    push.set_base_version(version);
    dasp::ps::v1::PushReply pushed;
    const auto g1 = gradient(2 * round);
    auto status = workers[static_cast<std::size_t>(first)]->pushGradient(push, g1.data(), pushed, 30);
    QVERIFY2(status.ok(), status.error_message().c_str());

    push.set_rank(second);
    dasp::ps::v1::PullReply reply;
    const float* params = nullptr;
    const auto g2 = gradient(2 * round + 1);
    status = workers[static_cast<std::size_t>(second)]->pushPull(push, g2.data(), reply, params, 30);
    QVERIFY2(status.ok(), status.error_message().c_str());
    QVERIFY(reply.parameters_in_shm());
    QCOMPARE(reply.version(), version + (strategy == "asp" ? 2 : 1));  // ASP applied the Push's gradient too
    version = reply.version();
    QVERIFY2(sameAsServer(params), qPrintable(QString("round %1: the PushPull's slot (rank %2) differs from the "
                                                      "server's parameters").arg(round).arg(second)));

    dasp::ps::v1::PullRequest pull;
    pull.set_rank(first);
    reply.Clear();
    status = workers[static_cast<std::size_t>(first)]->pullParameters(pull, reply, params, 30);
    QVERIFY2(status.ok(), status.error_message().c_str());
    QVERIFY(reply.parameters_in_shm());
    QCOMPARE(reply.version(), version);
    QVERIFY2(sameAsServer(params), qPrintable(QString("round %1: the pull's slot (rank %2) differs from the "
                                                      "server's parameters").arg(round).arg(first)));
  }
  server.value()->shutdown();
}

QTEST_GUILESS_MAIN(TestPsIntegration)
#include "tst_ps_integration.moc"
