// SPDX-License-Identifier: MIT
// The numeric options of `dasp server`, `dasp worker`, `dasp evaluator`, `dasp bench train`
// and `dasp bench sim`, found from the commands' own definitions (INT and FLOAT options of
// app/cli, so an option added later is covered), each set in turn to 0, -1, ±1e300,
// 1e-300, NaN and ±inf (an INT option: 0, -1 and the extremes of int and int64). Each
// value is either refused when the command line is parsed, with a message naming the
// option (parsed in this process, with the commands' callbacks taken out: `dasp` says
// the same and exits 2), or accepted and honoured by a real `dasp` process: the command
// runs to its end (a worker or evaluator whose server never answers gives up with exit
// code 1) or, for a server, comes up, says where it listens and stops cleanly on SIGTERM.
// None crashes.
#include "app/cli/cli.h"
#include "tests/support/processes.h"
#include "tests/support/specs.h"

#include <signal.h>

#include <QFile>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

// `dasp` as it parses a command line, running nothing: CLI11 calls pre_callback() on the
// root once every option is parsed, converted and checked, and before any command runs;
// here it ends the parse.
struct ParsedCleanly {};
class ParseOnly : public CLI::App {
 public:
  ParseOnly() : CLI::App("dasp", "dasp") {}
  void pre_callback() override { throw ParsedCleanly{}; }
};

std::unique_ptr<CLI::App> parser(int& exitCode) {
  auto app = std::make_unique<ParseOnly>();
  dasp::cli::addCommands(*app, exitCode);
  return app;
}

// The numeric options of the command `words` ("bench", "sim"), each with whether it takes
// an integer.
QList<QPair<QString, bool>> numericOptions(const QStringList& words) {
  int exitCode = 0;
  auto app = parser(exitCode);
  CLI::App* command = app.get();
  for (const auto& w : words) command = command->get_subcommand(w.toStdString());
  QList<QPair<QString, bool>> out;
  for (const auto* option : command->get_options()) {
    const auto type = option->get_type_name();
    if (type.rfind("INT", 0) != 0 && type.rfind("FLOAT", 0) != 0 && type.rfind("UINT", 0) != 0) continue;
    out.append({QString::fromStdString(option->get_name(false, true).substr(0, option->get_name(false, true).find(','))),
                type.rfind("FLOAT", 0) != 0});
  }
  return out;
}

// The message of the refusal when `args` (after "dasp") do not parse, else nothing.
std::optional<QString> refusal(const QStringList& args) {
  int exitCode = 0;
  auto app = parser(exitCode);
  std::vector<std::string> words{"dasp"};
  for (const auto& a : args) words.push_back(a.toStdString());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  try {
    app->parse(static_cast<int>(argv.size()), argv.data());
  } catch (const ParsedCleanly&) {
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    return QString::fromStdString(e.what());
  }
  return QStringLiteral("the parse ran a command");
}

QStringList valuesFor(bool integer) {
  if (integer) return {"0", "-1", "2147483647", "-2147483648", "9223372036854775807"};
  return {"0", "-1", "1e300", "-1e300", "1e-300", "nan", "inf", "-inf"};
}

// How an accepted value was honoured: `failure` says what happened when it was not.
struct Outcome {
  QString failure;
};

// A command that runs to its end: honoured with 0 or 1 (a client whose server never
// answers), anything else a failure.
Outcome runToEnd(const QStringList& args) {
  const auto r = test_support::runDasp(args, 120000);
  if (r.exitCode == 0 || r.exitCode == 1) return {};
  return {"ended with " + QString::number(r.exitCode) + ": " + r.err.trimmed().right(400)};
}

// A server comes up, says where it listens and stops cleanly on SIGTERM.
Outcome serveAndStop(const QStringList& args) {
  QProcess p;
  p.setProcessChannelMode(QProcess::MergedChannels);
  test_support::startDasp(p, args);
  if (!p.waitForStarted(10000)) return {"did not start"};
  QByteArray said;
  while (!said.contains("dasp-server listening")) {
    const bool more = p.waitForReadyRead(30000);
    said += p.readAll();
    if (more) continue;
    if (p.state() == QProcess::NotRunning) {
      return {"exited " + QString::number(p.exitCode()) + ": " + QString::fromUtf8(said).right(400)};
    }
    p.kill();
    p.waitForFinished(10000);
    return {"never said where it listens: " + QString::fromUtf8(said).right(400)};
  }
  ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
  if (!p.waitForFinished(30000)) {
    p.kill();
    p.waitForFinished(10000);
    return {"did not stop on SIGTERM"};
  }
  if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    const QString how = p.exitStatus() == QProcess::NormalExit ? "exited " + QString::number(p.exitCode()) : "crashed";
    return {how + " after SIGTERM: " + QString::fromUtf8(said + p.readAll())};
  }
  return {};
}

}  // namespace

class TestCliOptions : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void everyNumericOptionIsRefusedOrHonoured_data();
  void everyNumericOptionIsRefusedOrHonoured();

 private:
  QTemporaryDir m_dir;
  QString m_spec, m_token;
};

void TestCliOptions::initTestCase() {
  QVERIFY(m_dir.isValid());
  test_support::SyntheticSpec base;
  base.workers = 1;
  m_spec = test_support::writeSpecFile(m_dir.path(), "options", base.json());
  m_token = m_dir.filePath("token");
  QFile token(m_token);
  QVERIFY(token.open(QIODevice::WriteOnly));
  token.write("0123456789abcdef0123456789abcdef\n");
  token.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner);
}

void TestCliOptions::everyNumericOptionIsRefusedOrHonoured_data() {
  QTest::addColumn<QStringList>("words");
  QTest::addColumn<QStringList>("base");
  QTest::addColumn<bool>("serves");
  // Port 1 of the loopback answers nobody: a client gives up after its connect timeout.
  const QStringList client{"--server", "127.0.0.1:1", "--connect-timeout", "0.3", "--token-file", m_token};
  QTest::newRow("server") << QStringList{"server"} << QStringList{"--spec", m_spec, "--token-file", m_token} << true;
  QTest::newRow("worker") << QStringList{"worker"} << client << false;
  QTest::newRow("evaluator") << QStringList{"evaluator"} << client << false;
  QTest::newRow("bench train") << QStringList{"bench", "train"}
                               << QStringList{"--models", "logreg", "--rounds", "1", "--seconds", "0.05"} << false;
  QTest::newRow("bench sim") << QStringList{"bench", "sim"} << QStringList{"--workers", "2", "--seconds", "0.5"} << false;
}

void TestCliOptions::everyNumericOptionIsRefusedOrHonoured() {
  QFETCH(QStringList, words);
  QFETCH(QStringList, base);
  QFETCH(bool, serves);
  const auto options = numericOptions(words);
  QVERIFY2(!options.isEmpty(), qPrintable("no numeric option in dasp " + words.join(' ') + " --help"));
  QStringList failures;
  int refused = 0, honoured = 0;
  for (const auto& [option, integer] : options) {
    for (const auto& value : valuesFor(integer)) {
      // The option in place of the base's value (CLI11 refuses an option given twice).
      QStringList args = words + base;
      if (const auto at = args.indexOf(option); at >= 0) args.remove(at, 2);
      args << option << value;
      const QString what = "dasp " + words.join(' ') + " " + option + " " + value + ": ";
      if (const auto message = refusal(args)) {
        ++refused;
        if (!message->contains(option)) failures << what + "refused without naming the option: " + *message;
        continue;
      }
      const auto outcome = serves ? serveAndStop(args) : runToEnd(args);
      if (outcome.failure.isEmpty()) ++honoured;
      else failures << what + outcome.failure;
    }
  }
  qInfo("dasp %s: %lld numeric options, %d values refused with the option named, %d accepted and honoured",
        qPrintable(words.join(' ')), static_cast<long long>(options.size()), refused, honoured);
  for (const auto& f : failures) qWarning("%s", qPrintable(f));
  QVERIFY2(failures.isEmpty(), qPrintable(QString::number(failures.size()) + " values neither refused nor honoured (above)"));
}

QTEST_GUILESS_MAIN(TestCliOptions)
#include "tst_cli_options.moc"
