// SPDX-License-Identifier: MIT
#pragma once
// Internal to the runner (net/run_session.*): the run's clock, the head server's address,
// the event stream from it and control calls to the servers.

#include "net/security/node_security.h"
#include "net/runner/run_nodes.h"

#include "dasp/ps/v1/parameter_server.pb.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace dasp::net {

// The run's clock on the runner's side: anchored to the server's event times (the
// smallest observed delivery delay wins), so it keeps running while no server is up and a
// restarted server can be told where the run's clock stands. Any thread.
class RunClock {
 public:
  void observe(double serverT);
  double now() const;

 private:
  mutable std::mutex m_mu;
  bool m_anchored = false;
  std::chrono::steady_clock::time_point m_origin;
};

// The head server's event stream, followed on a thread of its own and subscribed again
// whenever the head changes (chain promotion) or restarts. Each batch advances the clock
// and goes to `onBatch` (on the watch thread); `eventCv` is notified after each, so the
// runner's loop wakes. head()/setHead() from any thread; start() and stop() from the
// runner's thread.
class EventWatcher {
 public:
  using OnBatch = std::function<void(const dasp::ps::v1::EventBatch&)>;
  // `clock` null: the server's event times do not set the run's clock (shards 1..S-1,
  // whose clock follows shard 0's).
  EventWatcher(const NodeLines& lines, const NodeSecurity& security, RunClock* clock, OnBatch onBatch);
  ~EventWatcher();  // stops and joins

  void start(const std::string& headAddress);
  void stop();
  std::string head() const;
  // The head moved: the stream is cancelled and follows the new address.
  void setHead(const std::string& address);
  // Wakes within `timeout` or at the next batch.
  void waitForEvents(std::chrono::milliseconds timeout);

 private:
  void loop();
  std::int64_t parameters() const;

  const NodeLines& m_lines;
  const NodeSecurity& m_security;
  RunClock* m_clock;
  OnBatch m_onBatch;
  mutable std::mutex m_mu;  // guards the fields below
  std::condition_variable m_retryCv;
  std::string m_head;
  bool m_stop = false;
  grpc::ClientContext* m_context = nullptr;  // the live stream's, to cancel it
  std::thread m_thread;
  std::mutex m_eventMu;
  std::condition_variable m_eventCv;
};

// Control calls to the run's servers (5 s deadline each). Threading: the runner's thread.
class ServerControl {
 public:
  ServerControl(NodeLines& lines, const NodeSecurity& security, const EventWatcher& watcher)
      : m_lines(lines), m_security(security), m_watcher(watcher) {}
  grpc::Status at(const std::string& address, const dasp::ps::v1::ControlRequest& req,
                  dasp::ps::v1::ControlReply& rep, double deadlineS = 5.0) const;
  grpc::Status head(const dasp::ps::v1::ControlRequest& req, dasp::ps::v1::ControlReply& rep,
                    double deadlineS = 5.0) const {
    return at(m_watcher.head(), req, rep, deadlineS);
  }

 private:
  NodeLines& m_lines;
  const NodeSecurity& m_security;
  const EventWatcher& m_watcher;
};

}  // namespace dasp::net
