// SPDX-License-Identifier: MIT
// Tests of CheckpointDirectory (core/params/checkpoint.h) on files in temporary directories:
// round trips, pruning, falling back past corrupt/torn/foreign files, bad paths, and a full
// disk (a 1 MiB tmpfs, mounted directly when root, else inside `unshare -Urm`).

#include "core/params/checkpoint.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include <sys/statvfs.h>
#include <unistd.h>

using namespace dasp;

namespace {

// Values with awkward bit patterns (signed zeros, subnormals, infinities, a NaN payload),
// so a bitwise comparison means something.
std::vector<float> sampleValues(std::int64_t count, unsigned seed) {
  std::vector<float> v(static_cast<std::size_t>(count));
  std::uint32_t state = seed * 2654435761u + 1u;
  for (std::size_t i = 0; i < v.size(); ++i) {
    state = state * 1664525u + 1013904223u;
    v[i] = static_cast<float>(static_cast<std::int32_t>(state)) * 1e-9f;
  }
  const float specials[] = {-0.0f, std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (std::size_t i = 0; i < std::size(specials) && i < v.size(); ++i) v[i * 7 % v.size()] = specials[i];
  return v;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

Status writeSample(CheckpointDirectory& dir, std::int64_t version, std::int64_t count,
                   const std::string& model = "mlp") {
  const auto params = sampleValues(count, static_cast<unsigned>(version));
  const auto momentum = sampleValues(count, static_cast<unsigned>(version) + 1000u);
  return dir.write(version, 0.5 * static_cast<double>(version), model, params.data(),
                   momentum.data(), count);
}

bool flipByteAt(const std::string& path, qint64 offset) {
  QFile file(QString::fromStdString(path));
  if (!file.open(QIODevice::ReadWrite)) return false;
  if (!file.seek(offset)) return false;
  char c = 0;
  if (file.read(&c, 1) != 1) return false;
  c = static_cast<char>(c ^ 0x5a);
  return file.seek(offset) && file.write(&c, 1) == 1;
}

qint64 fileSize(const std::string& path) { return QFileInfo(QString::fromStdString(path)).size(); }

QStringList tempFiles(const QString& dir) {
  return QDir(dir).entryList({QStringLiteral(".ckpt-*.tmp")}, QDir::Files | QDir::Hidden);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// The full-disk scenario, run where `dir` is a fresh 1 MiB tmpfs: a 400 KB checkpoint fits,
// an 800 KB one cannot. Returns "" when every check holds, else what failed; `*report` gets
// the error message of the failed write.
std::string fullDiskScenario(const std::string& dir, std::string* report) {
  struct statvfs fs {};
  if (statvfs(dir.c_str(), &fs) != 0) return "statvfs " + dir + " failed";
  const unsigned long long total = static_cast<unsigned long long>(fs.f_blocks) * fs.f_frsize;
  if (total > 2ull * 1024 * 1024) {
    return dir + " is not the small tmpfs (" + std::to_string(total) + " bytes)";
  }
  CheckpointDirectory ckpt(dir, 3);
  if (Status s = ckpt.prepare(); !s) return "prepare: " + s.message();

  constexpr std::int64_t kSmall = 50000;   // 400,047 bytes
  constexpr std::int64_t kLarge = 100000;  // 800,047 bytes: cannot fit next to the first
  const auto params = sampleValues(kSmall, 1);
  const auto momentum = sampleValues(kSmall, 2);
  if (Status s = ckpt.write(1, 1.5, "mlp", params.data(), momentum.data(), kSmall); !s) {
    return "first write failed: " + s.message();
  }
  const auto bigParams = sampleValues(kLarge, 3);
  const auto bigMomentum = sampleValues(kLarge, 4);
  const Status full = ckpt.write(2, 2.5, "mlp", bigParams.data(), bigMomentum.data(), kLarge);
  *report = full.message();
  if (full) return "the large write succeeded on a 1 MiB filesystem";
  const std::string tempPath = dir + "/.ckpt-2.tmp";
  if (full.message().find("No space left on device") == std::string::npos) {
    return "message lacks the errno text: " + full.message();
  }
  if (full.message().find(tempPath) == std::string::npos) {
    return "message does not name " + tempPath + ": " + full.message();
  }
  if (full.message().find("previous checkpoint (version 1) is kept") == std::string::npos) {
    return "message does not name the kept checkpoint: " + full.message();
  }
  if (access(tempPath.c_str(), F_OK) == 0) return "the temp file " + tempPath + " remains";
  if (!tempFiles(QString::fromStdString(dir)).isEmpty()) return "a temp file remains";
  if (ckpt.versions() != std::vector<std::int64_t>{1}) return "versions() is not {1}";

  std::vector<std::string> skipped;
  auto latest = ckpt.loadLatest(&skipped, "mlp", kSmall);
  if (!latest) return "loadLatest failed: " + latest.message();
  if (!skipped.empty()) return "loadLatest skipped files: " + joined(skipped);
  if (latest->version != 1 || latest->runTimeS != 1.5 || latest->model != "mlp") {
    return "loadLatest returned the wrong header";
  }
  if (!sameBits(latest->parameters, params) || !sameBits(latest->momentum, momentum)) {
    return "the first checkpoint did not read back bitwise";
  }
  // The failed write gave its space back: a small checkpoint still fits.
  if (Status s = ckpt.write(3, 3.5, "mlp", params.data(), momentum.data(), 1000); !s) {
    return "a small write after the failure failed: " + s.message();
  }
  return {};
}

// The child mode: this executable started (inside `unshare -Urm`, after mounting the tmpfs)
// with kChildEnv set to the mount point runs the scenario before main() and reports on
// stdout: "FULLDISK-OK <message of the failed write>" or "FULLDISK-FAIL <what failed>".
constexpr const char* kChildEnv = "DASP_TST_CHECKPOINT_FULL_DISK_DIR";

const int kChildHook = [] {
  const char* dir = std::getenv(kChildEnv);
  if (!dir || !*dir) return 0;
  std::string report;
  const std::string failure = fullDiskScenario(dir, &report);
  if (failure.empty()) {
    std::printf("FULLDISK-OK %s\n", report.c_str());
  } else {
    std::printf("FULLDISK-FAIL %s\n", failure.c_str());
  }
  std::fflush(stdout);
  _exit(failure.empty() ? 0 : 1);
}();

// Runs a program; returns "" on exit status 0, else what it printed.
QString runProgram(const QString& program, const QStringList& args, QString* output = nullptr) {
  QProcess proc;
  proc.setProcessChannelMode(QProcess::MergedChannels);
  proc.start(program, args);
  if (!proc.waitForFinished(30000)) {
    proc.kill();
    proc.waitForFinished();
    return program + QStringLiteral(": did not finish (") + proc.errorString() + ")";
  }
  const QString out = QString::fromLocal8Bit(proc.readAll()).trimmed();
  if (output) *output = out;
  if (proc.exitStatus() != QProcess::NormalExit || proc.exitCode() != 0) {
    return program + ' ' + args.join(' ') + QStringLiteral(" failed (exit %1): ").arg(proc.exitCode()) + out;
  }
  return {};
}

}  // namespace

class TestCheckpoint : public QObject {
  Q_OBJECT

 private slots:
  void roundTripIsBitwise() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const std::string dirPath = tmp.filePath(QStringLiteral("a/b/ckpt")).toStdString();
    CheckpointDirectory ckpt(dirPath, 3);
    QCOMPARE(ckpt.dir(), dirPath);
    const Status prepared = ckpt.prepare();  // creates a/b/ckpt
    QVERIFY2(prepared.isOk(), prepared.message().c_str());
    QVERIFY(QFileInfo(QString::fromStdString(dirPath)).isDir());

    constexpr std::int64_t kCount = 10007;
    const auto params = sampleValues(kCount, 11);
    const auto momentum = sampleValues(kCount, 12);
    const Status s = ckpt.write(42, 12.25, "ttf-cnn", params.data(), momentum.data(), kCount);
    QVERIFY2(s.isOk(), s.message().c_str());

    const std::string expectedPath = dirPath + "/ckpt-000000000042.dasp";
    QCOMPARE(ckpt.pathFor(42), expectedPath);
    QVERIFY(QFile::exists(QString::fromStdString(expectedPath)));
    QCOMPARE(fileSize(expectedPath), qint64(44 + 7 + 8 * kCount));
    QVERIFY(tempFiles(QString::fromStdString(dirPath)).isEmpty());
    QCOMPARE(ckpt.versions(), std::vector<std::int64_t>{42});

    std::vector<std::string> skipped;
    auto loaded = ckpt.loadLatest(&skipped, "ttf-cnn", kCount);
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    QVERIFY2(skipped.empty(), joined(skipped).c_str());
    QCOMPARE(loaded->version, std::int64_t(42));
    QCOMPARE(loaded->runTimeS, 12.25);
    QCOMPARE(loaded->model, std::string("ttf-cnn"));
    QCOMPARE(loaded->path, expectedPath);
    QVERIFY(sameBits(loaded->parameters, params));
    QVERIFY(sameBits(loaded->momentum, momentum));

    // An empty model (count 0) round-trips too.
    QVERIFY(ckpt.write(43, 0, "m", nullptr, nullptr, 0).isOk());
    auto empty = ckpt.loadLatest();
    QVERIFY2(empty.isOk(), empty.message().c_str());
    QCOMPARE(empty->version, std::int64_t(43));
    QVERIFY(empty->parameters.empty() && empty->momentum.empty());
  }

  void keepDeletesOldest() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    CheckpointDirectory ckpt(tmp.path().toStdString(), 2);
    QVERIFY(ckpt.prepare().isOk());
    for (std::int64_t v : {100, 200, 300}) {
      const Status s = writeSample(ckpt, v, 64);
      QVERIFY2(s.isOk(), s.message().c_str());
    }
    QCOMPARE(ckpt.versions(), (std::vector<std::int64_t>{200, 300}));
    QVERIFY(!QFile::exists(QString::fromStdString(ckpt.pathFor(100))));
    auto latest = ckpt.loadLatest();
    QVERIFY2(latest.isOk(), latest.message().c_str());
    QCOMPARE(latest->version, std::int64_t(300));

    // The file just written is always kept, even below a leftover higher version (a run
    // restored from an older checkpoint after a corrupt newer one).
    CheckpointDirectory keepOne(tmp.path().toStdString(), 1);
    QVERIFY(writeSample(keepOne, 250, 64).isOk());
    QCOMPARE(keepOne.versions(), (std::vector<std::int64_t>{250}));
  }

  void corruptLatestFallsBack() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    CheckpointDirectory ckpt(tmp.path().toStdString(), 5);
    QVERIFY(ckpt.prepare().isOk());
    QVERIFY(writeSample(ckpt, 1, 5000).isOk());
    QVERIFY(writeSample(ckpt, 2, 5000).isOk());
    const std::string latest = ckpt.pathFor(2);
    QVERIFY(flipByteAt(latest, fileSize(latest) / 2));

    std::vector<std::string> skipped;
    auto loaded = ckpt.loadLatest(&skipped);
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    QCOMPARE(loaded->version, std::int64_t(1));
    QVERIFY(sameBits(loaded->parameters, sampleValues(5000, 1)));
    QCOMPARE(skipped.size(), std::size_t(1));
    QVERIFY2(skipped[0].find(latest) != std::string::npos, skipped[0].c_str());
    QVERIFY2(skipped[0].find("CRC") != std::string::npos, skipped[0].c_str());
    qInfo("skipped: %s", skipped[0].c_str());
  }

  void tornLatestFallsBack() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    CheckpointDirectory ckpt(tmp.path().toStdString(), 5);
    QVERIFY(ckpt.prepare().isOk());
    QVERIFY(writeSample(ckpt, 1, 5000).isOk());
    QVERIFY(writeSample(ckpt, 2, 5000).isOk());
    const std::string latest = ckpt.pathFor(2);
    QVERIFY(QFile::resize(QString::fromStdString(latest), fileSize(latest) / 2));

    std::vector<std::string> skipped;
    auto loaded = ckpt.loadLatest(&skipped);
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    QCOMPARE(loaded->version, std::int64_t(1));
    QCOMPARE(skipped.size(), std::size_t(1));
    QVERIFY2(skipped[0].find(latest) != std::string::npos, skipped[0].c_str());
    QVERIFY2(skipped[0].find("truncated (torn") != std::string::npos, skipped[0].c_str());
    qInfo("skipped: %s", skipped[0].c_str());

    // Shorter than the header, and empty.
    QVERIFY(QFile::resize(QString::fromStdString(latest), 20));
    skipped.clear();
    QCOMPARE(ckpt.loadLatest(&skipped)->version, std::int64_t(1));
    QVERIFY2(skipped.at(0).find("torn") != std::string::npos, skipped[0].c_str());
    QVERIFY(QFile::resize(QString::fromStdString(latest), 0));
    skipped.clear();
    QCOMPARE(ckpt.loadLatest(&skipped)->version, std::int64_t(1));
    QVERIFY2(skipped.at(0).find("torn") != std::string::npos, skipped[0].c_str());
  }

  void wrongMagicSkipped() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    CheckpointDirectory ckpt(tmp.path().toStdString(), 5);
    QVERIFY(ckpt.prepare().isOk());
    QVERIFY(writeSample(ckpt, 1, 100).isOk());
    QVERIFY(writeSample(ckpt, 2, 100).isOk());
    QVERIFY(flipByteAt(ckpt.pathFor(2), 3));

    std::vector<std::string> skipped;
    auto loaded = ckpt.loadLatest(&skipped);
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    QCOMPARE(loaded->version, std::int64_t(1));
    QCOMPARE(skipped.size(), std::size_t(1));
    QVERIFY2(skipped[0].find(ckpt.pathFor(2)) != std::string::npos, skipped[0].c_str());
    QVERIFY2(skipped[0].find("bad magic") != std::string::npos, skipped[0].c_str());
  }

  void allCorruptIsAClearError() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    CheckpointDirectory ckpt(tmp.path().toStdString(), 5);
    QVERIFY(ckpt.prepare().isOk());

    // Empty and missing directories.
    auto none = ckpt.loadLatest();
    QVERIFY(!none.isOk());
    QVERIFY2(none.message().find("no valid checkpoint in " + ckpt.dir()) != std::string::npos,
             none.message().c_str());
    CheckpointDirectory missing(tmp.filePath(QStringLiteral("nope")).toStdString(), 1);
    auto gone = missing.loadLatest();
    QVERIFY(!gone.isOk());
    QVERIFY2(gone.message().find("no valid checkpoint in " + missing.dir()) != std::string::npos,
             gone.message().c_str());
    QVERIFY(missing.versions().empty());

    QVERIFY(writeSample(ckpt, 1, 1000).isOk());
    QVERIFY(writeSample(ckpt, 2, 1000).isOk());
    QVERIFY(flipByteAt(ckpt.pathFor(1), 2000));
    QVERIFY(QFile::resize(QString::fromStdString(ckpt.pathFor(2)), 100));
    std::vector<std::string> skipped;
    auto loaded = ckpt.loadLatest(&skipped);
    QVERIFY(!loaded.isOk());
    const std::string& m = loaded.message();
    qInfo("error: %s", m.c_str());
    QVERIFY2(m.find("no valid checkpoint in " + ckpt.dir()) != std::string::npos, m.c_str());
    QVERIFY2(m.find(ckpt.pathFor(1)) != std::string::npos, m.c_str());
    QVERIFY2(m.find(ckpt.pathFor(2)) != std::string::npos, m.c_str());
    QCOMPARE(skipped.size(), std::size_t(2));
    QVERIFY2(skipped[0].find("torn") != std::string::npos, skipped[0].c_str());  // newest first
    QVERIFY2(skipped[1].find("CRC") != std::string::npos, skipped[1].c_str());
  }

  void modelAndCountMismatchSkipped() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    CheckpointDirectory ckpt(tmp.path().toStdString(), 5);
    QVERIFY(ckpt.prepare().isOk());
    QVERIFY(writeSample(ckpt, 1, 300, "mlp").isOk());
    QVERIFY(writeSample(ckpt, 2, 300, "lenet").isOk());
    QVERIFY(writeSample(ckpt, 3, 301, "mlp").isOk());

    std::vector<std::string> skipped;
    auto loaded = ckpt.loadLatest(&skipped, "mlp", 300);
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    QCOMPARE(loaded->version, std::int64_t(1));
    QCOMPARE(skipped.size(), std::size_t(2));
    QVERIFY2(skipped[0].find(ckpt.pathFor(3)) != std::string::npos, skipped[0].c_str());
    QVERIFY2(skipped[0].find("count mismatch") != std::string::npos, skipped[0].c_str());
    QVERIFY2(skipped[1].find(ckpt.pathFor(2)) != std::string::npos, skipped[1].c_str());
    QVERIFY2(skipped[1].find("model mismatch") != std::string::npos, skipped[1].c_str());
    QVERIFY2(skipped[1].find("lenet") != std::string::npos, skipped[1].c_str());

    // Without expectations the newest wins.
    QCOMPARE(ckpt.loadLatest()->version, std::int64_t(3));
  }

  void staleTempFileIgnored() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    CheckpointDirectory ckpt(tmp.path().toStdString(), 5);
    QVERIFY(ckpt.prepare().isOk());
    QVERIFY(writeSample(ckpt, 1, 100).isOk());
    const QString stale = tmp.filePath(QStringLiteral(".ckpt-7.tmp"));
    {
      QFile file(stale);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write("DASPCKP1 half a checkpoint");
    }
    QCOMPARE(ckpt.versions(), std::vector<std::int64_t>{1});
    std::vector<std::string> skipped;
    auto loaded = ckpt.loadLatest(&skipped);
    QVERIFY2(loaded.isOk(), loaded.message().c_str());
    QCOMPARE(loaded->version, std::int64_t(1));
    QVERIFY2(skipped.empty(), joined(skipped).c_str());
    // prepare() (before the server starts) clears it away.
    QVERIFY(ckpt.prepare().isOk());
    QVERIFY(!QFile::exists(stale));
    QVERIFY(QFile::exists(QString::fromStdString(ckpt.pathFor(1))));
  }

  void badPathsAreErrors() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const std::vector<float> values(16, 1.0f);

    // Missing directory, not prepared.
    CheckpointDirectory missing(tmp.filePath(QStringLiteral("missing/dir")).toStdString(), 1);
    Status s = missing.write(1, 0, "mlp", values.data(), values.data(), 16);
    QVERIFY(!s.isOk());
    qInfo("missing: %s", s.message().c_str());
    QVERIFY2(s.message().find(missing.dir() + "/.ckpt-1.tmp") != std::string::npos, s.message().c_str());
    QVERIFY2(s.message().find("No such file or directory") != std::string::npos, s.message().c_str());

    // A parent that is a regular file: even root cannot create anything under it.
    {
      QFile file(tmp.filePath(QStringLiteral("plain-file")));
      QVERIFY(file.open(QIODevice::WriteOnly));
    }
    CheckpointDirectory underFile(tmp.filePath(QStringLiteral("plain-file/ckpt")).toStdString(), 1);
    s = underFile.prepare();
    QVERIFY(!s.isOk());
    qInfo("prepare under a file: %s", s.message().c_str());
    QVERIFY2(s.message().find(underFile.dir()) != std::string::npos, s.message().c_str());
    QVERIFY2(s.message().find("Not a directory") != std::string::npos, s.message().c_str());
    s = underFile.write(1, 0, "mlp", values.data(), values.data(), 16);
    QVERIFY(!s.isOk());
    QVERIFY2(s.message().find(underFile.dir() + "/.ckpt-1.tmp") != std::string::npos, s.message().c_str());

    // A directory without write permission (only binding when not root).
    if (geteuid() != 0) {
      const QString ro = tmp.filePath(QStringLiteral("read-only"));
      QVERIFY(QDir().mkpath(ro));
      QVERIFY(QFile::setPermissions(ro, QFile::ReadOwner | QFile::ExeOwner));
      CheckpointDirectory readOnly(ro.toStdString(), 1);
      s = readOnly.write(1, 0, "mlp", values.data(), values.data(), 16);
      QFile::setPermissions(ro, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
      QVERIFY(!s.isOk());
      QVERIFY2(s.message().find("Permission denied") != std::string::npos, s.message().c_str());
    }
  }

  void fullDiskKeepsPreviousCheckpoint() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const QString mountPoint = tmp.filePath(QStringLiteral("small-fs"));
    QVERIFY(QDir().mkpath(mountPoint));
    const QString mode = qEnvironmentVariable("DASP_TST_CHECKPOINT_FULL_DISK");  // "unshare" forces it
    QStringList reasons;

    if (geteuid() == 0 && mode != QLatin1String("unshare")) {
      const QString failure = runProgram(QStringLiteral("mount"),
          {QStringLiteral("-t"), QStringLiteral("tmpfs"), QStringLiteral("-o"),
           QStringLiteral("size=1m"), QStringLiteral("tmpfs"), mountPoint});
      if (failure.isEmpty()) {
        struct Unmount {
          QString dir;
          ~Unmount() { runProgram(QStringLiteral("umount"), {dir}); }
        } unmount{mountPoint};
        std::string report;
        const std::string result = fullDiskScenario(mountPoint.toStdString(), &report);
        qInfo("full disk (mounted directly as root): %s", report.c_str());
        QVERIFY2(result.empty(), result.c_str());
        return;
      }
      reasons << failure;
    }

    const QString unshare = QStandardPaths::findExecutable(QStringLiteral("unshare"));
    if (unshare.isEmpty()) {
      reasons << QStringLiteral("unshare not found");
    } else {
      const QString script = QStringLiteral(
          "mount -t tmpfs -o size=1m tmpfs \"$1\" && %1=\"$1\" exec \"$0\"").arg(kChildEnv);
      const QStringList args = {QStringLiteral("-Urm"), QStringLiteral("sh"), QStringLiteral("-c"),
                                script, QCoreApplication::applicationFilePath(), mountPoint};
      QString output;
      const QString failure = runProgram(unshare, args, &output);
      if (output.contains(QLatin1String("FULLDISK-"))) {
        qInfo("full disk (inside unshare -Urm): %s", qPrintable(output));
        QVERIFY2(failure.isEmpty() && output.startsWith(QLatin1String("FULLDISK-OK")),
                 qPrintable(output));
        return;
      }
      reasons << failure;  // the namespace or the mount did not work: the child never ran
    }
    QSKIP(qPrintable(QStringLiteral("cannot mount a small tmpfs: ") + reasons.join(QStringLiteral("; "))));
  }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "tst_checkpoint.moc"
