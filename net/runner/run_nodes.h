// SPDX-License-Identifier: MIT
#pragma once
// Internal to the runner (net/run_session.*): the node processes of one run and how each
// is started. Not a public header of dasp_net.

#include "core/store/run_store.h"
#include "core/spec/spec.h"
#include "net/launch/launcher.h"
#include "net/launch/process.h"

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dasp::net {

// What the nodes print for the runner (the rest of their output is their log), as the
// output pump's thread reads it. Guarded by `mu`; `cv` is notified when a server listens.
struct NodeLines {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::string> listen;  // server node -> host:port
  std::int64_t parameters = 0;
  std::int64_t trainCount = 0;
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> bytes;  // node -> sent, received
  std::map<std::string, std::string> slurmSteps;                        // node -> "JOB.STEP" (its latest start)
  std::string serverStderrTail;
};

// The node processes of one run, by name, and how each is started and started again: its
// command line, its host (through the launcher), its environment (the run token), and the
// servers' dial addresses (kept across restarts). Every start records the node's row.
// Threading: the runner's thread only; the pump's thread only fills NodeLines.
class RunNodes {
 public:
  struct Config {
    std::int64_t runId = 0;
    const ExperimentSpec* spec = nullptr;
    std::vector<std::string> workerNames;            // by rank
    std::vector<std::string> serverNames;            // head first
    const Placement* placement = nullptr;
    NodeLauncher* launcher = nullptr;
    std::map<std::string, std::string> env;          // every node's environment
    std::vector<std::string> tlsClientArgs, tlsServerArgs;
    std::map<std::string, std::string> specPathOn;   // host name -> the spec file there
    std::string checkpointDir;                       // empty: no checkpoints
    std::string recordDir;                           // empty: no update records
    double startTimeoutS = 60;
  };
  RunNodes(Config config, OutputPump& pump, RunRecorder& recorder, NodeLines& lines);

  bool isServer(const std::string& node) const;
  const char* roleOf(const std::string& node) const;
  int rankOf(const std::string& node) const;  // -1: not a worker
  std::string nameOf(int rank) const;         // a worker's name; "server" otherwise

  // Every server, last first: with `chain` (a chain of whole servers: chainsWholeServers)
  // each replica is told its successor. The first failure.
  Status startServers(bool chain);
  // Starts server `name` on `port` ("0": any) with `extra` flags and returns at once:
  // serverStart() says when it listens. A restart starts this way, so that the runner's
  // loop goes on (other drills, exits, a chain's promotion) while the process starts.
  Status launchServer(const std::string& name, const std::string& port, const std::vector<std::string>& extra);
  struct ServerStart {
    enum class State { Starting, Listening, Failed } state = State::Starting;
    std::string address;  // Listening: the address nodes dial
    std::string why;      // Failed: how the process ended
  };
  // Where the server launchServer() started stands; never waits.
  ServerStart serverStart(const std::string& name);
  // launchServer(), then waits until the server listens (startTimeoutS); returns the
  // address nodes dial.
  Result<std::string> startServer(const std::string& name, const std::string& port,
                                  const std::vector<std::string>& extra);
  double startTimeoutS() const { return m_config.startTimeoutS; }
  const std::string& addressOf(const std::string& server) { return m_serverAddress[server]; }
  std::string portOf(const std::string& server);
  Status startWorker(int rank);
  Status startEvaluator();

  // The process of `name`, or null when it never started.
  NodeProcess* process(const std::string& name);
  std::map<std::string, std::unique_ptr<NodeProcess>>& processes() { return m_children; }
  // Workers and the evaluator get `graceS` in all (one deadline, not one each) to end by
  // themselves, then SIGKILL; then each server in turn SIGTERM and `serverGraceS`.
  void finish(double graceS, double serverGraceS = 10.0);
  // Each node's final row: exit, CPU, RSS, bytes.
  void recordFinalRows();

 private:
  Status launch(const std::string& name, const std::vector<std::string>& args);
  std::vector<std::string> workerArgs(int rank) const;
  std::string transportOf(int rank) const;  // the worker's --transport
  std::vector<std::string> evaluatorArgs() const;
  std::string bindAddressOf(const std::string& server) const;  // what the server binds to
  // "--record DIR/NAME.N.record" for the node's next start (none without a record dir).
  std::vector<std::string> recordArgs(const std::string& name);

  Config m_config;
  OutputPump& m_pump;
  RunRecorder& m_recorder;
  NodeLines& m_lines;
  std::map<std::string, std::unique_ptr<NodeProcess>> m_children;
  std::map<std::string, std::string> m_serverAddress;  // node -> host:port
  std::string m_serverList;  // what clients dial: the chain's servers, head first; else the (shard 0) server
  std::map<std::string, int> m_starts;  // node -> starts so far (update record names)
};

}  // namespace dasp::net
