// SPDX-License-Identifier: MIT
#pragma once
// Replicator: a server's link to its successor in a replication chain. Updates are sent
// one at a time, in version order, each as a blocking Replicate call with a deadline; the
// successor answers once the tail has the update, and `done` reports the version the rest
// of the chain holds. A new successor first gets the whole state (catch-up) from
// `snapshot`, which also covers every update queued before it. An unreachable successor is
// retried (the message is kept) and reported through `onError` once per outage; the
// configuration master (the runner) then points this server at another successor.
// Every call carries the run's token (and goes over TLS when the run uses it): a replica
// checks it like any server.
//
// Threading: enqueue(), setSuccessor() and ackedVersion() from any thread (the server calls
// them under its own lock: they never block on the network); the callbacks run on the
// replicator's own thread, without the replicator's lock held.

#include "dasp/ps/v1/parameter_server.grpc.pb.h"
#include "net/security/node_security.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace dasp::net {

class Replicator {
 public:
  using Update = dasp::ps::v1::ReplicaUpdate;
  // Fills `state` with the server's whole state (parameters, momentum, version).
  using Snapshot = std::function<void(Update& state)>;
  // A message was acknowledged down the chain: the successor holds `version`.
  using Done = std::function<void(std::int64_t version)>;
  using OnError = std::function<void(const std::string& message)>;

  Replicator(std::int64_t parameters, NodeSecurity security, Snapshot snapshot, Done onAck, OnError onError);
  ~Replicator();
  Replicator(const Replicator&) = delete;
  Replicator& operator=(const Replicator&) = delete;

  // Empty address: no successor (this server is the tail; nothing is sent).
  void setSuccessor(const std::string& address);
  std::string successor() const;
  bool hasSuccessor() const;
  // A buffer for the next update (reused: its byte fields keep their capacity).
  std::unique_ptr<Update> acquire();
  // Queues an update (or a whole state) for the successor; `reply` (may be null) runs once
  // this message is acknowledged down the chain or superseded by a catch-up that covers it
  // (ok = true, with the version the chain holds), or with ok = false when the replicator
  // is destroyed first.
  using Reply = std::function<void(bool ok, std::int64_t version)>;
  void enqueue(std::unique_ptr<Update> update, Reply reply = {});
  // The highest version acknowledged down the chain (-1 before the first).
  std::int64_t ackedVersion() const;

 private:
  struct Pending {
    std::unique_ptr<Update> update;
    Reply reply;
  };
  void loop();

  std::int64_t m_parameters;
  NodeSecurity m_security;
  Snapshot m_snapshot;
  Done m_onAck;
  OnError m_onError;
  mutable std::mutex m_mu;
  std::condition_variable m_cv;
  std::deque<Pending> m_queue;
  std::vector<std::unique_ptr<Update>> m_free;
  std::string m_successor;
  std::uint64_t m_generation = 0;  // bumps on every setSuccessor
  bool m_needsCatchUp = false;
  bool m_stop = false;
  std::int64_t m_acked = -1;
  std::thread m_thread;
};

}  // namespace dasp::net
