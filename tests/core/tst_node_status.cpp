// SPDX-License-Identifier: MIT
// Tests of NodeStatusTracker (core/events/node_status.h): node states and chain roles from typed
// run events only — every event here has a detail text the tracker must not need.

#include "core/events/node_status.h"

#include <QtTest>

#include <string>

using namespace dasp;
using RE = dasp::v1::RunEvent;

namespace {

EventRow ev(double t, EventKind kind, EventCode code, const std::string& node, const std::string& target = {}) {
  // The detail is for people; "…" says nothing the tracker could use.
  return EventRow{0, t, kind, node, "…", code, target};
}

const NodeStatus& at(const NodeStatusTracker& tracker, const std::string& node) {
  const NodeStatus* st = tracker.find(node);
  if (st == nullptr) qFatal("no status of %s", node.c_str());
  return *st;
}

}  // namespace

class TestNodeStatus : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void chainRolesAndPromotion() {
    NodeStatusTracker t({"server-0", "server-1", "server-2", "evaluator"}, true);
    QCOMPARE(at(t, "server-0").role, ChainRole::Head);
    QCOMPARE(at(t, "server-1").role, ChainRole::Replica);
    QCOMPARE(at(t, "server-2").role, ChainRole::Tail);
    QCOMPARE(at(t, "evaluator").role, ChainRole::None);
    QVERIFY(t.find("worker-0") == nullptr);

    t.apply(ev(4.9, RE::CONTROL, RE::KILL, "server", "server-0"));
    QCOMPARE(at(t, "server-0").condition, NodeCondition::Down);
    t.apply(ev(5.0, RE::RECOVERY, RE::LEFT_CHAIN, "server-0"));
    QCOMPARE(at(t, "server-0").role, ChainRole::None);
    t.apply(ev(5.0, RE::RECOVERY, RE::PROMOTED, "server", "server-1"));
    QCOMPARE(at(t, "server-1").condition, NodeCondition::Promoted);
    QCOMPARE(at(t, "server-1").role, ChainRole::Head);
    QCOMPARE(at(t, "server-1").news, std::string("5.0 s: …"));
    // "server" is now server-1: a checkpoint of "server" is its routine news.
    t.apply(ev(5.2, RE::RECOVERY, RE::CHECKPOINT, "server"));
    QCOMPARE(at(t, "server-1").checkpoint, std::string("5.2 s: …"));
    QCOMPARE(at(t, "server-1").news, std::string("5.0 s: …"));

    // The killed replica restarted: back, at the tail.
    t.apply(ev(8.0, RE::CONTROL, RE::RESTARTED, "server-0", "server-0"));
    QCOMPARE(at(t, "server-0").condition, NodeCondition::Running);
    QCOMPARE(at(t, "server-0").role, ChainRole::Tail);
    QCOMPARE(at(t, "server-2").role, ChainRole::Replica);
    t.apply(ev(9.0, RE::RECOVERY, RE::CHAIN_TAIL, "server", "server-2"));
    QCOMPARE(at(t, "server-2").role, ChainRole::Tail);
    t.apply(ev(9.1, RE::RECOVERY, RE::CHAIN_TAIL, "server", "server-1"));
    QCOMPARE(at(t, "server-1").role, ChainRole::Head);  // the head stays the head
  }

  void workerKillRestartRejoin() {
    NodeStatusTracker t({"server", "evaluator"}, false);
    t.apply(ev(1, RE::FAULT, RE::KILL, "worker-1", "worker-1"));
    QCOMPARE(at(t, "worker-1").condition, NodeCondition::Down);
    t.apply(ev(2, RE::FAULT, RE::RESTARTED, "worker-1", "worker-1"));
    QCOMPARE(at(t, "worker-1").condition, NodeCondition::Restarting);
    t.apply(ev(3, RE::NODE, RE::NODE_UP, "worker-1"));
    QCOMPARE(at(t, "worker-1").condition, NodeCondition::Running);
    // The server's news of the rejoin first, the runner's restart a poll later.
    t.apply(ev(4, RE::CONTROL, RE::KILL, "worker-0", "worker-0"));
    t.apply(ev(4.1, RE::NODE, RE::NODE_UP, "worker-0"));
    t.apply(ev(4.2, RE::CONTROL, RE::RESTARTED, "worker-0", "worker-0"));
    QCOMPARE(at(t, "worker-0").condition, NodeCondition::Running);
    // Pause, resume; refused restarts and actions that did nothing change no state.
    t.apply(ev(5, RE::FAULT, RE::PAUSE, "worker-2", "worker-2"));
    QCOMPARE(at(t, "worker-2").condition, NodeCondition::Paused);
    t.apply(ev(5.5, RE::CONTROL, RE::RESTART_REFUSED, "worker-2", "worker-2"));
    QCOMPARE(at(t, "worker-2").condition, NodeCondition::Paused);
    QCOMPARE(at(t, "worker-2").news, std::string("5.5 s: …"));
    t.apply(ev(5.6, RE::FAULT, RE::NOT_APPLIED, "worker-2"));
    t.apply(ev(6, RE::FAULT, RE::RESUME, "worker-2", "worker-2"));
    QCOMPARE(at(t, "worker-2").condition, NodeCondition::Running);
    t.apply(ev(7, RE::NODE, RE::NODE_DOWN, "worker-2"));
    QCOMPARE(at(t, "worker-2").condition, NodeCondition::Down);
    t.apply(ev(8, RE::EXIT, RE::EXITED, "evaluator"));
    QCOMPARE(at(t, "evaluator").condition, NodeCondition::Down);
    t.apply(ev(9, RE::CONTROL, RE::RESTARTED, "evaluator", "evaluator"));
    QCOMPARE(at(t, "evaluator").condition, NodeCondition::Running);
    // Kinds that say nothing about a node's status.
    t.apply(ev(10, RE::SPEED, RE::CODE_UNSPECIFIED, "worker-3"));
    QVERIFY(t.find("worker-3") == nullptr);
    // A refused push is counted; the worker goes on as it was. A refused call is no
    // worker's push.
    t.apply(ev(10, RE::REJECT, RE::CODE_UNSPECIFIED, "worker-3"));
    t.apply(ev(10.5, RE::REJECT, RE::CODE_UNSPECIFIED, "worker-3"));
    t.apply(ev(10.6, RE::REJECT, RE::CODE_UNSPECIFIED, "server"));
    QCOMPARE(at(t, "worker-3").condition, NodeCondition::Running);
    QCOMPARE(at(t, "worker-3").refused, std::int64_t(2));
    QVERIFY(t.find("server") == nullptr || t.find("server")->refused == 0);
  }

  void serverRecoverySteps() {
    NodeStatusTracker t({"server", "evaluator"}, false);
    t.apply(ev(3, RE::FAULT, RE::KILL, "server", "server"));
    t.apply(ev(5, RE::FAULT, RE::RESTARTED, "server", "server"));
    QCOMPARE(at(t, "server").condition, NodeCondition::Restarting);
    t.apply(ev(5.1, RE::RECOVERY, RE::ADOPTING, "server"));
    QCOMPARE(at(t, "server").condition, NodeCondition::Restarting);
    t.apply(ev(5.5, RE::RECOVERY, RE::ADOPTED, "server"));
    QCOMPARE(at(t, "server").condition, NodeCondition::Running);
    QVERIFY(at(t, "server").recovered);
    // Recovered before the runner's restart event arrives: the restart leaves it up.
    t.apply(ev(7, RE::FAULT, RE::KILL, "server", "server"));
    t.apply(ev(8, RE::RECOVERY, RE::RESTORED, "server"));
    t.apply(ev(8, RE::FAULT, RE::RESTARTED, "server", "server"));
    QCOMPARE(at(t, "server").condition, NodeCondition::Running);
    QCOMPARE(std::string(toString(at(t, "server").condition)), std::string("UP"));
    t.apply(ev(9, RE::RECOVERY, RE::STARTED_FRESH, "server"));
    QCOMPARE(at(t, "server").condition, NodeCondition::Running);
  }
};

QTEST_MAIN(TestNodeStatus)
#include "tst_node_status.moc"
