// SPDX-License-Identifier: MIT
#pragma once
// How the runner starts one node process (`dasp server|worker|evaluator ...`) on the host
// the spec places it on (spec.launch, docs/MULTI-HOST.md):
//
// - LOCAL: a child process of the runner on this machine (ChildProcess), inside the host's
//   network namespace when HostSpec.netns is set (`ip netns exec NS dasp ...`).
// - SSH:   the OpenSSH client (`ssh -T -o BatchMode=yes ...`) runs a POSIX sh wrapper on the
//   host, which starts `dasp` there.
// - SLURM: `srun --nodes=1 --ntasks=1 --nodelist=HOST --job-name=NODE --overlap ...` runs the same
//   wrapper as a step of the current allocation, or of the runner's own (SlurmAllocation,
//   net/launch/slurm_allocation.h) when `dasp run` is not inside one.
//
// The wrapper (nodeWrapperScript) is what keeps remote nodes from outliving the run. It
// reads the node's environment (the run token, ...) as KEY=VALUE lines from its stdin up to
// an empty line, starts dasp in the background, then reads control lines: TERM, KILL,
// STOP, CONT, INT, HUP are sent to dasp as signals, PING proves the runner is alive. When
// stdin reaches end of file (ssh or srun killed, the runner killed: its children die with
// it, the connection closed) or no PING came for about 30 s (the network is gone), dasp
// gets SIGCONT + SIGTERM and, 10 s later, SIGKILL. The wrapper exits with dasp's status
// (128 + N for signal N), which ssh/srun pass on; NodeProcess turns 129..192 back into
// "killed by signal N".
//
// Threading: a launcher and its NodeProcesses are used on the runner's thread; an SSH or
// SLURM launcher runs one heartbeat thread that writes PING to every live node's control
// channel every few seconds (the channel has its own mutex). The runner's OutputPump reads
// the nodes' stdout/stderr as before.

#include "core/common/result.h"
#include "core/spec/spec.h"
#include "net/launch/process.h"

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dasp::net {

class SlurmAllocation;

// Which host each node of a run goes to (spec.launch.placement over spec.launch.hosts).
// Without hosts every node runs on this machine: one host named after it, at 127.0.0.1.
// With hosts: the servers go to placement.servers (chain replicas cycled over the list;
// default: the first host), the evaluator to placement.evaluator (default: the head
// server's host), worker rank r to placement.workers[r % size] (default: every host).
struct Placement {
  // The hosts the run uses, with defaults filled in (address: the name; dasp_path: the
  // runner's own dasp; work_dir: /tmp), in launch.hosts order.
  std::vector<v1::HostSpec> hosts;
  std::map<std::string, std::size_t> nodeHost;  // node name -> index into hosts
  // Worker name -> its GPU on its host, for hosts with gpus > 0: the host's workers in rank
  // order take GPUs 0 .. gpus-1, cycled (DASP_GPU_SLOT; cudaVisibleDevices).
  std::map<std::string, int> gpuSlot;
  bool placed = false;                           // launch.hosts is not empty
  const v1::HostSpec& hostOf(const std::string& node) const;
};
Result<Placement> placeNodes(const ExperimentSpec& spec, const std::vector<std::string>& servers,
                             const std::vector<std::string>& workers, const std::string& localDasp);
// The server processes of a run: the chain's replicas (head first, "server-0" ...), or the
// shards of a sharded server ("server", then "shard-1" ..., then with chain replication
// each one's replicas: "shard-1-r1" ...), or the one "server".
std::vector<std::string> serverNodeNames(const ExperimentSpec& spec);
// A sharded server's process `name` (one of serverNodeNames): the shard it holds (0 for
// "server") and whether it is a replica of that shard.
struct ShardProcess {
  int shard = 0;
  bool replica = false;
};
ShardProcess shardProcessOf(const std::string& name);
// Chain replication (recovery CHAIN) of whole servers ("server-0" ..., ChainMaster), or of
// a sharded server's shards 1..S-1 ("shard-N-rK": shard 0 promotes a shard's replica).
bool chainsWholeServers(const ExperimentSpec& spec);
bool chainsShards(const ExperimentSpec& spec);

// The address nodes dial to reach a server bound to `bind` on `host`, listening on `port`:
// "HOST:PORT" with the bind address itself, unless it is a wildcard (0.0.0.0, ::), then
// the host's address ("127.0.0.1" on this machine); IPv6 literals in brackets.
std::string serverDialAddress(const std::string& bind, const v1::HostSpec& host, const std::string& port);

// The control channel of a node started through the wrapper: the runner's end of the
// ssh/srun client's stdin. Shared by the runner's thread and the heartbeat thread.
class ControlChannel {
 public:
  explicit ControlChannel(int fd);
  ~ControlChannel();
  // Writes one line ("KILL", "PING", ...); false if the channel is closed or broken.
  bool send(const std::string& line);
  // End of file for the wrapper: it stops dasp.
  void close();

 private:
  std::mutex m_mu;
  int m_fd = -1;
};

// A started node: a local child process (dasp itself, or the ssh / srun client that runs
// it elsewhere) with the abilities the runner uses: output fds for the OutputPump, a pid
// for the records, signals, and the exit.
class NodeProcess {
 public:
  // LOCAL: `argv` is the node itself; signals go to its pid.
  static Result<std::unique_ptr<NodeProcess>> startLocal(const std::string& name, const std::string& host,
                                                         const std::vector<std::string>& argv,
                                                         const std::map<std::string, std::string>& env);
  // SSH / SLURM (and tests): `argv` runs nodeWrapperScript somewhere (ssh, srun, or sh
  // itself); `env` goes to the wrapper on stdin, signals become control lines.
  static Result<std::unique_ptr<NodeProcess>> startWrapped(const std::string& name, const std::string& host,
                                                           const std::vector<std::string>& argv,
                                                           const std::map<std::string, std::string>& env);
  // A still running node is stopped: a wrapped one sees end of file on its control channel
  // (the wrapper stops dasp), then the local client is killed.
  ~NodeProcess();

  const std::string& name() const { return m_name; }
  const std::string& host() const { return m_host; }
  // The local process: dasp itself (LOCAL) or the ssh / srun client.
  pid_t pid() const { return m_child->pid(); }
  bool remote() const { return m_control != nullptr; }
  int stdoutFd() const { return m_child->stdoutFd(); }
  int stderrFd() const { return m_child->stderrFd(); }
  // Non-blocking: the exit, if the node has ended. A remote node's exit is the wrapper's
  // status (a signal decoded from 128 + N); CPU and RSS are those of the local process,
  // so 0 for a remote one.
  std::optional<ExitInfo> poll();
  std::optional<ExitInfo> waitFor(double seconds);
  // SIGTERM, SIGKILL, SIGSTOP, SIGCONT, SIGINT, SIGHUP reach the node wherever it runs. A
  // remote SIGKILL that has not ended the node within a few seconds (the connection hangs)
  // also kills the local client.
  void signal(int sig);
  bool running() const { return !m_exit.has_value(); }
  const std::optional<ExitInfo>& exitInfo() const { return m_exit; }
  std::shared_ptr<ControlChannel> control() const { return m_control; }

 private:
  NodeProcess() = default;
  // A node around a started child process (both ways of starting end here).
  static std::unique_ptr<NodeProcess> adopt(const std::string& name, const std::string& host,
                                            std::unique_ptr<ChildProcess> child);
  std::string m_name, m_host;
  std::unique_ptr<ChildProcess> m_child;
  std::shared_ptr<ControlChannel> m_control;
  std::optional<ExitInfo> m_exit;
  std::optional<std::chrono::steady_clock::time_point> m_hardKillAt;
};

// What the runner asks a launcher to start.
struct NodeStart {
  std::string name;                        // "server", "worker-2", "evaluator"
  v1::HostSpec host;                       // from Placement::hostOf
  std::vector<std::string> args;           // after the dasp binary: {"worker", "--server", ...}
  std::map<std::string, std::string> env;  // DASP_RUN_TOKEN, ...: never on a command line
};

class NodeLauncher {
 public:
  virtual ~NodeLauncher() = default;
  virtual const char* kind() const = 0;
  // Before any node starts: checks every host of the placement (reachable within
  // launch.connect_timeout_s, `dasp` there, the network namespace exists) and creates the
  // run's directory on it. The first problem fails the run; it names the host, its address
  // and what the tool said.
  virtual Status prepare(const std::vector<v1::HostSpec>& hosts) = 0;
  // The run's directory on `host` (spec file, checkpoints); DASP_RUN_DIR of its nodes.
  virtual std::string runDir(const v1::HostSpec& host) const = 0;
  // Writes `content` into runDir(host)/fileName (mode 0600); returns the path there.
  virtual Result<std::string> putFile(const v1::HostSpec& host, const std::string& fileName,
                                      const std::string& content) = 0;
  virtual Result<std::unique_ptr<NodeProcess>> start(const NodeStart& node) = 0;
};

// The launcher spec.launch asks for. `localRunDir` is the runner's own run directory (this
// machine); remote hosts get `<work_dir>/<its name>-<this host's name>`. SLURM: the steps
// run in `allocation` when given (placeOnSlurmAllocation's), else in the current one or
// one the launcher asks for.
Result<std::unique_ptr<NodeLauncher>> makeLauncher(const v1::LaunchSpec& launch, const std::string& localRunDir,
                                                   std::unique_ptr<SlurmAllocation> allocation = nullptr);

// --- the pieces, public for tests ---

// The POSIX sh script of the wrapper (one line: remote login shells may be csh), run as
// `sh -c SCRIPT dasp-node DASP ARGS...`.
const std::string& nodeWrapperScript();
// `sh -c SCRIPT dasp-node ARGV...`.
std::vector<std::string> wrapperArgv(const std::vector<std::string>& daspArgv);
// The text the wrapper reads first: KEY=VALUE lines and an empty line. Keys must be shell
// names and values one line.
Result<std::string> wrapperEnvBlock(const std::map<std::string, std::string>& env);
// CUDA_VISIBLE_DEVICES for the node with GPU slot `slot`: the slot-th entry (cycled) of the
// list the node would inherit (`inherited`: Slurm's binding, or the user's own), or the
// slot itself when there is none. The wrapper does the same in sh (nodeWrapperScript).
std::string cudaVisibleDevices(int slot, const char* inherited);
// One word for a POSIX shell: 'text' with ' as '\''.
std::string shellQuote(const std::string& word);
// ssh's argv that runs `remoteArgv` (quoted for the remote shell) on `host`.
std::vector<std::string> sshCommand(const std::string& sshBinary, const v1::LaunchSpec& launch,
                                    const v1::HostSpec& host, const std::vector<std::string>& remoteArgv);
// Which allocation a step runs in (empty: the current one, SLURM_JOB_ID) and its name in
// squeue (a node's name, so that `scancel` can pick one node's step).
struct SrunStep {
  std::string jobId;
  std::string name;
};
// srun's argv that runs `argv` as one task on `host` inside the allocation.
std::vector<std::string> srunCommand(const std::string& srunBinary, const v1::LaunchSpec& launch,
                                     const v1::HostSpec& host, const std::vector<std::string>& argv,
                                     const SrunStep& step = {});
// The path of `program` in $PATH (or itself if it holds a '/'); empty if not found.
std::string findProgram(const std::string& program);

}  // namespace dasp::net
