// SPDX-License-Identifier: MIT
#pragma once
// Test support for the protocol-level fault tests (net.fault_tolerance, net.stateless):
// `dasp server` processes the test starts and SIGKILLs, their event streams, and a test
// acting as a worker by hand (deterministic gradients, acknowledged parameters).
// Threading: the test's thread (EventLog and CountingSource are thread-safe).
#include "net/client/nodes.h"
#include "net/client/ps_client.h"
#include "net/launch/process.h"
#include "tests/support/processes.h"
#include "tests/support/specs.h"

#include <signal.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <thread>

namespace ps_fixtures {

using namespace dasp;
using namespace dasp::net;

// logreg on 32-dimensional synthetic data with 10 classes: (32 + 1) × 10 parameters.
constexpr std::int64_t kParameters = 330;
constexpr double kMomentum = 0.9;
constexpr double kWeightDecay = 1e-4;

// `workers` ASP worker slots (the test pushes its gradients by hand) and `recovery` (JSON).
inline QString writeSpec(const QTemporaryDir& dir, const QString& name, const QString& recovery, int workers = 1) {
  test_support::SyntheticSpec base;
  base.name = name;
  base.workers = workers;
  base.trainCount = 512;
  base.testCount = 128;
  base.batchSize = 16;
  base.maxSeconds = 600;
  base.barrierTimeoutS = 5;
  QJsonObject spec = base.json();
  spec.remove("evaluation");
  spec["optimizer"] = QJsonObject{{"lr", 0.05}, {"momentum", kMomentum}, {"weight_decay", kWeightDecay}};
  spec["recovery"] = QJsonDocument::fromJson(recovery.toUtf8()).object();
  return test_support::writeSpecFile(dir.path(), name, spec);
}

// The test's gradient number k: deterministic, different for every k.
inline std::vector<float> gradientNumber(int k) {
  std::vector<float> g(kParameters);
  for (std::int64_t i = 0; i < kParameters; ++i) g[static_cast<std::size_t>(i)] = 0.01f * std::sin(0.37f * static_cast<float>(i) + static_cast<float>(k));
  return g;
}

// `dasp server` processes of one test, their output drained (and kept) by one pump.
class Servers {
 public:
  Servers()
      : m_pump([this](const std::string& node, bool, const std::string& line) {
          static const std::regex listening(R"(^dasp-server listening ([^ ]+) parameters=(\d+))");
          std::smatch m;
          std::lock_guard<std::mutex> lock(m_mu);
          m_log[node] += line + "\n";
          if (std::regex_search(line, m, listening)) {
            m_address[node] = m[1].str();
            m_cv.notify_all();
          }
        }) {}
  ~Servers() {
    for (auto& [name, child] : m_children) {
      child->signal(SIGCONT);
      child->signal(SIGKILL);
      child->waitFor(5.0);
    }
  }
  // Starts a server and waits for its listening line; returns its address ("" on failure).
  std::string start(const std::string& name, const QString& spec, const std::vector<std::string>& extra,
                    const std::string& port = "0", int workers = 1) {
    std::vector<std::string> argv{test_support::daspBinary().toStdString(), "server", "--spec", spec.toStdString(), "--workers",
                                  std::to_string(workers),
                                  "--bind", "127.0.0.1", "--port", port, "--name", name};
    argv.insert(argv.end(), extra.begin(), extra.end());
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_address.erase(name);
    }
    // The servers' private directory, as `dasp run` gives it (the Unix socket and shared
    // memory live there): removed with this object, whatever signal ended a server.
    SpawnOptions options;
    options.env["DASP_RUN_DIR"] = m_runDir.path().toStdString();
    auto child = ChildProcess::spawn(name, argv, options);
    if (!child) return {};
    m_pump.add(name, child.value()->stdoutFd(), false);
    m_pump.add(name, child.value()->stderrFd(), true);
    m_children[name] = std::move(child).value();
    std::unique_lock<std::mutex> lock(m_mu);
    m_cv.wait_for(lock, std::chrono::seconds(30), [&] { return m_address.count(name) > 0; });
    return m_address.count(name) ? m_address[name] : std::string();
  }
  void kill(const std::string& name) {
    m_children[name]->signal(SIGKILL);
    m_children[name]->waitFor(10.0);
  }
  std::string log(const std::string& name) {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_log[name];
  }

 private:
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::map<std::string, std::string> m_address;
  std::map<std::string, std::string> m_log;
  std::map<std::string, std::unique_ptr<ChildProcess>> m_children;
  QTemporaryDir m_runDir;
  OutputPump m_pump;
};

// The events of one server's Watch stream, collected on a thread.
class EventLog {
 public:
  explicit EventLog(const std::string& address) : m_client(address, kParameters) {
    setDeadline(m_context, 120);
    m_reader = m_client.watch(m_context);
    m_thread = std::thread([this] {
      pb::EventBatch batch;
      while (m_reader->Read(&batch)) {
        std::lock_guard<std::mutex> lock(m_mu);
        for (const auto& e : batch.events()) m_events.push_back(e);
        m_cv.notify_all();
      }
      (void)m_reader->Finish();
    });
  }
  ~EventLog() {
    m_context.TryCancel();
    m_thread.join();
  }
  // Waits (at most `seconds`) for a RECOVERY event of kind `what` that satisfies `match`.
  std::optional<pb::ClusterEvent> waitRecovery(const std::string& what,
                                               const std::function<bool(const pb::ClusterEvent&)>& match,
                                               double seconds = 20) {
    return waitEvent([&](const pb::ClusterEvent& e) {
      return e.kind() == pb::ClusterEvent::RECOVERY && e.decision() == what && match(e);
    }, seconds);
  }
  // Waits (at most `seconds`) for any event that satisfies `match`.
  std::optional<pb::ClusterEvent> waitEvent(const std::function<bool(const pb::ClusterEvent&)>& match,
                                            double seconds = 20) {
    std::unique_lock<std::mutex> lock(m_mu);
    std::optional<pb::ClusterEvent> found;
    m_cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] {
      for (const auto& e : m_events) {
        if (match(e)) {
          found = e;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  // Versions of the RECOVERY events of kind `what` so far, in order.
  std::vector<std::int64_t> versionsOf(const std::string& what) {
    std::lock_guard<std::mutex> lock(m_mu);
    std::vector<std::int64_t> out;
    for (const auto& e : m_events) {
      if (e.kind() == pb::ClusterEvent::RECOVERY && e.decision() == what) out.push_back(e.version());
    }
    return out;
  }

 private:
  PsClient m_client;
  grpc::ClientContext m_context;
  std::unique_ptr<grpc::ClientReader<pb::EventBatch>> m_reader;
  std::thread m_thread;
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::vector<pb::ClusterEvent> m_events;
};

inline bool joinAsWorker(PsClient& client, int rank = 0) {
  pb::JoinRequest req;
  req.set_role("worker");
  req.set_name("worker-" + std::to_string(rank));
  req.set_model("logreg");
  req.set_parameter_count(kParameters);
  req.set_requested_rank(rank);
  pb::JoinReply reply;
  return client.join(req, reply, 10).ok();
}

// Parameters and version as an evaluator sees them (no rank, no policy).
inline std::pair<std::int64_t, std::vector<float>> readParameters(const std::string& address) {
  PsClient client(address, kParameters);
  pb::PullRequest req;
  req.set_rank(-1);
  req.set_min_version(0);
  pb::PullReply reply;
  const float* params = nullptr;
  if (!client.pullParameters(req, reply, params, 10).ok() || params == nullptr) return {-1, {}};
  return {reply.version(), std::vector<float>(params, params + kParameters)};
}

// Pushes gradient k and returns the version and parameters of the reply (the ack).
inline std::pair<std::int64_t, std::vector<float>> pushNumber(PsClient& client, int k, std::int64_t base,
                                                             double timeoutS = 10, int rank = 0) {
  pb::PushRequest req;
  req.set_rank(rank);
  req.set_base_version(base);
  req.set_batch_size(16);
  const auto g = gradientNumber(k);
  pb::PullReply reply;
  const float* params = nullptr;
  auto st = client.pushPull(req, g.data(), reply, params, timeoutS);
  if (!st.ok() || params == nullptr) return {-1, {}};
  return {reply.version(), std::vector<float>(params, params + kParameters)};
}

inline bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline std::string portOf(const std::string& address) { return address.substr(address.rfind(':') + 1); }

// A gradient source for an in-process worker: a fixed gradient (so a backlog is a known
// multiple of it), counting its calls and letting the test wait for a number of them.
class CountingSource final : public GradientSource {
 public:
  std::int64_t parameterCount() const override { return kParameters; }
  int batchSize() const override { return 16; }
  Result<double> computeGradient(const float*, float* gradient) override {
    const auto g = gradientNumber(7);
    std::copy(g.begin(), g.end(), gradient);
    std::lock_guard<std::mutex> lock(m_mu);
    ++m_calls;
    m_cv.notify_all();
    return 1.0;
  }
  std::int64_t calls() {
    std::lock_guard<std::mutex> lock(m_mu);
    return m_calls;
  }
  bool waitCalls(std::int64_t n, double seconds) {
    std::unique_lock<std::mutex> lock(m_mu);
    return m_cv.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return m_calls >= n; });
  }

 private:
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::int64_t m_calls = 0;
};

}  // namespace ps_fixtures
