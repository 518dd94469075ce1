// SPDX-License-Identifier: MIT
// Multi-host launching (net/launch/launcher.h): placement, spec validation and the srun/ssh
// command lines as unit tests; the node wrapper's control protocol run locally through
// sh; and `dasp run` with the SSH launcher against a real sshd that the test starts on
// 127.0.0.1 (own config, throwaway host and user keys): a short run completes and is
// recorded; killing an ssh client and then the runner itself (SIGKILL) leaves no node
// process of the run behind; an unreachable host fails the run fast, naming the host.
#include "core/store/run_store.h"
#include "core/spec/spec.h"
#include "net/launch/launcher.h"
#include "net/launch/slurm_allocation.h"
#include "net/launch/slurm_script.h"
#include "tests/support/processes.h"
#include "tests/support/specs.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <sstream>

using dasp::ExperimentSpec;
namespace net = dasp::net;

namespace {

using test_support::allPids;
using test_support::cmdlineOf;
using test_support::markedDaspProcesses;

// A wait for node processes, stretched under a sanitizer (they are several times slower).
int scaled(int ms) { return static_cast<int>(ms * test_support::kProcessTimeScale); }

int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string userName() {
  const passwd* pw = getpwuid(getuid());
  return pw != nullptr ? pw->pw_name : "root";
}

ExperimentSpec parse(const QByteArray& json) {
  auto spec = dasp::parseSpecJson(json.toStdString(), "test");
  if (!spec) qFatal("%s", spec.message().c_str());
  return spec.value();
}

}  // namespace

class TestSshLaunch : public QObject {
  Q_OBJECT

 private slots:
  void placementWithoutHostsIsLocal();
  void placementCyclesOverHosts();
  void placementErrorsNameFieldAndHosts();
  void specValidation();
  void srunCommandLine();
  void slurmStepsAndOwnAllocation();
  void slurmScriptOfASpec();
  void sshCommandLine();
  void missingNetnsIsNamed();
  void wrapperForwardsSignalsAndStopsWithoutRunner();
  void sshRunCompletes();
  void killedClientsLeaveNoNodes();
  void unreachableHostFailsFast();
  void cleanupTestCase();

 private:
  // Starts the test's own sshd once. Skipped where sshd or ssh-keygen is not installed;
  // any other problem fails the test.
  enum class Sshd { Ready, Missing, Broken };
  Sshd ensureSshd(QString* why);
  QJsonObject sshHost(const QString& name, int port, const QString& workDir) const;
  QString writeSpec(const QString& name, double seconds, const QJsonObject& launch);

  QTemporaryDir m_dir;
  QProcess m_sshd;
  int m_port = 0;
  bool m_sshdTried = false;
  Sshd m_sshdState = Sshd::Ready;
  QString m_sshdProblem;
};

// --- placement and validation ---

void TestSshLaunch::placementWithoutHostsIsLocal() {
  const auto spec = parse(R"({"cluster": {"count": 2}})");
  auto p = net::placeNodes(spec, {"server"}, {"worker-0", "worker-1"}, "/opt/dasp");
  QVERIFY2(p.isOk(), p.message().c_str());
  QVERIFY(!p->placed);
  QCOMPARE(p->hosts.size(), std::size_t{1});
  QCOMPARE(p->hostOf("server").address(), std::string("127.0.0.1"));
  QCOMPARE(p->hostOf("worker-1").dasp_path(), std::string("/opt/dasp"));
  QCOMPARE(p->hostOf("evaluator").name(), p->hostOf("server").name());
  // The dial address follows the bind: a wildcard bind is dialled at the host's address.
  QCOMPARE(net::serverDialAddress("127.0.0.1", p->hostOf("server"), "4000"), std::string("127.0.0.1:4000"));
  QCOMPARE(net::serverDialAddress("0.0.0.0", p->hostOf("server"), "4000"), std::string("127.0.0.1:4000"));
  QCOMPARE(net::serverDialAddress("::1", p->hostOf("server"), "4000"), std::string("[::1]:4000"));
}

void TestSshLaunch::placementCyclesOverHosts() {
  const auto spec = parse(R"({
    "cluster": {"count": 5},
    "launch": {"launcher": "SSH",
      "hosts": [{"name": "a", "address": "10.0.0.1"}, {"name": "b"}, {"name": "c", "work_dir": "/scratch"},
                {"name": "unused"}],
      "placement": {"servers": ["a", "b"], "workers": ["b", "c"]}}})");
  const std::vector<std::string> servers{"server-0", "server-1", "server-2"};
  const std::vector<std::string> workers{"worker-0", "worker-1", "worker-2", "worker-3", "worker-4"};
  auto p = net::placeNodes(spec, servers, workers, "/opt/dasp");
  QVERIFY2(p.isOk(), p.message().c_str());
  QVERIFY(p->placed);
  // Only the hosts in use, in launch.hosts order, with defaults filled in.
  QCOMPARE(p->hosts.size(), std::size_t{3});
  QCOMPARE(p->hosts[1].address(), std::string("b"));
  QCOMPARE(p->hosts[1].work_dir(), std::string("/tmp"));
  QCOMPARE(p->hosts[2].work_dir(), std::string("/scratch"));
  QCOMPARE(p->hosts[0].dasp_path(), std::string("/opt/dasp"));
  // Chain replicas cycle over the servers' hosts; the evaluator goes with the head.
  QCOMPARE(p->hostOf("server-0").name(), std::string("a"));
  QCOMPARE(p->hostOf("server-1").name(), std::string("b"));
  QCOMPARE(p->hostOf("server-2").name(), std::string("a"));
  QCOMPARE(p->hostOf("evaluator").name(), std::string("a"));
  const char* expected[] = {"b", "c", "b", "c", "b"};
  for (std::size_t r = 0; r < workers.size(); ++r) QCOMPARE(p->hostOf(workers[r]).name(), std::string(expected[r]));

  // Hosts but no placement: the server on the first host, workers over every host.
  const auto plain = parse(R"({"launch": {"hosts": [{"name": "x"}, {"name": "y"}]}})");
  auto q = net::placeNodes(plain, {"server"}, {"worker-0", "worker-1", "worker-2"}, "/d");
  QVERIFY(q.isOk());
  QCOMPARE(q->hostOf("server").name(), std::string("x"));
  QCOMPARE(q->hostOf("evaluator").name(), std::string("x"));
  QCOMPARE(q->hostOf("worker-1").name(), std::string("y"));
  QCOMPARE(q->hostOf("worker-2").name(), std::string("x"));
}

void TestSshLaunch::placementErrorsNameFieldAndHosts() {
  const auto spec = parse(R"({"launch": {"launcher": "SSH", "hosts": [{"name": "a"}, {"name": "b"}],
                              "placement": {"workers": ["a", "nowhere"]}}})");
  auto p = net::placeNodes(spec, {"server"}, {"worker-0", "worker-1"}, "/d");
  QVERIFY(!p.isOk());
  QVERIFY2(p.message().find("launch.placement.workers[1]") != std::string::npos, p.message().c_str());
  QVERIFY2(p.message().find("'nowhere'") != std::string::npos, p.message().c_str());
  QVERIFY2(p.message().find("hosts: a, b") != std::string::npos, p.message().c_str());
}

void TestSshLaunch::specValidation() {
  auto problem = [](const QByteArray& json) {
    const auto st = dasp::validateSpec(parse(json));
    return st.isOk() ? std::string() : st.message();
  };
  auto expect = [&](const QByteArray& json, const std::vector<std::string>& parts) {
    const auto message = problem(json);
    QVERIFY2(!message.empty(), json.constData());
    for (const auto& part : parts) {
      QVERIFY2(message.find(part) != std::string::npos, (message + " lacks " + part).c_str());
    }
  };
  QCOMPARE(problem(R"({"launch": {"launcher": "SSH", "hosts": [{"name": "a"}, {"name": "b"}],
                       "placement": {"servers": ["a"], "evaluator": "b", "workers": ["a", "b"]}}})"),
           std::string());
  expect(R"({"launch": {"hosts": [{"name": "a"}, {"name": "b"}], "placement": {"evaluator": "c"}}})",
         {"launch.placement.evaluator", "'c'", "hosts: a, b"});
  expect(R"({"launch": {"hosts": [{"name": "a"}], "placement": {"servers": ["a", "z"]}}})",
         {"launch.placement.servers[1]", "'z'", "hosts: a"});
  expect(R"({"launch": {"launcher": "SSH"}})", {"launch.hosts", "SSH", "at least one host"});
  QCOMPARE(problem(R"({"launch": {"launcher": "SLURM"}})"), std::string());  // its allocation's nodes
  expect(R"({"launch": {"hosts": [{"name": "a"}, {"name": "b"}, {"name": "a"}]}})",
         {"launch.hosts[2].name", "duplicate", "'a'", "launch.hosts[0]"});
  expect(R"({"launch": {"hosts": [{"name": ""}]}})", {"launch.hosts[0].name", "required"});
  expect(R"({"launch": {"hosts": [{"name": "-oProxyCommand=x"}]}})", {"launch.hosts[0].name"});
  expect(R"({"launch": {"hosts": [{"name": "a", "ssh_port": 70000}]}})", {"launch.hosts[0].ssh_port"});
  expect(R"({"launch": {"hosts": [{"name": "a", "work_dir": "relative"}]}})", {"launch.hosts[0].work_dir"});
  expect(R"({"launch": {"launcher": "SSH", "hosts": [{"name": "a", "netns": "ns1"}]}})",
         {"launch.hosts[0].netns", "LOCAL"});
  expect(R"({"launch": {"connect_timeout_s": 0}})", {"launch.connect_timeout_s"});
  expect(R"({"launch": {"server_port": 70000}})", {"launch.server_port"});
  expect(R"({"launch": {"payload_port": -1}})", {"launch.payload_port", "-1"});
  expect(R"({"launch": {"server_port": 9000, "payload_port": 9000}})", {"launch.payload_port", "meets", "9000"});
}

// --- command lines ---

void TestSshLaunch::srunCommandLine() {
  dasp::v1::LaunchSpec launch;
  launch.set_launcher(dasp::v1::LaunchSpec::SLURM);
  launch.add_srun_args("--partition=gpu");
  launch.add_srun_args("--mem=4G");
  dasp::v1::HostSpec host;
  host.set_name("node7");
  host.set_address("10.1.0.7");
  const auto wrapped = net::wrapperArgv({"/opt/dasp", "worker", "--rank", "1"});
  const auto argv = net::srunCommand("/usr/bin/srun", launch, host, wrapped);
  std::vector<std::string> expected{"/usr/bin/srun", "--nodes=1", "--ntasks=1", "--nodelist=node7",
                                    "--partition=gpu", "--mem=4G", "--overlap", "--kill-on-bad-exit=1",
                                    "/bin/sh", "-c", net::nodeWrapperScript(), "dasp-node",
                                    "/opt/dasp", "worker", "--rank", "1"};
  QCOMPARE(argv, expected);
}

void TestSshLaunch::slurmStepsAndOwnAllocation() {
  dasp::v1::LaunchSpec launch;
  launch.set_launcher(dasp::v1::LaunchSpec::SLURM);
  launch.add_salloc_args("--partition=short");
  launch.add_salloc_args("--time=30");
  dasp::v1::HostSpec a, b;
  a.set_name("node1");
  b.set_name("node2");
  // A step of the runner's own allocation names its job, and every step its node.
  const auto step = net::srunCommand("srun", launch, a, {"true"}, net::SrunStep{"42", "worker-3"});
  const std::vector<std::string> stepHead{"srun", "--nodes=1", "--ntasks=1", "--nodelist=node1", "--jobid=42",
                                          "--job-name=worker-3", "--overlap", "--kill-on-bad-exit=1", "true"};
  QCOMPARE(step, stepHead);
  // The allocation: one node per host, by name, then the holder that keeps it.
  const auto salloc = net::sallocCommand("salloc", launch, {a, b}, "dasp-run-1");
  const std::vector<std::string> head{"salloc", "--job-name=dasp-run-1", "--nodes=2", "--nodelist=node1,node2",
                                      "--partition=short", "--time=30", "/bin/sh", "-c"};
  QCOMPARE(std::vector<std::string>(salloc.begin(), salloc.end() - 1), head);
  QVERIFY(QString::fromStdString(salloc.back()).contains("SLURM_JOB_ID"));
  // Without hosts: two nodes, whichever Slurm gives, unless the arguments ask for a number.
  const auto any = net::sallocCommand("salloc", launch, {}, "dasp-run-2");
  QCOMPARE(std::vector<std::string>(any.begin(), any.begin() + 3),
           (std::vector<std::string>{"salloc", "--job-name=dasp-run-2", "--nodes=2"}));
  for (const char* nodes : {"-N5", "--nodes=5", "-N"}) {
    launch.add_salloc_args(nodes);
    const auto asked = net::sallocCommand("salloc", launch, {}, "dasp-run-3");
    QCOMPARE(std::count(asked.begin(), asked.end(), std::string("--nodes=2")), 0L);
    launch.mutable_salloc_args()->RemoveLast();
  }
  // Each worker's device: its slot in the list it inherits, or the slot itself.
  QCOMPARE(net::cudaVisibleDevices(1, nullptr), std::string("1"));
  QCOMPARE(net::cudaVisibleDevices(1, ""), std::string("1"));
  QCOMPARE(net::cudaVisibleDevices(1, "4,6"), std::string("6"));
  QCOMPARE(net::cudaVisibleDevices(3, "4,6,GPU-9f2e"), std::string("4"));
}

void TestSshLaunch::slurmScriptOfASpec() {
  auto script = [](const QByteArray& json, const net::SlurmScriptOptions& options = {}) {
    auto r = net::slurmBatchScript(parse(json), options);
    return r ? QString::fromStdString(r.value()) : QStringLiteral("error: ") + QString::fromStdString(r.message());
  };
  // Named hosts: those nodes, the most tasks any of them runs (a chain of 3 over 2 hosts
  // puts 2 replicas and the evaluator on "a"), their most GPUs.
  const QString named = script(R"({"cluster": {"count": 2}, "recovery": {"mode": "CHAIN", "replicas": 3},
      "launch": {"hosts": [{"name": "a", "gpus": 1}, {"name": "b", "gpus": 4}],
                 "placement": {"servers": ["a", "b"], "workers": ["b"]}}})");
  for (const char* line : {"--nodes=2\n", "--nodelist=a,b\n", "--ntasks-per-node=3\n", "--gres=gpu:4\n"}) {
    QVERIFY2(named.contains(QStringLiteral("#SBATCH ") + line), qPrintable(named));
  }
  QVERIFY(named.contains(QLatin1String("\"launcher\": \"SLURM\"")));
  // No hosts: --nodes of them (the workers share all but the first), no GPUs unless asked.
  net::SlurmScriptOptions options;
  options.nodes = 3;
  options.gpusPerNode = 2;
  options.db = "/data/my runs.db";
  const QString hostless = script(R"({"cluster": {"count": 9}})", options);
  for (const char* line : {"#SBATCH --nodes=3\n", "#SBATCH --ntasks-per-node=5\n", "#SBATCH --gres=gpu:2\n",
                           "db='/data/my runs.db'\n"}) {
    QVERIFY2(hostless.contains(QLatin1String(line)), qPrintable(hostless));
  }
  QVERIFY(!script(R"({})").contains(QLatin1String("--gres")));
  // A name is one word in the script, whatever the spec's name holds.
  const QString odd = script(R"({"name": "a b$(reboot)\"\nx/y"})");
  QVERIFY2(odd.contains(QLatin1String("#SBATCH --job-name=dasp-a_b__reboot___x_y\n")), qPrintable(odd));
  QVERIFY2(odd.contains(QLatin1String("db=\"$SLURM_SUBMIT_DIR/dasp-a_b__reboot___x_y-$SLURM_JOB_ID.db\"\n")),
           qPrintable(odd));
  // What a script cannot carry is named.
  QVERIFY(script(R"({"launch": {"salloc_args": ["--time=5", "long"]}})").contains("launch.salloc_args[1]: 'long'"));
  QVERIFY(script(R"({"launch": {"hosts": [{"name": "a"}]}})", options).contains("--nodes: the spec names its hosts"));
}

void TestSshLaunch::sshCommandLine() {
  dasp::v1::LaunchSpec launch;
  launch.set_launcher(dasp::v1::LaunchSpec::SSH);
  launch.set_connect_timeout_s(2.5);
  dasp::v1::HostSpec host;
  host.set_name("a");
  host.set_address("10.0.0.2");
  host.set_ssh_port(2222);
  host.set_ssh_user("lab");
  host.add_ssh_options("-i");
  host.add_ssh_options("/keys/lab");
  const std::vector<std::string> remote{"printf", "%s\\n", "a b", "it's", "$HOME"};
  const auto argv = net::sshCommand("/usr/bin/ssh", launch, host, remote);
  const std::vector<std::string> head{"/usr/bin/ssh", "-T", "-o", "BatchMode=yes", "-o", "ConnectTimeout=3",
                                      "-p", "2222", "-l", "lab", "-i", "/keys/lab",
                                      "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "--", "10.0.0.2"};
  QCOMPARE(std::vector<std::string>(argv.begin(), argv.end() - 1), head);
  // The remote command survives the remote shell word for word.
  QProcess sh;
  sh.start("/bin/sh", {"-c", QString::fromStdString(argv.back())});
  QVERIFY(sh.waitForFinished(10000));
  QCOMPARE(QString::fromUtf8(sh.readAllStandardOutput()), QString("a b\nit's\n$HOME\n"));
  QCOMPARE(net::shellQuote("it's"), std::string("'it'\\''s'"));
  // The environment block: names checked, one line per variable, an empty line last.
  auto block = net::wrapperEnvBlock({{"DASP_RUN_TOKEN", "abc"}, {"X", "1 2"}});
  QVERIFY(block.isOk());
  QCOMPARE(block.value(), std::string("DASP_RUN_TOKEN=abc\nX=1 2\n\n"));
  QVERIFY(!net::wrapperEnvBlock({{"BAD NAME", "x"}}).isOk());
  QVERIFY(!net::wrapperEnvBlock({{"X", "two\nlines"}}).isOk());
}

void TestSshLaunch::missingNetnsIsNamed() {
  dasp::v1::LaunchSpec launch;
  auto made = net::makeLauncher(launch, m_dir.path().toStdString());
  QVERIFY(made.isOk());
  dasp::v1::HostSpec host;
  host.set_name("emulated-b");
  host.set_address("10.9.0.2");
  host.set_dasp_path(test_support::daspBinary().toStdString());
  host.set_netns("dasp-test-no-such-namespace");
  const auto st = made.value()->prepare({host});
  QVERIFY(!st.isOk());
  QVERIFY2(st.message().find("dasp-test-no-such-namespace") != std::string::npos, st.message().c_str());
  QVERIFY2(st.message().find("emulated-b") != std::string::npos, st.message().c_str());
}

// --- the wrapper, locally ---

void TestSshLaunch::wrapperForwardsSignalsAndStopsWithoutRunner() {
  const std::string marker = "DASP_TEST_MARK=" + std::to_string(getpid()) + "-wrapper";
  auto findSleep = [&]() -> pid_t {
    for (pid_t pid : allPids()) {
      const auto argv = cmdlineOf(pid);
      if (argv.size() == 2 && argv[0] == "sleep" && argv[1] == "300" &&
          test_support::procFile(pid, "environ").find(marker) != std::string::npos) {
        return pid;
      }
    }
    return 0;
  };
  auto state = [](pid_t pid) {
    const std::string stat = test_support::procFile(pid, "stat");
    const auto close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
  };
  const std::map<std::string, std::string> env{{"DASP_TEST_MARK", marker.substr(marker.find('=') + 1)},
                                               {"DASP_RUN_TOKEN", "secret-token-0123456789"}};
  {
    auto node = net::NodeProcess::startWrapped("t", "here", net::wrapperArgv({"sleep", "300"}), env);
    QVERIFY2(node.isOk(), node.message().c_str());
    auto& n = *node.value();
    QVERIFY(n.remote());
    pid_t sleeper = 0;
    QTRY_VERIFY_WITH_TIMEOUT((sleeper = findSleep()) > 0, 10000);
    // The token is in the environment, on no command line.
    for (pid_t pid : allPids()) {
      for (const auto& arg : cmdlineOf(pid)) QVERIFY(arg.find("secret-token-0123456789") == std::string::npos);
    }
    n.signal(SIGSTOP);
    QTRY_COMPARE_WITH_TIMEOUT(state(sleeper), 'T', 10000);
    n.signal(SIGCONT);
    // Resumed: any state but stopped ('T', or 't' when traced); '?' is a vanished process
    // and 'Z' one that died, both failures.
    auto resumed = [&] {
      const char c = state(sleeper);
      return c != 'T' && c != 't' && c != '?' && c != 'Z' && c != 'X';
    };
    QTRY_VERIFY2_WITH_TIMEOUT(
        resumed(), qPrintable(QStringLiteral("sleep %1 is in state '%2' after CONT").arg(sleeper).arg(state(sleeper))),
        10000);
    n.signal(SIGKILL);
    const auto exit = n.waitFor(10.0);
    QVERIFY(exit.has_value());
    QVERIFY2(exit->signal.has_value() && *exit->signal == SIGKILL, exit->describe().c_str());
    QVERIFY(findSleep() == 0);
  }
  {
    // End of file on the control channel (the connection is gone): the node is stopped.
    auto node = net::NodeProcess::startWrapped("t", "here", net::wrapperArgv({"sleep", "300"}), env);
    QVERIFY(node.isOk());
    QTRY_VERIFY_WITH_TIMEOUT(findSleep() > 0, 10000);
    node.value()->control()->close();
    const auto exit = node.value()->waitFor(20.0);
    QVERIFY(exit.has_value());
    QVERIFY2(exit->signal.has_value() && *exit->signal == SIGTERM, exit->describe().c_str());
    QTRY_VERIFY_WITH_TIMEOUT(findSleep() == 0, 10000);
  }
  {
    // No PING (the runner or the network is gone, the connection still open): the
    // watchdog stops the node after three empty looks (here 1 s apart).
    auto quick = env;
    quick["DASP_WATCHDOG_S"] = "1";
    auto node = net::NodeProcess::startWrapped("t", "here", net::wrapperArgv({"sleep", "300"}), quick);
    QVERIFY(node.isOk());
    QTRY_VERIFY_WITH_TIMEOUT(findSleep() > 0, 10000);
    const auto exit = node.value()->waitFor(30.0);
    QVERIFY(exit.has_value());
    QVERIFY2(exit->signal.has_value() && *exit->signal == SIGTERM, exit->describe().c_str());
    QVERIFY(findSleep() == 0);
  }
}

// --- a real sshd ---

TestSshLaunch::Sshd TestSshLaunch::ensureSshd(QString* why) {
  if (m_sshdTried) {
    *why = m_sshdProblem;
    return m_sshdState;
  }
  m_sshdTried = true;
  auto give = [&](const QString& problem, Sshd state = Sshd::Broken) {
    m_sshdProblem = problem;
    m_sshdState = state;
    *why = problem;
    return state;
  };
  if (!QFile::exists("/usr/sbin/sshd")) {
    return give("/usr/sbin/sshd is not installed (package openssh-server)", Sshd::Missing);
  }
  if (QStandardPaths::findExecutable("ssh-keygen").isEmpty() || QStandardPaths::findExecutable("ssh").isEmpty()) {
    return give("ssh-keygen or ssh is not installed (package openssh-client)", Sshd::Missing);
  }
  const QString dir = m_dir.filePath("sshd");
  QDir().mkpath(dir);
  for (const char* key : {"host_key", "user_key"}) {
    QProcess keygen;
    keygen.start("ssh-keygen", {"-q", "-t", "ed25519", "-N", "", "-C", "dasp-test", "-f", dir + "/" + key});
    if (!keygen.waitForFinished(30000) || keygen.exitCode() != 0) {
      return give("ssh-keygen failed: " + QString::fromUtf8(keygen.readAllStandardError()));
    }
  }
  QFile::copy(dir + "/user_key.pub", dir + "/authorized_keys");
  QFile::setPermissions(dir + "/authorized_keys", QFileDevice::ReadOwner | QFileDevice::WriteOwner);
  if (getuid() == 0) QDir().mkpath("/run/sshd");  // sshd's privilege separation directory
  m_port = freePort();
  QFile config(dir + "/sshd_config");
  if (!config.open(QIODevice::WriteOnly)) return give("cannot write the sshd config");
  config.write(QStringLiteral("Port %1\nListenAddress 127.0.0.1\nHostKey %2/host_key\n"
                              "AuthorizedKeysFile %2/authorized_keys\nPidFile %2/sshd.pid\n"
                              "PermitRootLogin prohibit-password\nStrictModes no\nUsePAM no\n"
                              "PasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                              "PubkeyAuthentication yes\nLogLevel INFO\n")
                   .arg(m_port)
                   .arg(dir)
                   .toUtf8());
  config.close();
  m_sshd.setProcessChannelMode(QProcess::MergedChannels);
  m_sshd.start("/usr/sbin/sshd", {"-D", "-e", "-f", dir + "/sshd_config"});
  if (!m_sshd.waitForStarted(10000)) return give("sshd did not start");
  QString log;
  QElapsedTimer timer;
  timer.start();
  while (!log.contains("Server listening on 127.0.0.1") && timer.elapsed() < 20000 &&
         m_sshd.state() == QProcess::Running) {
    m_sshd.waitForReadyRead(200);
    log += QString::fromUtf8(m_sshd.readAll());
  }
  if (!log.contains("Server listening on 127.0.0.1")) return give("sshd did not listen: " + log.trimmed());
  return Sshd::Ready;
}

QJsonObject TestSshLaunch::sshHost(const QString& name, int port, const QString& workDir) const {
  const QString dir = m_dir.filePath("sshd");
  return QJsonObject{{"name", name},
                     {"address", "127.0.0.1"},
                     {"ssh_port", port},
                     {"ssh_user", QString::fromStdString(userName())},
                     {"work_dir", workDir},
                     {"ssh_options", QJsonArray{"-i", dir + "/user_key", "-o", "IdentitiesOnly=yes", "-o",
                                                "StrictHostKeyChecking=no", "-o",
                                                "UserKnownHostsFile=" + dir + "/known_hosts", "-o",
                                                "LogLevel=ERROR"}}};
}

QString TestSshLaunch::writeSpec(const QString& name, double seconds, const QJsonObject& launch) {
  test_support::SyntheticSpec base;
  base.name = name;
  base.strategy = QStringLiteral("bsp");
  base.workers = 2;
  base.trainCount = 2048;
  base.testCount = 256;
  base.maxSeconds = seconds;
  QJsonObject spec = base.json();
  spec["launch"] = launch;
  return test_support::writeSpecFile(m_dir.path(), name, spec);
}

void TestSshLaunch::sshRunCompletes() {
  QString why;
  const auto sshd = ensureSshd(&why);
  if (sshd == Sshd::Missing) QSKIP(qPrintable(why));
  QVERIFY2(sshd == Sshd::Ready, qPrintable(why));
  const QString work = m_dir.filePath("work-a");
  QDir().mkpath(work);
  const QJsonObject launch{{"launcher", "SSH"},
                           {"connect_timeout_s", 5},
                           {"hosts", QJsonArray{sshHost("localhost", m_port, work)}},
                           {"placement", QJsonObject{{"servers", QJsonArray{"localhost"}},
                                                     {"evaluator", "localhost"},
                                                     {"workers", QJsonArray{"localhost"}}}}};
  const auto db = m_dir.filePath("ssh-a.sqlite");
  QProcess p;
  test_support::startDasp(p, {"run", writeSpec("ssh-short", 3, launch), "--db", db, "--json", "--quiet"});
  QVERIFY(p.waitForFinished(scaled(120000)));
  const auto err = QString::fromUtf8(p.readAllStandardError());
  QVERIFY2(p.exitCode() == 0, qPrintable(err));
  const auto lines = QString::fromUtf8(p.readAllStandardOutput()).trimmed().split('\n');
  const auto json = QJsonDocument::fromJson(lines.last().toUtf8()).object();
  QVERIFY2(json["updates"].toInt() > 10, qPrintable(lines.last()));

  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  const auto runId = static_cast<std::int64_t>(json["run_id"].toInteger());
  QCOMPARE(store.value()->run(runId)->status, dasp::RunStatus::Completed);
  QVERIFY(store.value()->evaluations(runId)->size() >= 2);
  QVERIFY(!store.value()->logs(runId, "server")->empty());  // output streamed back through ssh
  const auto nodes = store.value()->nodes(runId).value();
  QVERIFY(nodes.size() >= 4);  // server, 2 workers, evaluator
  for (const auto& n : nodes) {
    QCOMPARE(n.host, std::string("localhost"));
    QVERIFY2(n.exitCode.has_value() && *n.exitCode == 0, n.node.c_str());
  }
  // Nothing of the run is left on the host: no node process, no run directory.
  const std::string marker = "DASP_RUN_DIR=" + work.toStdString() + "/";
  QTRY_VERIFY_WITH_TIMEOUT(markedDaspProcesses(marker).empty(), scaled(20000));
  QVERIFY2(QDir(work).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).isEmpty(),
           qPrintable(QDir(work).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).join(", ")));
}

void TestSshLaunch::killedClientsLeaveNoNodes() {
  QString why;
  const auto sshd = ensureSshd(&why);
  if (sshd == Sshd::Missing) QSKIP(qPrintable(why));
  QVERIFY2(sshd == Sshd::Ready, qPrintable(why));
  const QString work = m_dir.filePath("work-b");
  QDir().mkpath(work);
  // A host with 2 GPUs: its workers take one each.
  QJsonObject host = sshHost("localhost", m_port, work);
  host["gpus"] = 2;
  const QJsonObject launch{{"launcher", "SSH"}, {"hosts", QJsonArray{host}}};
  const auto db = m_dir.filePath("ssh-b.sqlite");
  QProcess p;
  test_support::startDasp(p, {"run", writeSpec("ssh-long", 120, launch), "--db", db, "--quiet"});
  QVERIFY(p.waitForStarted());
  const std::string marker = "DASP_RUN_DIR=" + work.toStdString() + "/";
  // Training runs: four node processes on the "host" and evaluations in the store.
  auto training = [&]() -> bool {
    if (markedDaspProcesses(marker).size() < 4) return false;
    auto store = dasp::RunStore::open(db.toStdString());
    if (!store) return false;
    auto runs = store.value()->listRuns();
    if (!runs || runs->empty()) return false;
    auto evals = store.value()->evaluations(runs->front().id);
    return evals && evals->size() >= 2;
  };
  QTRY_VERIFY_WITH_TIMEOUT(training(), scaled(60000));

  // The nodes have the run's token in their environment; no command line shows it.
  const auto nodes = markedDaspProcesses(marker);
  const std::string envText = test_support::procFile(nodes.front(), "environ");
  const auto at = envText.find("DASP_RUN_TOKEN=");
  QVERIFY(at != std::string::npos);
  const std::string token = envText.substr(at + 15, envText.find('\0', at) - at - 15);
  QVERIFY(token.size() >= 16);
  for (pid_t pid : allPids()) {
    for (const auto& arg : cmdlineOf(pid)) QVERIFY2(arg.find(token) == std::string::npos, arg.c_str());
  }

  // Each worker sees its own GPU of the host; the server and the evaluator are not given one.
  const auto devices = test_support::environmentByNode(nodes, "CUDA_VISIBLE_DEVICES");
  const std::map<std::string, std::string> expected{
      {"server", "(unset)"}, {"evaluator", "(unset)"}, {"worker-0", "0"}, {"worker-1", "1"}};
  QVERIFY2(devices == expected, test_support::describe(devices).c_str());

  // 1. Kill the ssh client of worker-1 (a child of the runner): its remote node goes.
  pid_t client = 0;
  pid_t worker1 = 0;
  for (pid_t pid : allPids()) {
    const std::string stat = test_support::procFile(pid, "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 2));
    char state = 0;
    long ppid = 0;
    fields >> state >> ppid;
    const auto argv = cmdlineOf(pid);
    if (ppid == p.processId() && !argv.empty() && argv.front().find("ssh") != std::string::npos &&
        argv.back().find("'--name' 'worker-1'") != std::string::npos) {
      client = pid;
    }
  }
  for (pid_t pid : nodes) {
    const auto argv = cmdlineOf(pid);
    for (std::size_t i = 0; i + 1 < argv.size(); ++i) {
      if (argv[i] == "--name" && argv[i + 1] == "worker-1") worker1 = pid;
    }
  }
  QVERIFY(client > 0);
  QVERIFY(worker1 > 0);
  QCOMPARE(::kill(client, SIGKILL), 0);
  QTRY_VERIFY_WITH_TIMEOUT(::kill(worker1, 0) != 0 || cmdlineOf(worker1).empty(), scaled(30000));
  QCOMPARE(p.state(), QProcess::Running);  // the run goes on without worker-1

  // 2. Kill the runner itself: every node of the run goes, however it was started.
  p.kill();
  QVERIFY(p.waitForFinished(scaled(10000)));
  QTRY_VERIFY_WITH_TIMEOUT(markedDaspProcesses(marker).empty(), scaled(40000));
}

void TestSshLaunch::unreachableHostFailsFast() {
  QString why;
  const auto sshd = ensureSshd(&why);
  if (sshd == Sshd::Missing) QSKIP(qPrintable(why));
  QVERIFY2(sshd == Sshd::Ready, qPrintable(why));
  const QString work = m_dir.filePath("work-c");
  QDir().mkpath(work);
  // A reachable host and one at a closed port: the run fails before any node starts.
  const QJsonObject launch{{"launcher", "SSH"},
                           {"connect_timeout_s", 5},
                           {"hosts", QJsonArray{sshHost("near", m_port, work), sshHost("far-away", freePort(), work)}},
                           {"placement", QJsonObject{{"servers", QJsonArray{"near"}},
                                                     {"workers", QJsonArray{"near", "far-away"}}}}};
  const auto db = m_dir.filePath("ssh-c.sqlite");
  QElapsedTimer timer;
  timer.start();
  QProcess p;
  test_support::startDasp(p, {"run", writeSpec("ssh-unreachable", 60, launch), "--db", db, "--quiet"});
  QVERIFY(p.waitForFinished(scaled(60000)));
  QVERIFY(timer.elapsed() < 30000);
  QVERIFY(p.exitCode() != 0);
  const auto err = QString::fromUtf8(p.readAllStandardError());
  QVERIFY2(err.contains("host 'far-away'") && err.contains("127.0.0.1") && err.contains("ssh failed"),
           qPrintable(err));
  QVERIFY2(err.contains("refused", Qt::CaseInsensitive), qPrintable(err));
  auto store = dasp::RunStore::open(db.toStdString());
  QVERIFY(store.isOk());
  const auto runs = store.value()->listRuns().value();
  QCOMPARE(runs.size(), std::size_t{1});
  QCOMPARE(store.value()->run(runs.front().id)->status, dasp::RunStatus::Failed);
  QVERIFY(store.value()->nodes(runs.front().id)->empty());  // no node was started
  QVERIFY(markedDaspProcesses("DASP_RUN_DIR=" + work.toStdString() + "/").empty());
  QVERIFY(QDir(work).entryList(QDir::AllEntries | QDir::NoDotAndDotDot).isEmpty());
}

void TestSshLaunch::cleanupTestCase() {
  if (m_sshd.state() != QProcess::NotRunning) {
    m_sshd.terminate();
    if (!m_sshd.waitForFinished(10000)) m_sshd.kill();
  }
}

QTEST_GUILESS_MAIN(TestSshLaunch)
#include "tst_ssh_launch.moc"
