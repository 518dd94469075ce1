// SPDX-License-Identifier: MIT
// The same-host transports: the shared-memory region (0600, proved by its nonce, removed
// once mapped), the server's Unix socket (the run token still checked on every call), what
// a worker gets when the spec says TCP (Auto falls back and says why; an explicit SHM is a
// clear error), a refused gradient in shared memory, and the files a server leaves: none.
// The doorbell (PushPull through the region): the token, rank and request checked; the
// pull of a worker that is gone dropped; a replaced region closed.
#include "core/spec/spec.h"
#include "net/bench/transfer_bench.h"
#include "net/client/ps_client.h"
#include "net/server/ps_server.h"
#include "net/transport/shared_region.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

namespace {

namespace pb = dasp::ps::v1;
using dasp::net::LocalTransport;
constexpr std::int64_t kFloats = 1000;

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// ASP and one worker by default; BSP with two workers parks a pull of rank 0 until rank 1 pushes.
std::unique_ptr<dasp::net::ParameterServer> startServer(const std::string& localDir,
                                                        dasp::v1::ClusterSpec::Transport transport,
                                                        const std::string& strategy = "asp", int workers = 1) {
  dasp::net::ServerOptions options;
  options.spec.mutable_strategy()->set_name(strategy);
  options.spec.mutable_model()->set_name("flat");
  options.spec.mutable_cluster()->set_transport(transport);
  options.spec = dasp::withDefaults(options.spec);
  options.workers = workers;
  options.modelName = "flat";
  options.initialParameters.assign(kFloats, 1.0f);
  options.localDir = localDir;
  auto server = dasp::net::ParameterServer::start(std::move(options));
  if (!server) qFatal("%s", server.message().c_str());
  return std::move(server).value();
}

pb::JoinRequest workerJoin() {
  pb::JoinRequest join;
  join.set_role("worker");
  join.set_model("flat");
  join.set_parameter_count(kFloats);
  join.set_requested_rank(0);
  return join;
}

std::string addressOf(const dasp::net::ParameterServer& server) { return "127.0.0.1:" + std::to_string(server.port()); }

// A worker's join over TCP that asks for a region the test attaches itself (JoinReply).
pb::JoinReply joinForRegion(const dasp::net::ParameterServer& server, int rank) {
  dasp::net::PsClient client(addressOf(server), kFloats);
  pb::JoinRequest join = workerJoin();
  join.set_requested_rank(rank);
  join.set_transport("shm");
  pb::JoinReply reply;
  const auto status = client.join(join, reply, 10);
  if (!status.ok()) qFatal("join: %s", status.error_message().c_str());
  return reply;
}

// One call on the doorbell: posts `request` with `token` and waits (10 s) for the reply.
dasp::net::Doorbell::Reply ring(dasp::net::DoorbellBlock* block, const std::string& token, const std::string& request,
                                dasp::net::DoorbellKind kind = dasp::net::DoorbellKind::PushPull) {
  dasp::net::Doorbell doorbell(block);
  std::uint32_t call = 0;
  if (!doorbell.post(kind, token, request, call)) qFatal("the request does not fit the block");
  const auto wait = doorbell.awaitReply(call, dasp::net::Doorbell::Clock::now() + std::chrono::seconds(10),
                                        [] { return true; });
  if (wait != dasp::net::Doorbell::Wait::Answered) qFatal("no doorbell reply");
  return doorbell.reply();
}

std::string pushOf(int rank, bool inShm) {
  pb::PushRequest push;
  push.set_rank(rank);
  push.set_gradient_in_shm(inShm);
  push.set_batch_size(1);
  return push.SerializeAsString();
}

}  // namespace

class TestTransports : public QObject {
  Q_OBJECT

 private slots:
  void regionIsPrivateAndRemovedOnceMapped();
  void regionOfAnotherServerIsRefused();
  void unattachedRegionIsRemovedWithTheServer();
  void tcpSpecMakesAutoFallBackAndShmFail();
  void unixSocketStillNeedsTheToken();
  void nanGradientInSharedMemoryIsRefused();
  void shmCallWithoutRegionIsRefused();
  void callLatencyBenchRunsOverEachTransport();
  void doorbellChecksTokenRankAndRequest();
  void doorbellTakesAPushAndAPull();
  void doorbellDropsThePullOfAWorkerThatIsGone();
  void doorbellOfAReplacedRegionIsClosed();
  void gradientSlotIsTheServersUntilItAnswers();
};

void TestTransports::regionIsPrivateAndRemovedOnceMapped() {
  QTemporaryDir dir;
  auto made = dasp::net::SharedRegion::create(dir.path().toStdString(), "rank-0-join-1", kFloats);
  QVERIFY2(made.isOk(), made.message().c_str());
  auto& server = *made.value();
  struct stat st {};
  QVERIFY(::stat(server.path().c_str(), &st) == 0);
  QCOMPARE(st.st_mode & 0777, 0600u);
  auto attached = dasp::net::SharedRegion::attach(server.path(), server.nonce(), kFloats);
  QVERIFY2(attached.isOk(), attached.message().c_str());
  QVERIFY2(!exists(server.path()), "the file outlived the worker's mapping");
  // One memory: what one side writes, the other reads.
  server.parameters()[kFloats - 1] = 42.0f;
  attached.value()->gradient()[0] = -3.0f;
  QCOMPARE(attached.value()->parameters()[kFloats - 1], 42.0f);
  QCOMPARE(server.gradient()[0], -3.0f);
}

void TestTransports::regionOfAnotherServerIsRefused() {
  QTemporaryDir dir;
  auto made = dasp::net::SharedRegion::create(dir.path().toStdString(), "rank-0-join-1", kFloats);
  QVERIFY(made.isOk());
  const std::string path = made.value()->path();
  std::string wrong = made.value()->nonce();
  wrong[0] = static_cast<char>(wrong[0] ^ 1);
  auto refused = dasp::net::SharedRegion::attach(path, wrong, kFloats);
  QVERIFY(!refused.isOk());
  QVERIFY2(refused.message().find("not the region the server offered") != std::string::npos, refused.message().c_str());
  auto wrongSize = dasp::net::SharedRegion::attach(path, made.value()->nonce(), kFloats + 4096);
  QVERIFY(!wrongSize.isOk());
  QVERIFY2(wrongSize.message().find("parameters need") != std::string::npos, wrongSize.message().c_str());
  QVERIFY(::chmod(path.c_str(), 0644) == 0);
  auto open = dasp::net::SharedRegion::attach(path, made.value()->nonce(), kFloats);
  QVERIFY(!open.isOk());
  QVERIFY2(open.message().find("mode 0600") != std::string::npos, open.message().c_str());
  QVERIFY2(exists(path), "a refused attach removed the server's file");
}

void TestTransports::unattachedRegionIsRemovedWithTheServer() {
  QTemporaryDir dir;
  auto server = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::AUTO);
  // A raw join that asks for shared memory and never maps it (a worker that died at once).
  auto channel = grpc::CreateChannel(addressOf(*server), grpc::InsecureChannelCredentials());
  auto stub = pb::ParameterServer::NewStub(channel);
  grpc::ClientContext context;
  dasp::net::setDeadline(context, 10);
  dasp::net::attachToken(context, dasp::net::NodeSecurity());
  auto join = workerJoin();
  join.set_transport("shm");
  pb::JoinReply reply;
  QVERIFY(stub->Join(&context, join, &reply).ok());
  QVERIFY(exists(reply.shm_path()));
  QVERIFY(reply.unix_address().rfind("unix:", 0) == 0);
  const std::string socket = reply.unix_address().substr(5);
  QVERIFY(exists(socket));
  server->shutdown();
  QVERIFY2(!exists(reply.shm_path()), "the region's file outlived the server");
  QVERIFY2(!exists(socket), "the Unix socket outlived the server");
  // Without a run directory the server makes its own and removes it.
  auto own = startServer("", dasp::v1::ClusterSpec::AUTO);
  dasp::net::PsClient client(addressOf(*own), kFloats, dasp::net::NodeSecurity(), LocalTransport::Shm);
  pb::JoinReply joined;
  QVERIFY(client.join(workerJoin(), joined, 10).ok());
  const auto privateDir = std::filesystem::path(joined.unix_address().substr(5)).parent_path();
  QVERIFY(exists(privateDir.string()));
  own->shutdown();
  QVERIFY2(!exists(privateDir.string()), privateDir.c_str());
}

void TestTransports::tcpSpecMakesAutoFallBackAndShmFail() {
  QTemporaryDir dir;
  auto server = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::TCP);
  dasp::net::PsClient automatic(addressOf(*server), kFloats, dasp::net::NodeSecurity(), LocalTransport::Auto);
  pb::JoinReply reply;
  QVERIFY(automatic.join(workerJoin(), reply, 10).ok());
  QCOMPARE(automatic.transport(), LocalTransport::Tcp);
  QVERIFY2(automatic.transportFallback().find("no Unix socket") != std::string::npos,
           automatic.transportFallback().c_str());
  dasp::net::PsClient shm(addressOf(*server), kFloats, dasp::net::NodeSecurity(), LocalTransport::Shm);
  const auto status = shm.join(workerJoin(), reply, 10);
  QCOMPARE(status.error_code(), grpc::StatusCode::ABORTED);
  QVERIFY2(status.error_message().find("cluster.transport shm is not possible") != std::string::npos,
           status.error_message().c_str());
  QVERIFY(QDir(dir.path()).isEmpty());
}

void TestTransports::unixSocketStillNeedsTheToken() {
  QTemporaryDir dir;
  auto server = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::UNIX);
  dasp::net::PsClient client(addressOf(*server), kFloats, dasp::net::NodeSecurity(), LocalTransport::Unix);
  pb::JoinReply reply;
  QVERIFY(client.join(workerJoin(), reply, 10).ok());
  QCOMPARE(client.transport(), LocalTransport::Unix);
  QVERIFY(reply.shm_path().empty());
  auto channel = grpc::CreateChannel(reply.unix_address(), grpc::experimental::LocalCredentials(UDS));
  auto stub = pb::ParameterServer::NewStub(channel);
  grpc::ClientContext context;
  dasp::net::setDeadline(context, 10);
  pb::PullRequest pull;
  pb::PullReply pulled;
  const auto status = stub->Pull(&context, pull, &pulled);
  QCOMPARE(status.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  QCOMPARE(server->stats().unauthorized, 1LL);
}

void TestTransports::nanGradientInSharedMemoryIsRefused() {
  QTemporaryDir dir;
  auto server = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::SHM);
  dasp::net::PsClient client(addressOf(*server), kFloats, dasp::net::NodeSecurity(), LocalTransport::Shm);
  pb::JoinReply reply;
  QVERIFY(client.join(workerJoin(), reply, 10).ok());
  QCOMPARE(client.transport(), LocalTransport::Shm);
  std::vector<float> gradient(kFloats, 0.01f);
  gradient[17] = std::numeric_limits<float>::quiet_NaN();
  pb::PushRequest push;
  push.set_rank(0);
  pb::PushReply pushed;
  const auto status = client.pushGradient(push, gradient.data(), pushed, 10);
  const auto reason = dasp::net::pushRefusalOf(status);
  QVERIFY2(reason && *reason == pb::PushRefusal::NON_FINITE, status.error_message().c_str());
  QCOMPARE(server->stats().version, 0LL);
  std::vector<float> params;
  server->snapshot(params);
  QCOMPARE(params[17], 1.0f);
}

void TestTransports::shmCallWithoutRegionIsRefused() {
  QTemporaryDir dir;
  auto server = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::AUTO);
  dasp::net::PsClient client(addressOf(*server), kFloats);  // TCP: no region
  pb::JoinReply reply;
  QVERIFY(client.join(workerJoin(), reply, 10).ok());
  pb::PushRequest push;
  push.set_rank(0);
  push.set_gradient_in_shm(true);
  pb::PushReply pushed;
  const auto status = client.push(push, pushed, 10);
  QCOMPARE(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  QVERIFY2(status.error_message().find("shared-memory region") != std::string::npos, status.error_message().c_str());
  QCOMPARE(server->stats().version, 0LL);
}

// A server over shared memory and rank 0's region, attached: the doorbell tests' start.
struct DoorbellFixture {
  QTemporaryDir dir;
  std::unique_ptr<dasp::net::ParameterServer> server = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::SHM);
  dasp::Result<std::unique_ptr<dasp::net::SharedRegion>> region = attachRank0(*server);
  dasp::net::DoorbellBlock* block = region.isOk() ? region.value()->doorbell() : nullptr;
  const std::string token = dasp::net::NodeSecurity().token;

  static dasp::Result<std::unique_ptr<dasp::net::SharedRegion>> attachRank0(dasp::net::ParameterServer& s) {
    const pb::JoinReply joined = joinForRegion(s, 0);
    return dasp::net::SharedRegion::attach(joined.shm_path(), joined.shm_nonce(), kFloats);
  }
};

void TestTransports::doorbellChecksTokenRankAndRequest() {
  DoorbellFixture f;
  QVERIFY2(f.region.isOk(), f.region.message().c_str());
  auto& [dir, server, region, block, token] = f;

  auto refused = ring(block, token + "x", pushOf(0, true));
  QCOMPARE(refused.code, static_cast<int>(grpc::StatusCode::PERMISSION_DENIED));
  QCOMPARE(server->stats().unauthorized, 1LL);
  auto garbage = ring(block, token, "\xff\xff\xff not a message");
  QCOMPARE(garbage.code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  QVERIFY2(std::string(garbage.message).find("not a PushRequest") != std::string::npos, std::string(garbage.message).c_str());
  auto otherRank = ring(block, token, pushOf(1, true));
  QCOMPARE(otherRank.code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  QVERIFY2(std::string(otherRank.message).find("belongs to rank 0") != std::string::npos,
           std::string(otherRank.message).c_str());
  auto notInShm = ring(block, token, pushOf(0, false));
  QCOMPARE(notInShm.code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  QCOMPARE(server->stats().version, 0LL);

  // A good call: the gradient read from the slot, the parameters written back to it.
  std::fill(region.value()->gradient(), region.value()->gradient() + kFloats, 0.5f);
  auto answered = ring(block, token, pushOf(0, true));
  QCOMPARE(answered.code, 0);
  pb::PullReply reply;
  QVERIFY(reply.ParseFromArray(answered.body.data(), static_cast<int>(answered.body.size())));
  QVERIFY(reply.parameters_in_shm());
  QCOMPARE(reply.version(), 1LL);
  QCOMPARE(server->stats().version, 1LL);
  std::vector<float> params;
  server->snapshot(params);
  QVERIFY(params[3] < 1.0f);
  QVERIFY(std::equal(params.begin(), params.end(), region.value()->parameters()));
}

// A Push rung on the doorbell is answered with its PushReply and leaves the slot alone; a
// Pull puts the parameters into the slot. A kind the block does not know is refused.
void TestTransports::doorbellTakesAPushAndAPull() {
  DoorbellFixture f;
  QVERIFY2(f.region.isOk(), f.region.message().c_str());
  auto& [dir, server, region, block, token] = f;
  std::fill(region.value()->gradient(), region.value()->gradient() + kFloats, 0.5f);
  std::fill(region.value()->parameters(), region.value()->parameters() + kFloats, -7.0f);
  auto pushed = ring(block, token, pushOf(0, true), dasp::net::DoorbellKind::Push);
  QCOMPARE(pushed.code, 0);
  pb::PushReply pushReply;
  QVERIFY(pushReply.ParseFromArray(pushed.body.data(), static_cast<int>(pushed.body.size())));
  QCOMPARE(pushReply.version(), 1LL);
  QCOMPARE(server->stats().version, 1LL);
  QCOMPARE(region.value()->parameters()[0], -7.0f);  // a push writes no parameters

  pb::PullRequest pull;
  pull.set_rank(0);
  pull.set_parameters_in_shm(true);
  pull.set_min_version(1);
  auto pulled = ring(block, token, pull.SerializeAsString(), dasp::net::DoorbellKind::Pull);
  QCOMPARE(pulled.code, 0);
  pb::PullReply pullReply;
  QVERIFY(pullReply.ParseFromArray(pulled.body.data(), static_cast<int>(pulled.body.size())));
  QVERIFY(pullReply.parameters_in_shm());
  QCOMPARE(pullReply.version(), 1LL);
  std::vector<float> params;
  server->snapshot(params);
  QVERIFY(std::equal(params.begin(), params.end(), region.value()->parameters()));

  pull.set_parameters_in_shm(false);
  auto notInShm = ring(block, token, pull.SerializeAsString(), dasp::net::DoorbellKind::Pull);
  QCOMPARE(notInShm.code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  QVERIFY2(std::string(notInShm.message).find("Pull (doorbell of rank 0)") != std::string::npos,
           std::string(notInShm.message).c_str());
  auto unknown = ring(block, token, pull.SerializeAsString(), static_cast<dasp::net::DoorbellKind>(7));
  QCOMPARE(unknown.code, static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
}

// BSP with two workers: rank 0's pull parks until rank 1 pushes. When rank 0 lets go of
// its region (its process ended), the server drops the parked pull, as gRPC cancels the
// call of a dropped connection: the block gets CANCELLED (read here through a mapping of
// the test's own, which holds no lock).
void TestTransports::doorbellDropsThePullOfAWorkerThatIsGone() {
  QTemporaryDir dir;
  auto started = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::SHM, "bsp", 2);
  auto& server = *started;
  const pb::JoinReply joined = joinForRegion(server, 0);
  (void)joinForRegion(server, 1);  // rank 1 joins and never pushes

  const int fd = ::open(joined.shm_path().c_str(), O_RDWR | O_CLOEXEC);
  QVERIFY(fd >= 0);
  void* page = ::mmap(nullptr, sizeof(dasp::net::DoorbellBlock), PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                      dasp::net::SharedRegion::kDoorbellOffset);
  ::close(fd);  // no lock on this description: only the attached region's counts
  QVERIFY(page != MAP_FAILED);
  auto* watched = static_cast<dasp::net::DoorbellBlock*>(page);
  auto region = dasp::net::SharedRegion::attach(joined.shm_path(), joined.shm_nonce(), kFloats);
  QVERIFY2(region.isOk(), region.message().c_str());
  dasp::net::Doorbell doorbell(region.value()->doorbell());
  std::uint32_t call = 0;
  QVERIFY(doorbell.post(dasp::net::DoorbellKind::PushPull, dasp::net::NodeSecurity().token, pushOf(0, true), call));
  // Its pull parks (BSP waits for rank 1) whether or not it is handled before rank 0 goes.
  region.value().reset();  // rank 0 is gone: its lock is released
  dasp::net::Doorbell seen(watched);
  const auto wait = seen.awaitReply(call, dasp::net::Doorbell::Clock::now() + std::chrono::seconds(20), [] { return true; });
  QVERIFY(wait == dasp::net::Doorbell::Wait::Answered);
  QCOMPARE(seen.reply().code, static_cast<int>(grpc::StatusCode::CANCELLED));
  QCOMPARE(server.stats().pushes, 1LL);
  QCOMPARE(server.stats().version, 0LL);
  ::munmap(page, sizeof(dasp::net::DoorbellBlock));
}

// A worker whose rank joined again (a new region) finds its old region closed: its next
// PushPull fails as over a dropped connection (UNAVAILABLE), and it recovers by joining.
void TestTransports::doorbellOfAReplacedRegionIsClosed() {
  QTemporaryDir dir;
  auto server = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::SHM);
  dasp::net::PsClient client(addressOf(*server), kFloats, dasp::net::NodeSecurity(), LocalTransport::Shm);
  pb::JoinReply reply;
  QVERIFY(client.join(workerJoin(), reply, 10).ok());
  std::vector<float> gradient(kFloats, 0.25f);
  pb::PushRequest push;
  push.set_rank(0);
  push.set_batch_size(1);
  pb::PullReply pulled;
  const float* params = nullptr;
  auto status = client.pushPull(push, gradient.data(), pulled, params, 10);
  QVERIFY2(status.ok(), status.error_message().c_str());
  QVERIFY(params != nullptr);
  QCOMPARE(pulled.version(), 1LL);

  (void)joinForRegion(*server, 0);  // the rank joins again elsewhere
  status = client.pushPull(push, gradient.data(), pulled, params, 10);
  QCOMPARE(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  QVERIFY2(status.error_message().find("closed the shared-memory region") != std::string::npos,
           status.error_message().c_str());
  QCOMPARE(server->stats().version, 1LL);
}

QTEST_GUILESS_MAIN(TestTransports)
// The benchmark's calls go through (no figure is checked: speed belongs to `dasp bench`).
void TestTransports::callLatencyBenchRunsOverEachTransport() {
  for (auto transport : {LocalTransport::Tcp, LocalTransport::Unix, LocalTransport::Shm}) {
    for (bool direct : {true, false}) {  // the payload socket, the doorbell; or gRPC
      auto latency = dasp::net::benchCallLatency({transport, direct}, 0.001, 5);
      QVERIFY2(latency.isOk(), latency.message().c_str());
      QVERIFY(std::isfinite(latency->backToBackUs) && latency->backToBackUs > 0);
      QVERIFY(std::isfinite(latency->afterBusyUs) && latency->afterBusyUs > 0);
      QCOMPARE(latency->busyS, 0.001);
    }
  }
}

// A worker computes its gradient straight into the region's slot only while the server has
// answered every call that read it. A call given up on (here: a BSP pull parked for a rank
// that never pushes, past its deadline) leaves the slot the server's: the next gradient is
// computed in the worker's memory and copied in when pushed.
void TestTransports::gradientSlotIsTheServersUntilItAnswers() {
  QTemporaryDir dir;
  {
    auto server = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::SHM);
    dasp::net::PsClient client(addressOf(*server), kFloats, dasp::net::NodeSecurity(), LocalTransport::Shm);
    pb::JoinReply reply;
    QVERIFY(client.join(workerJoin(), reply, 10).ok());
    float* slot = client.gradientSlot();
    QVERIFY(slot != nullptr);
    // Computed in place, pushed from there: the server applies exactly that gradient.
    std::fill(slot, slot + kFloats, 0.5f);
    pb::PushRequest push;
    push.set_rank(0);
    push.set_batch_size(1);
    pb::PullReply pulled;
    const float* params = nullptr;
    auto status = client.pushPull(push, slot, pulled, params, 10);
    QVERIFY2(status.ok(), status.error_message().c_str());
    QCOMPARE(pulled.version(), 1LL);
    QCOMPARE(client.gradientSlot(), slot);
    std::vector<float> inPlace;
    server->snapshot(inPlace);

    // The same gradient from private memory, on a fresh server: the same parameters.
    QTemporaryDir other;
    auto twin = startServer(other.path().toStdString(), dasp::v1::ClusterSpec::SHM);
    dasp::net::PsClient copying(addressOf(*twin), kFloats, dasp::net::NodeSecurity(), LocalTransport::Shm);
    QVERIFY(copying.join(workerJoin(), reply, 10).ok());
    std::vector<float> gradient(kFloats, 0.5f);
    status = copying.pushPull(push, gradient.data(), pulled, params, 10);
    QVERIFY2(status.ok(), status.error_message().c_str());
    std::vector<float> copied;
    twin->snapshot(copied);
    QVERIFY(inPlace == copied);
    QVERIFY(inPlace[0] < 1.0f);
  }

  auto started = startServer(dir.path().toStdString(), dasp::v1::ClusterSpec::SHM, "bsp", 2);
  auto& server = *started;
  (void)joinForRegion(server, 1);  // rank 1 joins and never pushes
  dasp::net::PsClient client(addressOf(server), kFloats, dasp::net::NodeSecurity(), LocalTransport::Shm);
  pb::JoinReply reply;
  QVERIFY(client.join(workerJoin(), reply, 10).ok());
  float* slot = client.gradientSlot();
  QVERIFY(slot != nullptr);
  pb::PushRequest push;
  push.set_rank(0);
  push.set_batch_size(1);
  pb::PullReply pulled;
  const float* params = nullptr;
  const auto status = client.pushPull(push, slot, pulled, params, 0.3);
  QCOMPARE(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  QVERIFY(client.gradientSlot() == nullptr);
}

#include "tst_transports.moc"
