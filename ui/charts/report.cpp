// SPDX-License-Identifier: MIT
#include "ui/charts/report.h"
#include "ui/charts/report_html.h"

#include "core/common/json_text.h"
#include "core/results/mean_std.h"

#include "ui/charts/run_groups.h"
#include "ui/charts/sweep_heatmap.h"

#include <QApplication>
#include <QBuffer>
#include <QDateTime>
#include <QFont>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QResizeEvent>
#include <QSaveFile>
#include <QTextDocument>
#include <QTextOption>
#include <QUrl>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace dasp::ui {

namespace {

// ---- writing ---------------------------------------------------------------------------

Status writeError(const QString& path, const QString& why) {
  return Status::error(path.toStdString() + ": cannot write: " + why.toStdString());
}

// Buffered writes into a QSaveFile: big exports stream instead of living in memory, and
// nothing replaces the target unless every byte was written.
class Sink {
 public:
  explicit Sink(const QString& path) : m_path(path), m_file(path) {}
  Status open() {
    if (!m_file.open(QIODevice::WriteOnly)) return writeError(m_path, m_file.errorString());
    return Status::ok();
  }
  Sink& operator<<(const QByteArray& b) {
    m_buf += b;
    if (m_buf.size() > (1 << 20)) flush();
    return *this;
  }
  Sink& operator<<(const char* s) { return *this << QByteArray(s); }
  Status commit() {
    flush();
    if (m_failed) {
      m_file.cancelWriting();
      return writeError(m_path, m_error);
    }
    if (!m_file.commit()) return writeError(m_path, m_file.errorString());
    return Status::ok();
  }

 private:
  void flush() {
    if (!m_failed && !m_buf.isEmpty() && m_file.write(m_buf) != m_buf.size()) {
      m_failed = true;
      m_error = m_file.errorString();
    }
    m_buf.clear();
  }
  QString m_path;
  QSaveFile m_file;
  QByteArray m_buf;
  bool m_failed = false;
  QString m_error;
};

// The shortest text that reads back as the same double.
QByteArray num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return QByteArray(buf, static_cast<int>(r.ptr - buf));
}

QByteArray csvField(const QString& s) {
  QByteArray b = s.toUtf8();
  if (b.contains(',') || b.contains('"') || b.contains('\n') || b.contains('\r')) {
    b.replace("\"", "\"\"");
    return '"' + b + '"';
  }
  return b;
}

QByteArray jsonString(const QString& s) { return QByteArray::fromStdString(dasp::jsonString(s.toStdString())); }

// ---- figures ---------------------------------------------------------------------------

std::optional<double> summaryValue(const RunData& r, const char* key) {
  auto it = r.summary.find(QLatin1String(key));
  if (it == r.summary.end() || !std::isfinite(it->second)) return std::nullopt;
  return it->second;
}

QJsonObject specObject(const RunData& r) { return QJsonDocument::fromJson(r.specJson.toUtf8()).object(); }

std::optional<double> specTarget(const RunData& r) {
  const double t = specObject(r).value(QLatin1String("stop")).toObject().value(QLatin1String("target_accuracy")).toDouble();
  return t > 0 && std::isfinite(t) ? std::optional<double>(t) : std::nullopt;
}

std::optional<double> meanOf(const RunData& r, std::vector<Point> NodeData::*series, bool max = false) {
  double acc = max ? -std::numeric_limits<double>::infinity() : 0;
  std::int64_t n = 0;
  for (const NodeData& node : r.nodes) {
    for (const Point& p : node.*series) {
      if (!std::isfinite(p.value)) continue;
      acc = max ? std::max(acc, p.value) : acc + p.value;
      ++n;
    }
  }
  if (n == 0) return std::nullopt;
  return max ? acc : acc / static_cast<double>(n);
}

bool isBsp(const RunData& r) { return r.strategy.compare(QLatin1String("bsp"), Qt::CaseInsensitive) == 0; }

}  // namespace

void fillRelativeFigures(std::vector<RunFigures>& figs, const std::vector<RunData>& runs) {
  // The mean time to target of the runs that `include` selects, when any reached it.
  auto meanTime = [&](const auto& include) -> std::optional<double> {
    std::vector<double> t;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (include(i) && figs[i].timeToTarget) t.push_back(*figs[i].timeToTarget);
    }
    if (t.empty()) return std::nullopt;
    return meanStd(t).mean;
  };
  const std::optional<double> allBsp = meanTime([&](std::size_t i) { return isBsp(runs[i]); });
  for (std::size_t i = 0; i < figs.size(); ++i) {
    RunFigures& f = figs[i];
    f.speedupVsBsp.reset();
    f.heterogeneityCost.reset();
    if (!f.timeToTarget || !(*f.timeToTarget > 0)) continue;
    // Speedup against the BSP runs of the same experiment, else against every BSP run.
    std::optional<double> base =
        meanTime([&](std::size_t j) { return isBsp(runs[j]) && runs[j].name == runs[i].name; });
    if (!base) base = allBsp;
    if (base) f.speedupVsBsp = *base / *f.timeToTarget;
    // A reference run is costed against its own group, every other run against the
    // reference runs of its experiment.
    const QString experiment = runs[i].referenceOf.isEmpty() ? runs[i].name : runs[i].referenceOf;
    const std::optional<double> reference = meanTime([&](std::size_t j) { return runs[j].referenceOf == experiment; });
    if (reference && *reference > 0) f.heterogeneityCost = *f.timeToTarget / *reference;
  }
}

std::vector<RunFigures> runFigures(const std::vector<RunData>& runs) {
  std::vector<RunFigures> out;
  for (const RunData& r : runs) {
    RunFigures f;
    f.runId = r.runId;
    f.name = r.name;
    f.strategy = r.displayStrategy();
    f.engine = r.engine;
    f.status = r.status;
    f.divergence = r.divergence;
    f.seed = r.seed;
    f.shards = std::max(1, specObject(r).value(QLatin1String("ps")).toObject().value(QLatin1String("shards")).toInt(1));
    f.target = specTarget(r);
    f.timeToTarget = summaryValue(r, "time_to_target_s");
    if (!f.timeToTarget && f.target) f.timeToTarget = r.timeToTarget(*f.target);
    f.finalAccuracy = summaryValue(r, "final_accuracy");
    if (!f.finalAccuracy && !r.evaluations.empty() && std::isfinite(r.evaluations.back().accuracy)) {
      f.finalAccuracy = r.evaluations.back().accuracy;
    }
    f.meanWait = summaryValue(r, "mean_wait_s");
    if (!f.meanWait) f.meanWait = meanOf(r, &NodeData::wait);
    f.meanStaleness = summaryValue(r, "mean_staleness");
    if (!f.meanStaleness) f.meanStaleness = meanOf(r, &NodeData::staleness);
    f.maxStaleness = summaryValue(r, "max_staleness");
    if (!f.maxStaleness) f.maxStaleness = meanOf(r, &NodeData::staleness, true);
    f.updates = summaryValue(r, "updates");
    if (!f.updates && !r.evaluations.empty()) f.updates = static_cast<double>(r.evaluations.back().version);
    f.dropped = summaryValue(r, "dropped");
    f.lost = summaryValue(r, "lost_updates");
    if (!f.lost) f.lost = summaryValue(r, "lost");
    f.lrConvention = r.lrConvention;
    if (f.lrConvention.isEmpty()) {
      f.lrConvention = specObject(r).value(QLatin1String("optimizer")).toObject().value(QLatin1String("lr_convention")).toString();
    }
    out.push_back(f);
  }
  fillRelativeFigures(out, runs);
  return out;
}

QString timeToTargetText(const RunFigures& f, int decimals) {
  if (f.timeToTarget && std::isfinite(*f.timeToTarget)) return QString::number(*f.timeToTarget, 'f', decimals);
  if (f.status == QLatin1String(toString(RunStatus::Diverged))) return QObject::tr("not reached (diverged)");
  return QStringLiteral("–");
}

std::vector<RunFaults> runFaults(const std::vector<RunData>& runs) {
  std::vector<RunFaults> out;
  const std::vector<RunFigures> figs = runFigures(runs);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunData& r = runs[i];
    if (r.faults.empty()) continue;
    RunFaults f;
    f.runId = r.runId;
    f.label = r.name.toStdString();
    f.recovery = r.recovery.toStdString();
    const QJsonObject cluster = specObject(r).value(QLatin1String("cluster")).toObject();
    const int listed = static_cast<int>(cluster.value(QLatin1String("workers")).toArray().size());
    const int counted = cluster.value(QLatin1String("count")).toInt();
    f.workers = listed > 0 ? listed : counted > 0 ? counted : static_cast<int>(r.nodes.size());
    f.seed = static_cast<std::uint64_t>(r.seed);
    f.finalAccuracy = figs[i].finalAccuracy.value_or(r.faults.front().finalAccuracy);
    f.timeToTargetS = figs[i].timeToTarget;
    f.faults = r.faults;
    out.push_back(std::move(f));
  }
  return out;
}

std::optional<ReportFormat> reportFormatFor(const QString& path) {
  const QString p = path.toLower();
  if (p.endsWith(QLatin1String(".html")) || p.endsWith(QLatin1String(".htm"))) return ReportFormat::Html;
  if (p.endsWith(QLatin1String(".pdf"))) return ReportFormat::Pdf;
  if (p.endsWith(QLatin1String(".csv"))) return ReportFormat::Csv;
  if (p.endsWith(QLatin1String(".json"))) return ReportFormat::ChromeTrace;
  return std::nullopt;
}

Status writeReport(const std::vector<RunData>& runs, const QString& path, const ReportOptions& options) {
  const auto format = reportFormatFor(path);
  if (!format) {
    return Status::error(path.toStdString() + ": unknown report format (use .html, .pdf, .csv or .trace.json)");
  }
  switch (*format) {
    case ReportFormat::Html: return writeHtmlReport(runs, path, options);
    case ReportFormat::Pdf: return writePdfReport(runs, path, options);
    case ReportFormat::Csv: return writeCsv(runs, path);
    case ReportFormat::ChromeTrace: return writeChromeTrace(runs, path);
  }
  return Status::error("unreachable");
}

Status writeCsv(const std::vector<RunData>& runs, const QString& path) {
  Sink out(path);
  if (Status s = out.open(); !s) return s;
  out << "run_id,node,series,t_s,version,value\n";
  for (const RunData& r : runs) {
    const QByteArray id = QByteArray::number(static_cast<qlonglong>(r.runId));
    auto row = [&](const QByteArray& node, const char* series, double t, std::int64_t version, double value) {
      out << id + ',' + node + ',' + series + ',' + num(t) + ',' + QByteArray::number(static_cast<qlonglong>(version)) +
                 ',' + num(value) + '\n';
    };
    for (const Evaluation& e : r.evaluations) {
      row("evaluator", "accuracy", e.t, e.version, e.accuracy);
      row("evaluator", "loss", e.t, e.version, e.loss);
    }
    for (const NodeData& n : r.nodes) {
      const QByteArray node = csvField(n.name);
      const std::pair<const char*, const std::vector<Point>*> series[] = {
          {"wait_s", &n.wait},       {"staleness", &n.staleness}, {"train_loss", &n.trainLoss},
          {"compute_s", &n.compute}, {"batch_size", &n.batch}};
      for (const auto& [name, points] : series) {
        for (const Point& p : *points) row(node, name, p.t, p.version, p.value);
      }
    }
    for (const RecoveryMetrics& m : r.faults) {
      const FaultRecord& f = m.fault;
      const QByteArray node = csvField(QString::fromStdString(f.node));
      const QByteArray prefix = "fault." + QByteArray::number(f.index) + '.';
      auto opt = [](const auto& v) -> std::optional<double> {
        if (!v) return std::nullopt;
        return static_cast<double>(*v);
      };
      const std::pair<const char*, std::optional<double>> figures[] = {
          {"detection_s", m.detectionS},
          {"downtime_s", m.downtimeS},
          {"updates_lost", opt(m.updatesLost)},
          {"version_after", opt(f.versionAfter)},
          {"gradients_during_outage", static_cast<double>(f.gradientsDuringOutage)},
          {"gradients_dropped", static_cast<double>(f.gradientsDropped)},
          {"gradients_discarded", static_cast<double>(f.gradientsDiscarded)},
          {"cpu_s", f.cpuS},
          {"accuracy_before", m.accuracyBefore},
          {"accuracy_lowest_after", m.accuracyLowestAfter},
          {"recover_s", m.recoverS},
          {"accuracy_jump", m.accuracyJump}};
      for (const auto& [name, value] : figures) {
        if (value) row(node, (prefix + name).constData(), f.atS, f.versionBefore, *value);
      }
    }
  }
  return out.commit();
}

Status writeChromeTrace(const std::vector<RunData>& runs, const QString& path) {
  Sink out(path);
  if (Status s = out.open(); !s) return s;
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"dasp-report\"},\"traceEvents\":[";
  bool first = true;
  auto event = [&](const QByteArray& body) {
    out << (first ? QByteArray("\n{") : QByteArray(",\n{")) + body + '}';
    first = false;
  };
  // Microseconds, rounded to the nanosecond so 0.0136018 s reads 13601.8, not 13601.800000000001.
  auto us = [](double t) { return num(std::round(t * 1e9) / 1e3); };
  for (const RunData& r : runs) {
    const QByteArray pid = QByteArray::number(static_cast<qlonglong>(r.runId));
    const QString title = QStringLiteral("run %1 %2 seed %3 (%4)").arg(r.runId).arg(r.displayStrategy()).arg(r.seed).arg(r.name);
    event("\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"name\":" + jsonString(title) + '}');
    event("\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid + ",\"args\":{\"sort_index\":" + pid + '}');
    // tid 0 is the cluster (cluster-wide decisions, events, accuracy); worker i is tid i + 1.
    auto thread = [&](int tid, const QString& name) {
      const QByteArray t = QByteArray::number(tid);
      event("\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + t + ",\"args\":{\"name\":" +
            jsonString(name) + '}');
      event("\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":" + pid + ",\"tid\":" + t +
            ",\"args\":{\"sort_index\":" + t + '}');
    };
    thread(0, QStringLiteral("cluster"));
    auto tidOf = [&](const QString& node) {
      for (std::size_t i = 0; i < r.nodes.size(); ++i) {
        if (r.nodes[i].name == node) return static_cast<int>(i) + 1;
      }
      return 0;
    };
    for (std::size_t i = 0; i < r.nodes.size(); ++i) {
      const NodeData& n = r.nodes[i];
      const int tid = static_cast<int>(i) + 1;
      thread(tid, n.name);
      const QByteArray head = ",\"pid\":" + pid + ",\"tid\":" + QByteArray::number(tid);
      for (const Interval& iv : n.intervals) {
        if (!std::isfinite(iv.t0) || !std::isfinite(iv.t1) || iv.t1 < iv.t0) continue;
        event(QByteArray("\"name\":\"") + toString(iv.state) + "\",\"cat\":\"state\",\"ph\":\"X\",\"ts\":" + us(iv.t0) +
              ",\"dur\":" + us(iv.t1 - iv.t0) + head + ",\"args\":{\"parallel\":\"" + toString(iv.parallel) + "\"}");
      }
    }
    for (const Decision& d : r.decisions) {
      if (!std::isfinite(d.t)) continue;
      const int tid = tidOf(d.node);
      event("\"name\":" + jsonString(d.decision) + ",\"cat\":\"decision\",\"ph\":\"i\",\"s\":\"" +
            (tid == 0 ? "p" : "t") + "\",\"ts\":" + us(d.t) + ",\"pid\":" + pid + ",\"tid\":" +
            QByteArray::number(tid) + ",\"args\":{\"node\":" + jsonString(d.node) + ",\"reason\":" +
            jsonString(d.reason) + '}');
    }
    for (const Event& e : r.events) {
      if (!std::isfinite(e.t)) continue;
      const int tid = tidOf(e.node);
      event("\"name\":" + jsonString(e.kindName()) + ",\"cat\":\"event\",\"ph\":\"i\",\"s\":\"" + (tid == 0 ? "p" : "t") +
            "\",\"ts\":" + us(e.t) + ",\"pid\":" + pid + ",\"tid\":" + QByteArray::number(tid) +
            ",\"args\":{\"node\":" + jsonString(e.node) + ",\"detail\":" + jsonString(e.detail) + '}');
    }
    for (const Evaluation& e : r.evaluations) {
      if (!std::isfinite(e.t) || !std::isfinite(e.accuracy) || !std::isfinite(e.loss)) continue;
      event("\"name\":\"test\",\"ph\":\"C\",\"ts\":" + us(e.t) + ",\"pid\":" + pid + ",\"tid\":0,\"args\":{\"accuracy\":" +
            num(e.accuracy) + ",\"loss\":" + num(e.loss) + '}');
    }
  }
  out << "\n]}\n";
  return out.commit();
}

// ---- HTML and PDF ----------------------------------------------------------------------

namespace {

bool haveWidgets() { return qobject_cast<QApplication*>(QCoreApplication::instance()) != nullptr; }

Status needWidgets(const QString& path) {
  return Status::error(path.toStdString() + ": the report renders charts and needs a QApplication");
}

}  // namespace

Status saveFileBytes(const QString& path, const QByteArray& bytes) {
  Sink sink(path);
  if (Status s = sink.open(); !s) return s;
  sink << bytes;
  return sink.commit();
}

Status writeHtmlReport(const std::vector<RunData>& runs, const QString& path, const ReportOptions& options) {
  if (!haveWidgets()) return needWidgets(path);
  const SweepTable sweep = SweepTable::fromRuns(runs);
  const Result<SweepAxes> axes = chooseAxes(sweep, options.sweepAxes);
  if (!axes) return axes.status().withContext(path.toStdString());
  const Result<QString> groupKey = checkedGroupKey(runs, options.groupBy);
  if (!groupKey) return groupKey.status().withContext(path.toStdString());
  const QString html = buildReportHtml(runs, ReportPage{}, sweep, axes.value(), groupKey.value(), [](const QString&, const QImage& im) {
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    im.save(&buffer, "PNG");
    return QStringLiteral("data:image/png;base64,") + QString::fromLatin1(png.toBase64());
  });
  return saveFileBytes(path, html.toUtf8());
}

namespace {

QPageLayout a4(bool landscape) {
  return QPageLayout(QPageSize(QPageSize::A4), landscape ? QPageLayout::Landscape : QPageLayout::Portrait,
                     QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
}

}  // namespace

int PdfLayout::pageCount() const { return doc ? doc->pageCount() : 0; }

Result<PdfLayout> layoutPdfReport(const std::vector<RunData>& runs, const ReportOptions& options) {
  if (!haveWidgets()) return needWidgets(QStringLiteral("PDF"));
  const SweepTable sweep = SweepTable::fromRuns(runs);
  const Result<SweepAxes> axes = chooseAxes(sweep, options.sweepAxes);
  if (!axes) return axes.status();
  const Result<QString> groupKey = checkedGroupKey(runs, options.groupBy);
  if (!groupKey) return groupKey.status();
  PdfLayout layout;
  layout.landscape = summaryColumnCount(runFigures(runs)) > kPortraitColumns;
  // Paginate in 96-dpi pixels of the printable area: print() then only scales the
  // document, instead of adding its own 2 cm margins around a layout at the printer's
  // resolution (which made the images overflow the page).
  const QRectF area = a4(layout.landscape).paintRect(QPageLayout::Millimeter);
  const QSizeF page(area.width() / 25.4 * 96, area.height() / 25.4 * 96);
  layout.doc = std::make_unique<QTextDocument>();
  QTextDocument& doc = *layout.doc;
  ReportPage form;
  form.compact = true;
  form.imageWidth = static_cast<int>(page.width()) - 24;
  const QString html = buildReportHtml(runs, form, sweep, axes.value(), groupKey.value(), [&doc](const QString& name, const QImage& im) {
    doc.addResource(QTextDocument::ImageResource, QUrl(name), QVariant(im));
    return name;
  });
  QFont font = doc.defaultFont();
  font.setPointSizeF(7.5);
  doc.setDefaultFont(font);
  // Break lines between words only: the default (anywhere) splits a narrow column's
  // header letter by letter ("stra tegy").
  QTextOption wrap = doc.defaultTextOption();
  wrap.setWrapMode(QTextOption::WordWrap);
  doc.setDefaultTextOption(wrap);
  doc.setHtml(html);
  doc.setPageSize(page);
  return layout;
}

Status writePdfReport(const std::vector<RunData>& runs, const QString& path, const ReportOptions& options) {
  if (!haveWidgets()) return needWidgets(path);
  Result<PdfLayout> layout = layoutPdfReport(runs, options);
  if (!layout) return layout.status().withContext(path.toStdString());
  QTextDocument& doc = *layout.value().doc;
  QByteArray pdf;
  {
    QBuffer buffer(&pdf);
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter writer(&buffer);
    writer.setPageLayout(a4(layout.value().landscape));
    writer.setResolution(300);
    writer.setCreator(QStringLiteral("dasp-report"));
    writer.setTitle(doc.metaInformation(QTextDocument::DocumentTitle));
    doc.print(&writer);
  }
  if (!pdf.startsWith("%PDF")) return writeError(path, QStringLiteral("the PDF writer produced no output"));
  return saveFileBytes(path, pdf);
}

}  // namespace dasp::ui
