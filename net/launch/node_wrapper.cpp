// SPDX-License-Identifier: MIT
// The wrapper a remote node runs under (nodeWrapperScript) and the ssh / srun command lines.
#include "net/launch/launcher.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <regex>

namespace dasp::net {

// --- the wrapper and the command lines ---

const std::string& nodeWrapperScript() {
  // $p: dasp. $r: the control reader. $w: the heartbeat watchdog, which looks every
  // DASP_WATCHDOG_S seconds (default 10; tests make it short) whether a PING came, and
  // gives up after three empty looks. $h: the heartbeat file, in the run's own directory
  // (made mode 0700 by prepare()), not at a guessable path in a shared /tmp.
  // z: SIGCONT + SIGTERM to dasp, SIGKILL 10 s later.
  // Background jobs get their stdin explicitly (sh would give them /dev/null), and their
  // output goes to /dev/null so that only dasp holds the client's stdout/stderr (sshd
  // waits for those to close). One line: the remote login shell, whichever, hands it on.
  // In a Slurm step it first tells the runner the step (run_session.cpp reads the line).
  // A worker with a GPU slot (Placement::gpuSlot) sees one GPU: as cudaVisibleDevices.
  static const std::string script =
      "while IFS= read -r l && [ -n \"$l\" ]; do export \"$l\"; done; "
      "[ -z \"${SLURM_STEP_ID:-}\" ] || echo \"dasp-node-slurm-step job=$SLURM_JOB_ID step=$SLURM_STEP_ID\"; "
      "[ -z \"${DASP_GPU_SLOT:-}\" ] || export CUDA_VISIBLE_DEVICES=\"$(printf %s \"${CUDA_VISIBLE_DEVICES:-}\" | "
      "tr , '\\n' | awk -v s=\"$DASP_GPU_SLOT\" 'NF { a[n++] = $0 } END { print n ? a[s % n] : s }')\"; "
      "h=${DASP_RUN_DIR:-${TMPDIR:-/tmp}}/alive.$$; "
      "z() { kill -s CONT $p 2>/dev/null; kill -s TERM $p 2>/dev/null; n=0; "
      "while kill -0 $p 2>/dev/null && [ $n -lt 10 ]; do sleep 1; n=$((n+1)); done; "
      "kill -s KILL $p 2>/dev/null; }; "
      "exec 3<&0; \"$@\" </dev/null & p=$!; "
      "( while IFS= read -r c; do case $c in PING) : > \"$h\" 2>/dev/null;; "
      "TERM|KILL|STOP|CONT|INT|HUP|USR1|USR2) kill -s $c $p 2>/dev/null;; esac; done; z ) <&3 >/dev/null 2>&1 & r=$!; "
      "w=; if : > \"$h\" 2>/dev/null; then ( m=0; while sleep ${DASP_WATCHDOG_S:-10}; do "
      "if [ -e \"$h\" ]; then rm -f \"$h\"; m=0; else m=$((m+1)); [ $m -ge 3 ] && break; fi; done; z ) "
      "</dev/null >/dev/null 2>&1 & w=$!; fi; "
      "exec 3<&-; trap z HUP INT TERM; "
      "while :; do wait $p 2>/dev/null; s=$?; kill -0 $p 2>/dev/null || break; done; "
      "kill $r $w 2>/dev/null; rm -f \"$h\"; exit $s";
  return script;
}

std::vector<std::string> wrapperArgv(const std::vector<std::string>& daspArgv) {
  std::vector<std::string> argv{"/bin/sh", "-c", nodeWrapperScript(), "dasp-node"};
  argv.insert(argv.end(), daspArgv.begin(), daspArgv.end());
  return argv;
}

Result<std::string> wrapperEnvBlock(const std::map<std::string, std::string>& env) {
  static const std::regex name(R"(^[A-Za-z_][A-Za-z0-9_]*$)");
  std::string block;
  for (const auto& [key, value] : env) {
    if (!std::regex_match(key, name)) return Status::error("environment variable '" + key + "': not a shell name");
    if (value.find('\n') != std::string::npos || value.find('\0') != std::string::npos) {
      return Status::error("environment variable " + key + ": the value must be one line");
    }
    block += key + "=" + value + "\n";
  }
  return block + "\n";
}

std::string cudaVisibleDevices(int slot, const char* inherited) {
  std::vector<std::string> list;
  if (inherited != nullptr) {
    std::string entry;
    for (const char* c = inherited;; ++c) {
      if (*c == ',' || *c == '\0') {
        if (!entry.empty()) list.push_back(entry);
        entry.clear();
        if (*c == '\0') break;
      } else {
        entry += *c;
      }
    }
  }
  if (list.empty()) return std::to_string(slot);
  return list[static_cast<std::size_t>(slot) % list.size()];
}

std::string shellQuote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::vector<std::string> sshCommand(const std::string& sshBinary, const v1::LaunchSpec& launch,
                                    const v1::HostSpec& host, const std::vector<std::string>& remoteArgv) {
  const double timeout = launch.has_connect_timeout_s() ? launch.connect_timeout_s() : 10.0;
  std::vector<std::string> argv{sshBinary, "-T", "-o", "BatchMode=yes", "-o",
                                "ConnectTimeout=" + std::to_string(std::max(1L, std::lround(std::ceil(timeout))))};
  if (host.has_ssh_port()) argv.insert(argv.end(), {"-p", std::to_string(host.ssh_port())});
  if (!host.ssh_user().empty()) argv.insert(argv.end(), {"-l", host.ssh_user()});
  argv.insert(argv.end(), host.ssh_options().begin(), host.ssh_options().end());
  // After the host's options, which may set them otherwise (ssh takes the first value):
  // a dead connection ends the client within ~15 s, and the runner sees the node exit.
  argv.insert(argv.end(), {"-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "--",
                           host.address().empty() ? host.name() : host.address()});
  // ssh hands one string to the remote login shell; everything in it is quoted, and sh
  // runs the command whatever that shell is.
  std::string command = "exec";
  for (const auto& a : remoteArgv) command += " " + shellQuote(a);
  argv.push_back(command);
  return argv;
}

std::vector<std::string> srunCommand(const std::string& srunBinary, const v1::LaunchSpec& launch,
                                     const v1::HostSpec& host, const std::vector<std::string>& argv,
                                     const SrunStep& step) {
  std::vector<std::string> out{srunBinary, "--nodes=1", "--ntasks=1", "--nodelist=" + host.name()};
  if (!step.jobId.empty()) out.push_back("--jobid=" + step.jobId);
  if (!step.name.empty()) out.push_back("--job-name=" + step.name);
  out.insert(out.end(), launch.srun_args().begin(), launch.srun_args().end());
  // The nodes share the job's CPUs: without --overlap a step waits for CPUs no other step
  // holds ("step creation temporarily disabled"), for ever in a job of one task per node.
  out.insert(out.end(), {"--overlap", "--kill-on-bad-exit=1"});
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

std::string findProgram(const std::string& program) {
  if (program.empty()) return {};
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path && *path ? path : "/usr/bin:/bin") + ":/usr/sbin:/sbin";
  for (std::size_t begin = 0; begin <= dirs.size();) {
    const auto colon = std::min(dirs.find(':', begin), dirs.size());
    const std::string dir = dirs.substr(begin, colon - begin);
    if (!dir.empty()) {
      const std::string candidate = dir + "/" + program;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    begin = colon + 1;
  }
  return {};
}

}  // namespace dasp::net
