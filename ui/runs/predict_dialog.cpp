// SPDX-License-Identifier: MIT
#include "ui/runs/predict_dialog.h"

#include "core/common/run_lines.h"
#include "core/results/mean_std.h"
#include "core/results/results_table.h"
#include "core/spec/spec.h"
#include "core/store/run_store.h"
#include "ui/charts/series_colors.h"

#include <signal.h>
#include <sys/prctl.h>

#include <QCheckBox>
#include <QCloseEvent>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace dasp::ui {
namespace {

constexpr int kTermAfterMs = 10000;  // after SIGINT, SIGTERM; as long again after it, SIGKILL

QString ms(double seconds) { return QString::number(1000 * seconds, 'g', 3); }

}  // namespace

TargetBars predictionBars(const std::vector<v1::RunResult>& predicted, const QString& measuredLabel,
                          std::optional<double> measured) {
  TargetBars out;
  std::vector<double> reference;
  double target = 0;
  for (const auto& r : predicted) {
    target = r.target() > 0 ? r.target() : target;
    const QString label = QString::fromStdString(r.label());
    if (label == QLatin1String("reference")) {
      ++out.referenceRuns;
      if (r.has_time_to_target_s()) reference.push_back(r.time_to_target_s());
      continue;
    }
    auto bar = std::find_if(out.bars.begin(), out.bars.end(), [&](const TargetBar& b) { return b.label == label; });
    if (bar == out.bars.end()) {
      TargetBar b;
      b.label = label;
      b.color = seriesColor(static_cast<int>(out.bars.size()));
      out.bars.push_back(b);
      bar = out.bars.end() - 1;
    }
    bar->count(r.has_time_to_target_s() ? std::optional<double>(r.time_to_target_s()) : std::nullopt,
               r.status() == "diverged");
  }
  for (TargetBar& b : out.bars) b.settle();
  if (!reference.empty()) out.reference = meanStd(reference).mean;
  if (target > 0) out.target = QString::number(target);
  out.marked = measured;
  out.markedBar = measuredLabel;
  out.markedText = QObject::tr("measured");
  return out;
}

QString bestPrediction(const TargetBars& bars) {
  const TargetBar* best = nullptr;
  for (const TargetBar& b : bars.bars) {
    if (!b.mean || b.diverged > 0 || b.notReached > 0) continue;
    if (!best || *b.mean < *best->mean) best = &b;
  }
  return best ? best->label : QString();
}

QString describeProfile(const ClusterProfile& profile) {
  QStringList lines;
  for (const NodeProfile& n : profile.workers) {
    QString line = QStringLiteral("%1: %2 ms/sample").arg(QString::fromStdString(n.name), ms(n.segments.front().secondsPerSample));
    const double first = n.segments.front().secondsPerSample;
    for (std::size_t k = 1; k < n.segments.size(); ++k) {
      const SpeedSegment& s = n.segments[k];
      line += QObject::tr(", from %1 s %2 ms/sample (×%3)")
                  .arg(s.fromS, 0, 'f', 1)
                  .arg(ms(s.secondsPerSample))
                  .arg(first > 0 ? s.secondsPerSample / first : 1.0, 0, 'f', 2);
    }
    lines << line;
  }
  return lines.join(QLatin1Char('\n'));
}

PredictDialog::PredictDialog(const QString& dbPath, std::int64_t runId, const QString& daspBinary, QWidget* parent)
    : QDialog(parent), m_dbPath(dbPath), m_runId(runId), m_daspBinary(daspBinary) {
  setWindowTitle(tr("Predict other strategies on run %1's cluster").arg(runId));
  buildUi();
  loadMeasuredRun();
}

PredictDialog::~PredictDialog() {
  if (!m_process) return;
  m_process->disconnect(this);
  m_process->terminate();
  if (!m_process->waitForFinished(kTermAfterMs)) m_process->kill();
  m_process->waitForFinished(1000);
}

void PredictDialog::buildUi() {
  auto* layout = new QVBoxLayout(this);
  m_header = new QLabel(this);
  m_header->setWordWrap(true);
  layout->addWidget(m_header);
  m_speeds = new QLabel(this);
  m_speeds->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(m_speeds);

  auto* form = new QFormLayout;
  auto* boxes = new QHBoxLayout;
  for (const std::string& name : knownStrategies()) {
    auto* box = new QCheckBox(QString::fromStdString(name), this);
    box->setChecked(true);
    boxes->addWidget(box);
    m_strategyBoxes.push_back(box);
  }
  m_reference = new QCheckBox(tr("reference"), this);
  m_reference->setChecked(true);
  m_reference->setToolTip(tr("Also the homogeneous-equivalent reference: the same workers at the cluster's mean speed, BSP"));
  boxes->addWidget(m_reference);
  boxes->addStretch(1);
  form->addRow(tr("Strategies:"), boxes);
  m_seeds = new QLineEdit(QStringLiteral("1,2,3"), this);
  m_seeds->setToolTip(tr("The seeds of each strategy's predicted runs (mean ± std over them)"));
  form->addRow(tr("Seeds:"), m_seeds);
  layout->addLayout(form);

  m_progress = new QProgressBar(this);
  m_progress->setRange(0, 1);
  m_progress->setValue(0);
  layout->addWidget(m_progress);
  m_statusLabel = new QLabel(this);
  m_statusLabel->setWordWrap(true);
  layout->addWidget(m_statusLabel);
  m_chart = new TimeToTargetBars(this);
  layout->addWidget(m_chart, 1);

  auto* buttons = new QDialogButtonBox(this);
  m_start = buttons->addButton(tr("&Predict"), QDialogButtonBox::ActionRole);
  m_cancel = buttons->addButton(tr("&Cancel Prediction"), QDialogButtonBox::ActionRole);
  m_launch = buttons->addButton(tr("&Launch the Best for Real"), QDialogButtonBox::ActionRole);
  m_compare = buttons->addButton(tr("C&ompare"), QDialogButtonBox::ActionRole);
  buttons->addButton(QDialogButtonBox::Close);
  m_cancel->setEnabled(false);
  m_launch->setEnabled(false);
  m_compare->setEnabled(false);
  m_compare->setToolTip(tr("The measured run and its predictions in the compare view"));
  connect(m_start, &QPushButton::clicked, this, [this] { start(); });
  connect(m_cancel, &QPushButton::clicked, this, &PredictDialog::cancel);
  connect(m_launch, &QPushButton::clicked, this, &PredictDialog::requestLaunch);
  connect(m_compare, &QPushButton::clicked, this, [this] {
    QList<qint64> ids{m_runId};
    for (const auto& r : m_predicted) ids << r.run_id();
    Q_EMIT compareRequested(ids);
  });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(780, 660);
}

void PredictDialog::loadMeasuredRun() {
  auto store = RunStore::open(m_dbPath.toStdString());
  auto measured = store ? measureStoredRun(*store.value(), m_runId) : Result<MeasuredRun>(store.status());
  if (!measured) {
    m_profileError = QString::fromStdString(measured.message());
    m_header->setText(tr("Run %1 cannot be profiled: %2").arg(m_runId).arg(m_profileError));
    m_start->setEnabled(false);
    m_status = m_profileError;
    m_statusLabel->setText(m_status);
    return;
  }
  m_profile = measured->profile;
  m_measuredLabel = QString::fromStdString(strategyLabel(measured->spec.strategy()));
  m_measuredSpecJson = QString::fromStdString(measured->row.specJson);
  for (const auto& s : measured->summary) {
    if (s.key == "time_to_target_s" && s.value) m_measuredTime = *s.value;
  }
  m_header->setText(tr("Run %1 (%2, %3 workers, %4): the engine on the speeds it measured predicts each strategy's "
                       "time to target. Each prediction is stored as an engine run tagged predicted-from-%1.")
                        .arg(m_runId)
                        .arg(m_measuredLabel)
                        .arg(m_profile->workers.size())
                        .arg(QString::fromStdString(measured->row.engine)));
  m_speeds->setText(tr("Measured compute:\n%1").arg(describeProfile(*m_profile)));
}

QString PredictDialog::statusText() const { return m_status; }

bool PredictDialog::start() {
  auto refuse = [this](const QString& why) {
    m_status = why;
    m_statusLabel->setText(why);
    return false;
  };
  if (m_process) return refuse(tr("A prediction is already running."));
  if (!m_profile) return refuse(m_profileError);
  QStringList strategies;
  for (QCheckBox* box : m_strategyBoxes) {
    if (box->isChecked()) strategies << box->text();
  }
  if (strategies.isEmpty()) return refuse(tr("Choose at least one strategy."));
  QStringList seeds;
  for (const QString& part : m_seeds->text().split(QLatin1Char(','), Qt::SkipEmptyParts)) {
    bool ok = false;
    const qulonglong seed = part.trimmed().toULongLong(&ok);
    if (!ok) return refuse(tr("Seeds: '%1' is not a whole number (e.g. 1,2,3).").arg(part.trimmed()));
    seeds << QString::number(seed);
  }
  if (seeds.isEmpty()) return refuse(tr("Seeds: give at least one (e.g. 1,2,3)."));
  QStringList args{QStringLiteral("predict"), QString::number(m_runId), QStringLiteral("--db"), m_dbPath,
                   QStringLiteral("--strategies"), strategies.join(QLatin1Char(',')), QStringLiteral("--seeds"),
                   seeds.join(QLatin1Char(',')), QStringLiteral("--json"), QStringLiteral("--quiet")};
  if (m_reference->isChecked()) args << QStringLiteral("--reference");
  m_process = new QProcess(this);
  // The child goes when the workbench does, however it ends.
  m_process->setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGTERM); });
  connect(m_process, &QProcess::readyReadStandardOutput, this, &PredictDialog::onStdout);
  connect(m_process, &QProcess::readyReadStandardError, this, &PredictDialog::onStderr);
  connect(m_process, &QProcess::finished, this, &PredictDialog::onFinished);
  m_stdout.clear();
  m_stderrLine.clear();
  m_lastError.clear();
  m_predicted.clear();
  m_cancelled = false;
  m_signalsSent = 0;
  m_chart->setBars({});
  m_progress->setRange(0, 0);  // busy until the child says how many runs
  setRunning(true);
  m_process->start(m_daspBinary, args);
  if (!m_process->waitForStarted(5000)) {
    const QString why = tr("Cannot start %1: %2").arg(m_daspBinary, m_process->errorString());
    m_process->disconnect(this);
    m_process->deleteLater();
    m_process = nullptr;
    setRunning(false);
    m_progress->setRange(0, 1);
    return refuse(why);
  }
  m_status = tr("Predicting %1 strategies × %2 seeds on the engine…").arg(strategies.size()).arg(seeds.size());
  m_statusLabel->setText(m_status);
  return true;
}

void PredictDialog::cancel() {
  if (!m_process) return;
  m_cancelled = true;
  m_status = tr("Cancelling: the run in progress stops…");
  m_statusLabel->setText(m_status);
  ::kill(static_cast<pid_t>(m_process->processId()), SIGINT);
  m_signalsSent = 1;
  if (!m_insist) {
    m_insist = new QTimer(this);
    m_insist->setInterval(kTermAfterMs);
    connect(m_insist, &QTimer::timeout, this, [this] {
      if (!m_process) return;
      if (m_signalsSent++ == 1) m_process->terminate();
      else m_process->kill();
    });
  }
  m_insist->start();
}

void PredictDialog::onStdout() { m_stdout += m_process->readAllStandardOutput(); }

void PredictDialog::onStderr() {
  m_stderrLine += m_process->readAllStandardError();
  int end;
  while ((end = m_stderrLine.indexOf('\n')) >= 0) {
    const QString line = QString::fromUtf8(m_stderrLine.left(end));
    m_stderrLine.remove(0, end + 1);
    if (line.startsWith(QLatin1String(kRunProgressPrefix))) {
      const QStringList parts = line.mid(static_cast<int>(sizeof kRunProgressPrefix) - 1).split(QLatin1Char(' '));
      if (parts.size() == 2 && parts[1].toInt() > 0) {
        m_progress->setRange(0, parts[1].toInt());
        m_progress->setValue(parts[0].toInt());
      }
    } else if (line.startsWith(QLatin1String(kErrorPrefix))) {
      m_lastError = line.mid(static_cast<int>(sizeof kErrorPrefix) - 1);
    }
  }
}

void PredictDialog::onFinished(int exitCode, QProcess::ExitStatus status) {
  onStdout();
  onStderr();
  if (m_insist) m_insist->stop();
  m_process->deleteLater();
  m_process = nullptr;
  setRunning(false);
  QByteArray jsonLines;
  for (const QByteArray& line : m_stdout.split('\n')) {
    if (line.startsWith('{')) jsonLines += line + '\n';
  }
  auto parsed = parseResultLines(jsonLines.toStdString(), "dasp predict's output");
  if (parsed) m_predicted = std::move(parsed).value();
  showPredictions();
  if (m_cancelled) {
    m_status = tr("Cancelled after %n predicted run(s).", nullptr, static_cast<int>(m_predicted.size()));
  } else if (status != QProcess::NormalExit || exitCode != 0 || !parsed) {
    const QString why = !parsed ? QString::fromStdString(parsed.message())
                                : !m_lastError.isEmpty() ? m_lastError : tr("exit code %1").arg(exitCode);
    m_status = tr("The prediction failed: %1").arg(why);
  } else {
    const QString best = bestPrediction(m_chart->bars());
    m_status = best.isEmpty() ? tr("Predicted: no strategy reached the target in every seed.")
                              : tr("Predicted: %1 is the fastest to the target.").arg(best);
  }
  m_statusLabel->setText(m_status);
  Q_EMIT finished();
  if (m_closeWhenStopped) close();
}

void PredictDialog::closeEvent(QCloseEvent* event) {
  if (!m_process) {
    QDialog::closeEvent(event);
    return;
  }
  closeWhenStopped();
  event->ignore();
}

void PredictDialog::done(int result) {
  if (m_process) {
    closeWhenStopped();
    return;
  }
  QDialog::done(result);
}

void PredictDialog::closeWhenStopped() {
  m_closeWhenStopped = true;
  if (!m_cancelled) cancel();
  hide();
}

void PredictDialog::showPredictions() {
  m_chart->setBars(predictionBars(m_predicted, m_measuredLabel, m_measuredTime));
  const QString best = bestPrediction(m_chart->bars());
  m_launch->setEnabled(!best.isEmpty());
  m_launch->setText(best.isEmpty() ? tr("&Launch the Best for Real") : tr("&Launch %1 for Real").arg(best));
  m_compare->setEnabled(!m_predicted.empty());
}

// The measured run's spec, its strategy the best prediction's (read from that run's stored
// spec, so its knobs are the ones predicted), one run per seed of the measured run's.
void PredictDialog::requestLaunch() {
  const QString best = bestPrediction(m_chart->bars());
  const auto source = std::find_if(m_predicted.begin(), m_predicted.end(),
                                   [&](const v1::RunResult& r) { return QString::fromStdString(r.label()) == best; });
  if (best.isEmpty() || source == m_predicted.end()) return;
  auto store = RunStore::open(m_dbPath.toStdString());
  auto row = store ? store.value()->run(source->run_id()) : Result<RunRow>(store.status());
  auto predictedSpec = row ? parseSpecJson(row->specJson, "the prediction's spec") : Result<ExperimentSpec>(row.status());
  auto spec = parseSpecJson(m_measuredSpecJson.toStdString(), "run " + std::to_string(m_runId) + "'s spec");
  if (!predictedSpec || !spec) {
    m_status = tr("Cannot launch %1: %2").arg(best, QString::fromStdString(!spec ? spec.message() : predictedSpec.message()));
    m_statusLabel->setText(m_status);
    return;
  }
  *spec->mutable_strategy() = predictedSpec->strategy();
  spec->clear_reference_of();  // measured on a reference run, the launch is a run of its own
  spec->clear_suite();
  spec->set_with_reference(false);
  Q_EMIT launchRequested(m_runId, QString::fromStdString(specToJson(spec.value())));
}

void PredictDialog::setRunning(bool running) {
  m_start->setEnabled(!running && m_profile.has_value());
  m_cancel->setEnabled(running);
  for (QCheckBox* box : m_strategyBoxes) box->setEnabled(!running);
  m_reference->setEnabled(!running);
  m_seeds->setEnabled(!running);
  if (running) {
    m_launch->setEnabled(false);
    m_compare->setEnabled(false);
  }
}

}  // namespace dasp::ui
