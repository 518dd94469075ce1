// SPDX-License-Identifier: MIT
// dasp-gui-bench: the workbench's cost while a large run is live.
//
//   dasp-gui-bench [--seconds N] [--workers N] [--strategy NAME] [--json] [--skip-headless]
//
// Writes a spec (N logreg workers on the synthetic dataset, 200 ms emulated iterations,
// stop.max_seconds), then runs it twice:
// 1. headless: `dasp run SPEC` in a child process. Its CPU is the runner process's own
//    (utime + stime from /proc/<pid>/stat, sampled every 100 ms up to its exit; the
//    workers, the server and the evaluator are separate processes and not counted);
// 2. in a real MainWindow (offscreen unless a display is set), launched from its designer
//    with the workbench's RunController. The runner then runs inside the GUI process on a
//    background thread, so the process's CPU (getrusage RUSAGE_SELF) is the runner's plus
//    the GUI's; the GUI thread's own CPU comes from /proc/self/task/<tid>/stat. Meanwhile
//    a 10 ms precise timer on the GUI thread records how late each tick fires: the
//    event-loop latency (p50, p99, max).
// Prints a table, and with --json one JSON line:
//   {"gui_cpu_percent":..,"gui_thread_cpu_percent":..,"headless_runner_cpu_percent":..,
//    "gui_overhead_cpu_percent":..,"event_loop_p50_ms":..,"event_loop_p99_ms":..,
//    "event_loop_max_ms":..,"workers":32,"seconds":30,...}
// CPU percentages are of one core, over each run's wall time (start-up included); the
// overhead is the workbench's CPU seconds less the headless runner's, over the GUI run's wall.

#include "core/spec/spec.h"
#include "ui/main_window.h"
#include "ui/live/run_controller.h"
#include "ui/designer/spec_designer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  int seconds = 30;
  int workers = 32;
  std::string strategy = "asp";  // no barrier: the most events per second for the GUI
  bool json = false;
  bool skipHeadless = false;
};

void usage(FILE* out) {
  std::fputs(
      "usage: dasp-gui-bench [--seconds N] [--workers N] [--strategy NAME] [--json] [--skip-headless]\n"
      "Runs N logreg workers (synthetic data, 200 ms emulated iterations) once with `dasp run` and once in\n"
      "the workbench window, and reports the GUI's event-loop latency and CPU against the headless runner.\n",
      out);
}

bool parseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto number = [&](int& into) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || v < 1 || v > 100000) return false;
      into = static_cast<int>(v);
      return true;
    };
    if (a == "--seconds") {
      if (!number(o.seconds)) return false;
    } else if (a == "--workers") {
      if (!number(o.workers)) return false;
    } else if (a == "--strategy" && i + 1 < argc) {
      o.strategy = argv[++i];
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--skip-headless") {
      o.skipHeadless = true;
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    } else {
      return false;
    }
  }
  return true;
}

// utime + stime of /proc/<pid>[/task/<tid>]/stat in seconds; negative when unreadable.
double procCpuSeconds(const QString& statPath) {
  QFile f(statPath);
  if (!f.open(QIODevice::ReadOnly)) return -1;
  const QByteArray text = f.readAll();
  const int paren = text.lastIndexOf(')');  // the command name may hold spaces
  if (paren < 0) return -1;
  const QList<QByteArray> fields = text.mid(paren + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  if (fields.size() < 13) return -1;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (fields[11].toDouble() + fields[12].toDouble()) / ticks;
}

double selfCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - (q > 0 ? 1 : 0);
  return v[std::min(k, v.size() - 1)];
}

struct Headless {
  bool ok = false;
  double wall = 0, cpu = 0;
  QString error;
};

Headless runHeadless(const QString& dasp, const QString& spec, const QString& db, int limitSeconds) {
  Headless h;
  QProcess proc;
  proc.setProcessChannelMode(QProcess::ForwardedErrorChannel);
  proc.setStandardOutputFile(QProcess::nullDevice());
  QElapsedTimer wall;
  wall.start();
  proc.start(dasp, {QStringLiteral("run"), spec, QStringLiteral("--db"), db, QStringLiteral("--quiet")});
  if (!proc.waitForStarted(10000)) {
    h.error = QStringLiteral("cannot start %1: %2").arg(dasp, proc.errorString());
    return h;
  }
  const QString stat = QStringLiteral("/proc/%1/stat").arg(proc.processId());
  // Sampled until the exit: the last sample misses at most 100 ms of the runner's shutdown.
  while (!proc.waitForFinished(100)) {
    const double cpu = procCpuSeconds(stat);
    if (cpu >= 0) h.cpu = cpu;
    if (wall.elapsed() > static_cast<qint64>(limitSeconds) * 1000) {
      proc.terminate();
      proc.waitForFinished(30000);
      h.error = QStringLiteral("dasp run took longer than %1 s").arg(limitSeconds);
      return h;
    }
  }
  h.wall = static_cast<double>(wall.nsecsElapsed()) * 1e-9;
  h.ok = proc.exitStatus() == QProcess::NormalExit && proc.exitCode() == 0;
  if (!h.ok) h.error = QStringLiteral("dasp run exited with %1").arg(proc.exitCode());
  return h;
}

struct Gui {
  bool ok = false;
  double wall = 0, processCpu = 0, threadCpu = 0;
  double p50 = 0, p99 = 0, max = 0;
  std::size_t ticks = 0;
  std::int64_t iterations = 0;
  int lanes = 0;
  QString status, error;
};

Gui runGui(const QString& specPath, const QString& db, int limitSeconds) {
  Gui g;
  dasp::ui::MainWindow window(db);
  window.resize(1600, 1000);
  window.show();
  if (!window.designer()->loadFile(specPath)) {
    g.error = window.designer()->message();
    return g;
  }
  QCoreApplication::processEvents();  // the first layout and paint are not the run's

  // The event-loop probe: how late a 10 ms tick fires on the GUI thread.
  constexpr qint64 kProbeNs = 10'000'000;
  std::vector<double> lateMs;
  lateMs.reserve(static_cast<std::size_t>(limitSeconds) * 100);
  QElapsedTimer clock;
  qint64 last = 0;
  QTimer probe;
  probe.setTimerType(Qt::PreciseTimer);
  probe.setInterval(10);
  QObject::connect(&probe, &QTimer::timeout, [&] {
    const qint64 now = clock.nsecsElapsed();
    lateMs.push_back(static_cast<double>(std::max<qint64>(now - last - kProbeNs, 0)) * 1e-6);
    last = now;
  });

  const QString threadStat = QStringLiteral("/proc/self/task/%1/stat").arg(getpid());  // the main thread's tid
  const double cpu0 = selfCpuSeconds();
  const double thread0 = procCpuSeconds(threadStat);
  clock.start();
  if (!window.launch()) {
    g.error = window.designer()->message();
    return g;
  }
  last = clock.nsecsElapsed();
  probe.start();
  QEventLoop loop;
  QObject::connect(window.controller(), &dasp::ui::RunController::finished, &loop, &QEventLoop::quit);
  QTimer::singleShot(limitSeconds * 1000, &loop, &QEventLoop::quit);
  loop.exec();
  probe.stop();
  g.wall = static_cast<double>(clock.nsecsElapsed()) * 1e-9;
  g.processCpu = selfCpuSeconds() - cpu0;
  g.threadCpu = procCpuSeconds(threadStat) - thread0;
  if (window.controller()->isRunning()) {
    g.error = QStringLiteral("the run took longer than %1 s").arg(limitSeconds);
    window.controller()->stopAndWait();
  }
  g.ticks = lateMs.size();
  g.p50 = percentile(lateMs, 0.50);
  g.p99 = percentile(lateMs, 0.99);
  g.max = lateMs.empty() ? 0 : *std::max_element(lateMs.begin(), lateMs.end());
  const dasp::ui::RunData& d = window.liveData();
  g.status = d.status;
  g.lanes = static_cast<int>(d.nodes.size());
  for (const auto& n : d.nodes) g.iterations += n.iterations;
  g.ok = g.error.isEmpty() && d.status == QLatin1String("completed");
  if (g.error.isEmpty() && !g.ok) g.error = QStringLiteral("the run ended %1").arg(d.status);
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parseArgs(argc, argv, o)) {
    usage(stderr);
    return 2;
  }
  // Offscreen unless there is a display; the nodes share the machine's cores, so their
  // math libraries keep to one thread each (as the tests do) in both runs alike.
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY") &&
      qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  if (qEnvironmentVariableIsEmpty("OMP_NUM_THREADS")) qputenv("OMP_NUM_THREADS", "1");
  if (qEnvironmentVariableIsEmpty("OMP_WAIT_POLICY")) qputenv("OMP_WAIT_POLICY", "PASSIVE");
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("dasp-gui-bench"));

  const QString dasp = dasp::ui::RunController::daspBinary();
  if (!QFileInfo(dasp).isExecutable()) {
    std::fprintf(stderr, "dasp-gui-bench: no dasp executable at %s (set DASP_BIN)\n", qPrintable(dasp));
    return 1;
  }
  QTemporaryDir dir;
  if (!dir.isValid()) {
    std::fprintf(stderr, "dasp-gui-bench: cannot create a temporary directory\n");
    return 1;
  }
  const QString specPath = dir.filePath(QStringLiteral("gui-bench.json"));
  {
    const QString json = QStringLiteral(R"({
  "name": "gui-bench",
  "model": {"name": "logreg"},
  "dataset": {"name": "synthetic", "synthetic": {"train_count": 8192, "test_count": 1024}},
  "batch_size": 32,
  "cluster": {"count": %1, "base_iteration_ms": 200},
  "strategy": {"name": "%2"},
  "stop": {"max_seconds": %3},
  "evaluation": {"every_s": 1, "every_steps": 0},
  "device": "cpu"
}
)")
                             .arg(o.workers)
                             .arg(QString::fromStdString(o.strategy))
                             .arg(o.seconds);
    QFile f(specPath);
    if (!f.open(QIODevice::WriteOnly) || f.write(json.toUtf8()) < 0) {
      std::fprintf(stderr, "dasp-gui-bench: cannot write %s\n", qPrintable(specPath));
      return 1;
    }
  }
  if (auto spec = dasp::loadSpecFile(specPath.toStdString()); !spec) {
    std::fprintf(stderr, "dasp-gui-bench: %s\n", spec.message().c_str());
    return 2;
  }
  const int limit = o.seconds * 3 + 120;  // start-up of many processes on few cores included

  Headless h;
  if (!o.skipHeadless) {
    std::fprintf(stderr, "dasp-gui-bench: headless `dasp run`, %d workers, %d s...\n", o.workers, o.seconds);
    h = runHeadless(dasp, specPath, dir.filePath(QStringLiteral("headless.sqlite")), limit);
    if (!h.ok) std::fprintf(stderr, "dasp-gui-bench: headless run: %s\n", qPrintable(h.error));
  }
  std::fprintf(stderr, "dasp-gui-bench: the same spec in the workbench window (%s)...\n",
               qPrintable(QGuiApplication::platformName()));
  const Gui g = runGui(specPath, dir.filePath(QStringLiteral("gui.sqlite")), limit);
  if (!g.ok) std::fprintf(stderr, "dasp-gui-bench: GUI run: %s\n", qPrintable(g.error));

  auto pct = [](double cpu, double wall) { return wall > 0 ? 100.0 * cpu / wall : 0.0; };
  const double guiPct = pct(g.processCpu, g.wall);
  const double threadPct = pct(g.threadCpu, g.wall);
  const double headlessPct = pct(h.cpu, h.wall);
  std::printf("GUI benchmark: %d logreg workers, synthetic data, 200 ms emulated iterations, %s, %d s (%s)\n",
              o.workers, o.strategy.c_str(), o.seconds, qPrintable(QGuiApplication::platformName()));
  std::printf("  %-44s %10s %10s %12s\n", "", "wall (s)", "CPU (s)", "% of a core");
  if (!o.skipHeadless) {
    std::printf("  %-44s %10.1f %10.2f %12.1f\n", "dasp run (runner process only)", h.wall, h.cpu, headlessPct);
  }
  std::printf("  %-44s %10.1f %10.2f %12.1f\n", "workbench process (GUI + runner thread)", g.wall, g.processCpu, guiPct);
  std::printf("  %-44s %10.1f %10.2f %12.1f\n", "workbench GUI thread only", g.wall, g.threadCpu, threadPct);
  // The GUI's extra CPU seconds (the workbench process's less the headless runner's), per
  // second of the GUI run: the two runs' walls differ with start-up on a busy machine.
  const double overheadPct = pct(g.processCpu - h.cpu, g.wall);
  if (!o.skipHeadless) {
    std::printf("  %-44s %10s %10.2f %12.1f\n", "GUI overhead (workbench - dasp run)", "", g.processCpu - h.cpu,
                overheadPct);
  }
  std::printf("  event-loop latency (10 ms probe, %zu ticks): p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", g.ticks, g.p50,
              g.p99, g.max);
  std::printf("  GUI run: %s, %d lanes, %lld iterations\n", qPrintable(g.status), g.lanes,
              static_cast<long long>(g.iterations));
  if (o.json) {
    std::printf(
        "{\"gui_cpu_percent\":%.2f,\"gui_thread_cpu_percent\":%.2f,\"headless_runner_cpu_percent\":%.2f,"
        "\"gui_overhead_cpu_percent\":%.2f,\"event_loop_p50_ms\":%.3f,\"event_loop_p99_ms\":%.3f,"
        "\"event_loop_max_ms\":%.3f,\"workers\":%d,\"seconds\":%d,\"gui_wall_s\":%.2f,\"headless_wall_s\":%.2f,"
        "\"gui_status\":\"%s\",\"headless_ok\":%s,\"platform\":\"%s\"}\n",
        guiPct, threadPct, headlessPct, o.skipHeadless ? 0.0 : overheadPct, g.p50, g.p99, g.max, o.workers,
        o.seconds, g.wall, h.wall, qPrintable(g.status), h.ok ? "true" : "false",
        qPrintable(QGuiApplication::platformName()));
  }
  return g.ok && (o.skipHeadless || h.ok) ? 0 : 1;
}
