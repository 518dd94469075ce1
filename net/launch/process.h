// SPDX-License-Identifier: MIT
#pragma once
// ChildProcess: a node process started by the runner (fork + exec), with its stdout and
// stderr on pipes. Children get their own process group (a terminal's Ctrl-C reaches only
// the runner, which then stops the run cleanly) and die with the runner's thread
// (PR_SET_PDEATHSIG), so no node outlives the run on any exit path.
// OutputPump reads every child's output lines on one thread.
// Threading: a ChildProcess is owned by the runner thread; OutputPump calls its sink on
// its own thread.

#include "core/common/result.h"

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dasp::net {

struct ExitInfo {
  std::optional<int> exitCode;
  std::optional<int> signal;
  double cpuS = 0;
  long maxRssKb = 0;
  std::string describe() const;
};

// How spawn() sets up a child beyond argv (net/launch/launcher.cpp's launchers use it).
struct SpawnOptions {
  // Variables added to (or replacing in) the child's copy of the runner's environment.
  // They never appear on a command line.
  std::map<std::string, std::string> env;
  // The child's stdin is one end of a socket pair whose other end the caller takes with
  // takeStdin() (the ssh/srun wrappers' control channel); otherwise stdin is inherited.
  bool stdinSocket = false;
  // When the runner dies the child gets SIGTERM instead of SIGKILL, for a child that must
  // end cleanly (salloc: it withdraws a queued job or releases a granted one, where a
  // SIGKILL would leave the job behind).
  bool termWithParent = false;
};

class ChildProcess {
 public:
  // Starts `argv[0]` with `argv`. `name` labels the node in logs.
  static Result<std::unique_ptr<ChildProcess>> spawn(const std::string& name, const std::vector<std::string>& argv);
  static Result<std::unique_ptr<ChildProcess>> spawn(const std::string& name, const std::vector<std::string>& argv,
                                                     const SpawnOptions& options);
  ~ChildProcess();
  const std::string& name() const { return m_name; }
  pid_t pid() const { return m_pid; }
  int stdoutFd() const { return m_out; }
  int stderrFd() const { return m_err; }
  // The runner's end of the child's stdin socket (SpawnOptions::stdinSocket), handed over
  // to the caller, who closes it; -1 if there is none or it was taken.
  int takeStdin() {
    const int fd = m_in;
    m_in = -1;
    return fd;
  }
  // Non-blocking: the exit, if the process has ended (reaped once).
  std::optional<ExitInfo> poll();
  // Blocks up to `seconds` for the exit.
  std::optional<ExitInfo> waitFor(double seconds);
  void signal(int sig);
  bool running() const { return !m_exit.has_value(); }
  const std::optional<ExitInfo>& exitInfo() const { return m_exit; }

 private:
  ChildProcess() = default;
  std::string m_name;
  pid_t m_pid = -1;
  int m_out = -1, m_err = -1, m_in = -1;
  std::optional<ExitInfo> m_exit;
};

// Reads `child`'s stdout and stderr until `enough(stdout)`, both close, or `until`, and
// closes the pipes: what was said by then (stdout, stderr).
std::pair<std::string, std::string> readOutput(ChildProcess& child, std::chrono::steady_clock::time_point until,
                                               const std::function<bool(const std::string&)>& enough);
// Runs `argv` (argv[0] a path: findProgram) to its end within `timeoutS` (killed beyond)
// and returns its stdout. A failure says the command, how it ended and its stderr.
Result<std::string> runCommand(const std::vector<std::string>& argv, double timeoutS);
// `text` on one line, without trailing blanks: a command's message inside ours.
std::string oneLine(std::string text);

class OutputPump {
 public:
  using Sink = std::function<void(const std::string& node, bool isStderr, const std::string& line)>;
  explicit OutputPump(Sink sink);
  ~OutputPump();
  void add(const std::string& node, int fd, bool isStderr);
  // Reads until every added stream reached end of file, then returns.
  void drainAndStop();

 private:
  void loop();
  struct Stream {
    std::string node;
    int fd;
    bool isStderr;
    std::string partial;
  };
  Sink m_sink;
  std::mutex m_mu;
  std::vector<Stream> m_streams;
  int m_wake[2] = {-1, -1};
  bool m_stopWhenDrained = false;
  std::thread m_thread;
};

}  // namespace dasp::net
