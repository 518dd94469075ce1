// SPDX-License-Identifier: MIT
#include "ui/charts/report.h"

#include "core/json_text.h"

#include "ui/charts/convergence_chart.h"
#include "ui/charts/node_bars.h"
#include "ui/charts/node_lanes.h"
#include "ui/charts/staleness_histogram.h"
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
#include <QUrl>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

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

Status saveBytes(const QString& path, const QByteArray& bytes) {
  Sink sink(path);
  if (Status s = sink.open(); !s) return s;
  sink << bytes;
  return sink.commit();
}

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

std::pair<double, double> meanStd(const std::vector<double>& v) {
  if (v.empty()) return {std::nan(""), std::nan("")};
  double sum = 0;
  for (double x : v) sum += x;
  const double mean = sum / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return {mean, v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0.0};
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
    return meanStd(t).first;
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
    f.strategy = r.strategy;
    f.engine = r.engine;
    f.status = r.status;
    f.seed = r.seed;
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
          {"wait_s", &n.wait}, {"staleness", &n.staleness}, {"train_loss", &n.trainLoss}, {"compute_s", &n.compute}};
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
    const QString title = QStringLiteral("run %1 %2 seed %3 (%4)").arg(r.runId).arg(r.strategy).arg(r.seed).arg(r.name);
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

// Turns a rendered chart into an <img> source: a data: URI (HTML) or a document resource (PDF).
using ImageSink = std::function<QString(const QString& name, const QImage& image)>;

bool haveWidgets() { return qobject_cast<QApplication*>(QCoreApplication::instance()) != nullptr; }

// Renders a widget, never shown, at `size`.
QImage renderWidget(QWidget& w, const QSize& size, const std::function<void()>& beforeRender = {}) {
  w.resize(size);
  // A hidden widget gets its resize event only when shown or rendered; the chart needs
  // it (and its layout) before render(), so deliver it now.
  QResizeEvent resize(size, QSize());
  QCoreApplication::sendEvent(&w, &resize);
  if (beforeRender) beforeRender();
  QImage image(size, QImage::Format_ARGB32_Premultiplied);
  image.fill(Qt::white);
  w.render(&image);
  return image;
}

QImage renderChart(ConvergenceChart& chart, const QSize& size) {
  return renderWidget(chart, size, [&] {
    // The chart lays itself out through posted layout requests: run them, then fill the
    // series for the final plot width.
    QCoreApplication::sendPostedEvents(chart.chart());
    QCoreApplication::sendPostedEvents(chart.scene());
    chart.refresh();
    QCoreApplication::sendPostedEvents(chart.chart());
  });
}

QString esc(const QString& s) { return s.toHtmlEscaped(); }

QString fig(const std::optional<double>& v, int decimals) {
  return v && std::isfinite(*v) ? QString::number(*v, 'f', decimals) : QStringLiteral("–");
}

QString pm(const std::vector<double>& v, int decimals) {
  if (v.empty()) return QStringLiteral("–");
  const auto [m, s] = meanStd(v);
  return QStringLiteral("%1 ± %2").arg(m, 0, 'f', decimals).arg(s, 0, 'f', decimals);
}

bool routineEvent(const Event& e) { return e.code == v1::RunEvent::NODE_UP; }

// The sweep section: one heatmap per facet, then the grid points as a table.
QString sweepSection(const SweepTable& sweep, const SweepAxes& axes, const QString& table,
                     const std::function<QString(const QImage&, const QString&, int)>& img, int imgW) {
  QString h = QStringLiteral("<h2>Sweep: time to target</h2>\n");
  QStringList swept;
  for (const QString& p : sweep.sweepPaths) {
    swept << QStringLiteral("%2 (%1 values)").arg(sweep.axis(p)->values.size()).arg(esc(p));
  }
  QStringList knobs;
  for (const SweepAxis& a : sweep.axes) {
    if (a.strategyKnob) knobs << esc(a.path);
  }
  h += QStringLiteral("<p>Swept: %1. Heatmap columns: %2%3%4. Each cell is the mean time to target over the "
                      "runs of its grid point that reached the target (n/m when only n of its m runs did); "
                      "hatched grey: none did. Colours: viridis, one scale for all maps, lower is better.%5</p>\n")
           .arg(swept.join(QStringLiteral(", ")), esc(axes.x),
                axes.y.isEmpty() ? QString() : QStringLiteral(", rows: ") + esc(axes.y),
                axes.facets.isEmpty() ? QString()
                                      : QStringLiteral("; one map per ") + esc(axes.facets.join(QStringLiteral(" × "))),
                knobs.isEmpty() ? QString()
                                : QStringLiteral(" Differing only between strategies, so part of them: ") +
                                      knobs.join(QStringLiteral(", ")) + QLatin1Char('.'));
  for (const SweepHeatmap& map : sweepHeatmaps(sweep, axes)) {
    const QImage im = renderSweepHeatmap(map);
    const QString alt = QStringLiteral("time to target heatmap") +
                        (map.facet.isEmpty() ? QString() : QStringLiteral(": ") + map.facet);
    h += img(im, alt, std::min(im.width(), imgW));
  }
  h += table.arg(QStringLiteral("sweep")) + QStringLiteral("<tr>");
  for (const QString& p : sweep.sweepPaths) {
    h += QStringLiteral("<th%1>%2</th>").arg(sweep.axis(p)->numeric ? QString() : QStringLiteral(" class=\"l\""), esc(p));
  }
  h += QStringLiteral("<th class=\"l\">strategy</th><th>runs</th><th>reached</th><th>time to target (s)</th></tr>\n");
  for (const SweepRow& row : sweep.rows) {
    h += QStringLiteral("<tr>");
    for (int i = 0; i < sweep.sweepPaths.size(); ++i) {
      const QString& v = row.values[static_cast<std::size_t>(i)];
      h += QStringLiteral("<td%1>%2</td>")
               .arg(sweep.axis(sweep.sweepPaths[i])->numeric ? QString() : QStringLiteral(" class=\"l\""),
                    v.isEmpty() ? QStringLiteral("–") : esc(v));
    }
    QString time = QStringLiteral("not reached");
    if (row.mean && row.stddev) {
      time = QStringLiteral("%1 ± %2").arg(*row.mean, 0, 'f', 2).arg(*row.stddev, 0, 'f', 2);
    } else if (row.mean) {
      time = QString::number(*row.mean, 'f', 2);  // one run: no spread to show
    }
    h += QStringLiteral("<td class=\"l\">%3</td><td>%1</td><td>%2</td><td>%4</td></tr>\n")
             .arg(row.runs)
             .arg(row.reached)
             .arg(esc(row.strategy), time);
  }
  h += QStringLiteral("</table>\n");
  return h;
}

QString buildReport(const std::vector<RunData>& runs, bool forPdf, const SweepTable& sweep, const SweepAxes& sweepAxes,
                    const ImageSink& image) {
  const std::vector<RunFigures> figs = runFigures(runs);
  const int imgW = forPdf ? 660 : 960;
  QString h;
  QString names;
  for (const RunData& r : runs) {
    if (!names.contains(r.name)) names += (names.isEmpty() ? QString() : QStringLiteral(", ")) + r.name;
  }
  const QString title = QStringLiteral("DASP report: %1").arg(names.isEmpty() ? QStringLiteral("no runs") : names);
  h += QStringLiteral("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%1</title>\n").arg(esc(title));
  h += QStringLiteral(
      "<style>body{font-family:sans-serif;font-size:10pt;margin:1.5em}"
      "table{border-collapse:collapse;margin:0.5em 0}th,td{border:1px solid #bbb;padding:2px 6px;text-align:right}"
      "th{background:#eee}td.l,th.l{text-align:left}pre{background:#f6f6f6;padding:6px;white-space:pre-wrap;"
      "font-size:8pt}img{max-width:100%}</style></head><body>\n");
  h += QStringLiteral("<h1>%1</h1>\n<p>%2 run(s), generated %3 by dasp-report.</p>\n")
           .arg(esc(title))
           .arg(runs.size())
           .arg(QDateTime::currentDateTime().toString(Qt::ISODate));

  const QString table = QStringLiteral("<table class=\"%1\" border=\"1\" cellspacing=\"0\" cellpadding=\"3\">\n");
  h += QStringLiteral("<h2>Summary</h2>\n") + table.arg(QStringLiteral("summary"));
  h += QStringLiteral(
      "<tr><th>run</th><th class=\"l\">name</th><th class=\"l\">strategy</th><th class=\"l\">engine</th><th>seed</th>"
      "<th class=\"l\">status</th>"
      "<th>target</th><th>time to target (s)</th><th>speedup vs BSP</th><th>heterogeneity cost</th>"
      "<th>final accuracy</th><th>mean wait (s)</th>"
      "<th>mean staleness</th><th>max staleness</th><th>updates</th><th>dropped / lost</th>"
      "<th class=\"l\">lr convention</th></tr>\n");
  for (const RunFigures& f : figs) {
    // Numbers first, the texts in one multi-argument arg(): a '%' in a name stays as is.
    h += QStringLiteral(
             "<tr><td>%1</td><td class=\"l\">%3</td><td class=\"l\">%4</td><td class=\"l\">%5</td><td>%2</td>"
             "<td class=\"l\">%6</td>")
             .arg(f.runId)
             .arg(f.seed)
             .arg(esc(f.name), esc(f.strategy), esc(f.engine), esc(f.status));
    h += QStringLiteral("<td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td><td>%8</td>"
                        "<td>%9</td>")
             .arg(fig(f.target, 3), fig(f.timeToTarget, 2),
                  f.speedupVsBsp ? fig(f.speedupVsBsp, 2) + QStringLiteral("×") : QStringLiteral("–"),
                  fig(f.heterogeneityCost, 2), fig(f.finalAccuracy, 4), fig(f.meanWait, 4), fig(f.meanStaleness, 2),
                  fig(f.maxStaleness, 0), fig(f.updates, 0));
    h += QStringLiteral("<td>%1 / %2</td><td class=\"l\">%3</td></tr>\n")
             .arg(fig(f.dropped, 0), fig(f.lost, 0), esc(f.lrConvention));
  }
  h += QStringLiteral("</table>\n");

  // Per strategy, across seeds.
  std::vector<QString> order;
  std::map<QString, std::vector<std::size_t>> byStrategy;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const QString& key = runs[i].label.isEmpty() ? runs[i].strategy : runs[i].label;
    auto& members = byStrategy[key];
    if (members.empty()) order.push_back(key);
    members.push_back(i);
  }
  const bool grouped = std::any_of(byStrategy.begin(), byStrategy.end(), [](const auto& kv) { return kv.second.size() > 1; });
  if (grouped) {
    h += QStringLiteral("<h2>Per strategy (mean ± std across runs)</h2>\n") + table.arg(QStringLiteral("strategies"));
    h += QStringLiteral(
        "<tr><th class=\"l\">strategy</th><th>runs</th><th>reached target</th><th>time to target (s)</th>"
        "<th>speedup vs BSP</th><th>heterogeneity cost</th><th>final accuracy</th><th>mean wait (s)</th>"
        "<th>mean staleness</th></tr>\n");
    for (const QString& s : order) {
      std::vector<double> ttt, speedup, cost, acc, wait, stale;
      for (std::size_t i : byStrategy[s]) {
        const RunFigures& f = figs[i];
        if (f.timeToTarget) ttt.push_back(*f.timeToTarget);
        if (f.speedupVsBsp) speedup.push_back(*f.speedupVsBsp);
        if (f.heterogeneityCost) cost.push_back(*f.heterogeneityCost);
        if (f.finalAccuracy) acc.push_back(*f.finalAccuracy);
        if (f.meanWait) wait.push_back(*f.meanWait);
        if (f.meanStaleness) stale.push_back(*f.meanStaleness);
      }
      h += QStringLiteral("<tr><td class=\"l\">%1</td><td>%2</td><td>%3/%2</td><td>%4</td><td>%5</td><td>%6</td>"
                          "<td>%7</td><td>%8</td><td>%9</td></tr>\n")
               .arg(esc(s))
               .arg(byStrategy[s].size())
               .arg(ttt.size())
               .arg(pm(ttt, 2), pm(speedup, 2), pm(cost, 2), pm(acc, 4), pm(wait, 4), pm(stale, 2));
    }
    h += QStringLiteral("</table>\n");
  }

  // Fault drills: the recovery table across runs, then every fault of every run.
  const std::vector<RunFaults> drills = runFaults(runs);
  if (!drills.empty()) {
    const RecoveryTable recovery = recoveryTable(drills);
    h += QStringLiteral("<h2>Faults and recovery</h2>\n") + table.arg(QStringLiteral("recovery")) + QStringLiteral("<tr>");
    for (std::size_t c = 0; c < recovery.header.size(); ++c) {
      h += QStringLiteral("<th%1>%2</th>")
               .arg(c < 3 ? QStringLiteral(" class=\"l\"") : QString(), esc(QString::fromStdString(recovery.header[c])));
    }
    h += QStringLiteral("</tr>\n");
    for (const auto& row : recovery.rows) {
      h += QStringLiteral("<tr>");
      for (std::size_t c = 0; c < row.size(); ++c) {
        h += QStringLiteral("<td%1>%2</td>")
                 .arg(c < 3 ? QStringLiteral(" class=\"l\"") : QString(), esc(QString::fromStdString(row[c])));
      }
      h += QStringLiteral("</tr>\n");
    }
    h += QStringLiteral("</table>\n<p>%1</p>\n").arg(esc(QString::fromStdString(recovery.note)));

    // Per fault: the figures that say what happened (the CSV has every figure).
    h += table.arg(QStringLiteral("faults"));
    h += QStringLiteral(
        "<tr><th>run</th><th class=\"l\">recovery</th><th class=\"l\">fault</th><th>at (s)</th>"
        "<th>detection (s)</th><th>downtime (s)</th><th>version before → after</th>"
        "<th>accuracy before → lowest</th><th>back to pre-fault (s)</th><th class=\"l\">detail</th></tr>\n");
    for (const RunFaults& rf : drills) {
      for (const RecoveryMetrics& m : rf.faults) {
        const FaultRecord& f = m.fault;
        const QString after = f.versionAfter ? QString::number(*f.versionAfter) : QStringLiteral("–");
        const QString back = m.recoverS ? fig(m.recoverS, 2)
                                        : (m.accuracyBefore ? QStringLiteral("never") : QStringLiteral("–"));
        // Numbers first, the texts in one multi-argument arg(): a '%' in a text stays as is.
        h += QStringLiteral("<tr><td>%1</td><td class=\"l\">%4</td><td class=\"l\">%2: %5 %6</td><td>%3</td>")
                 .arg(rf.runId)
                 .arg(f.index)
                 .arg(f.atS, 0, 'f', 2)
                 .arg(esc(QString::fromStdString(rf.recovery)), esc(QString::fromStdString(f.action)),
                      esc(QString::fromStdString(f.node)));
        h += QStringLiteral("<td>%1</td><td>%2</td><td>%3 → %4</td><td>%5 → %6</td><td>%7</td><td class=\"l\">%8</td></tr>\n")
                 .arg(fig(m.detectionS, 2), fig(m.downtimeS, 2))
                 .arg(f.versionBefore)
                 .arg(after, fig(m.accuracyBefore, 4), fig(m.accuracyLowestAfter, 4), back,
                      esc(QString::fromStdString(f.detail)));
      }
    }
    h += QStringLiteral("</table>\n");
  }

  // Convergence, drawn by the GUI's own chart.
  std::vector<const RunData*> ptrs;
  QStringList labels;
  for (const RunData& r : runs) {
    ptrs.push_back(&r);
    labels << (grouped ? r.strategy : QStringLiteral("%1 #%2").arg(r.strategy).arg(r.runId));
  }
  // The target line only when every run has the same target.
  double target = !figs.empty() && figs.front().target ? *figs.front().target : std::nan("");
  for (const RunFigures& f : figs) {
    if (!f.target || *f.target != target) target = std::nan("");
  }
  int imageNo = 0;
  auto sizedImg = [&](const QImage& im, const QString& alt, int width) {
    const QString src = image(QStringLiteral("chart%1.png").arg(imageNo++), im);
    return QStringLiteral("<p><img src=\"%1\" alt=\"%2\" width=\"%3\"></p>\n").arg(src, esc(alt)).arg(width);
  };
  auto img = [&](const QImage& im, const QString& alt) { return sizedImg(im, alt, imgW); };
  if (!sweepAxes.empty()) h += sweepSection(sweep, sweepAxes, table, sizedImg, imgW);
  const QSize chartSize(960, 420);
  if (!runs.empty()) {
    h += QStringLiteral("<h2>Convergence</h2>\n");
    ConvergenceChart chart;
    chart.setRuns(ptrs, labels);
    chart.setGrouped(grouped);
    chart.setTarget(target);
    const QString timeTitle = ConvergenceChart::timeAxisTitle(ptrs);
    h += img(renderChart(chart, chartSize), QStringLiteral("test accuracy against ") + timeTitle);
    chart.setXAxis(ConvergenceChart::XAxis::Updates);
    h += img(renderChart(chart, chartSize), QStringLiteral("test accuracy against updates"));
    chart.setXAxis(ConvergenceChart::XAxis::Time);
    chart.setMetric(ConvergenceChart::Metric::Loss);
    chart.setTarget(std::nan(""));
    h += img(renderChart(chart, chartSize), QStringLiteral("test loss against ") + timeTitle);
  }

  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunData& r = runs[i];
    const double end = r.endT > 0 && std::isfinite(r.endT) ? r.endT : 1.0;
    h += QStringLiteral("<h2>Run #%1: %2 (%3, seed %4, %5)</h2>\n")
             .arg(r.runId)
             .arg(esc(r.name), esc(r.strategy))
             .arg(r.seed)
             .arg(esc(r.status));
    h += QStringLiteral("<p>model %1, dataset %2, %3 worker(s), %4 s of run time, %5 evaluation(s).</p>\n")
             .arg(esc(r.model), esc(r.dataset))
             .arg(r.nodes.size())
             .arg(end, 0, 'f', 1)
             .arg(r.evaluations.size());
    if (!r.nodes.empty()) {
      NodeLanes lanes;
      lanes.setRun(&r);
      lanes.setWindow(0, end);
      const QSize lanesSize(960, lanes.sizeHint().height());
      h += QStringLiteral("<h3>Node lanes, whole run</h3>\n") + img(renderWidget(lanes, lanesSize), QStringLiteral("node lanes"));
      if (end > 10) {
        lanes.setWindow(end / 2 - 2.5, end / 2 + 2.5);
        h += QStringLiteral("<h3>Node lanes, 5 s in the middle of the run</h3>\n") +
             img(renderWidget(lanes, lanesSize), QStringLiteral("node lanes detail"));
      }
      NodeBars bars;
      bars.setRun(&r);
      bars.setWindow(0, end);
      h += QStringLiteral("<h3>Per node, whole run</h3>\n") +
           img(renderWidget(bars, QSize(960, bars.sizeHint().height())), QStringLiteral("per-node statistics"));
      StalenessHistogram hist;
      hist.setRun(&r);
      if (!hist.counts().empty()) {
        h += img(renderWidget(hist, QSize(960, 240)), QStringLiteral("staleness histogram"));
      }
    }
    // Decisions by kind (there may be thousands), then the event timeline.
    std::map<QString, int> kinds;
    for (const Decision& d : r.decisions) ++kinds[d.decision.section(QLatin1Char(' '), 0, 0)];
    if (!kinds.empty()) {
      QStringList parts;
      for (const auto& [k, n] : kinds) parts << QStringLiteral("%1 ×%2").arg(esc(k)).arg(n);
      h += QStringLiteral("<p>Policy decisions: %1.</p>\n").arg(parts.join(QStringLiteral(", ")));
    }
    h += QStringLiteral("<h3>Faults and events</h3>\n");
    std::vector<const Event*> events;
    for (const Event& e : r.events) {
      if (!routineEvent(e)) events.push_back(&e);
    }
    std::stable_sort(events.begin(), events.end(), [](const Event* a, const Event* b) { return a->t < b->t; });
    if (events.empty()) {
      h += QStringLiteral("<p>No faults or control events.</p>\n");
    } else {
      h += table.arg(QStringLiteral("events")) +
           QStringLiteral("<tr><th>t (s)</th><th class=\"l\">kind</th><th class=\"l\">node</th><th class=\"l\">detail</th></tr>\n");
      const std::size_t shown = std::min<std::size_t>(events.size(), 500);
      for (std::size_t k = 0; k < shown; ++k) {
        const Event& e = *events[k];
        h += QStringLiteral("<tr><td>%1</td><td class=\"l\">%2</td><td class=\"l\">%3</td><td class=\"l\">%4</td></tr>\n")
                 .arg(e.t, 0, 'f', 3)
                 .arg(esc(e.kindName()), esc(e.node), esc(e.detail));
      }
      h += QStringLiteral("</table>\n");
      if (shown < events.size()) h += QStringLiteral("<p>… and %1 more events.</p>\n").arg(events.size() - shown);
    }
    const QJsonDocument spec = QJsonDocument::fromJson(r.specJson.toUtf8());
    const QString specText = spec.isObject() ? QString::fromUtf8(spec.toJson(QJsonDocument::Indented)) : r.specJson;
    h += QStringLiteral("<h3>Spec</h3>\n<pre>%1</pre>\n").arg(esc(specText));
  }
  h += QStringLiteral("</body></html>\n");
  return h;
}

Status needWidgets(const QString& path) {
  return Status::error(path.toStdString() + ": the report renders charts and needs a QApplication");
}

}  // namespace

Status writeHtmlReport(const std::vector<RunData>& runs, const QString& path, const ReportOptions& options) {
  if (!haveWidgets()) return needWidgets(path);
  const SweepTable sweep = SweepTable::fromRuns(runs);
  const Result<SweepAxes> axes = chooseAxes(sweep, options.sweepAxes);
  if (!axes) return axes.status().withContext(path.toStdString());
  const QString html = buildReport(runs, false, sweep, axes.value(), [](const QString&, const QImage& im) {
    QByteArray png;
    QBuffer buffer(&png);
    buffer.open(QIODevice::WriteOnly);
    im.save(&buffer, "PNG");
    return QStringLiteral("data:image/png;base64,") + QString::fromLatin1(png.toBase64());
  });
  return saveBytes(path, html.toUtf8());
}

Status writePdfReport(const std::vector<RunData>& runs, const QString& path, const ReportOptions& options) {
  if (!haveWidgets()) return needWidgets(path);
  const SweepTable sweep = SweepTable::fromRuns(runs);
  const Result<SweepAxes> axes = chooseAxes(sweep, options.sweepAxes);
  if (!axes) return axes.status().withContext(path.toStdString());
  QTextDocument doc;
  const QString html = buildReport(runs, true, sweep, axes.value(), [&doc](const QString& name, const QImage& im) {
    doc.addResource(QTextDocument::ImageResource, QUrl(name), QVariant(im));
    return name;
  });
  QFont font = doc.defaultFont();
  font.setPointSizeF(7.5);
  doc.setDefaultFont(font);
  doc.setHtml(html);
  QByteArray pdf;
  {
    QBuffer buffer(&pdf);
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter writer(&buffer);
    writer.setPageSize(QPageSize(QPageSize::A4));
    writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
    writer.setResolution(300);
    writer.setCreator(QStringLiteral("dasp-report"));
    writer.setTitle(doc.metaInformation(QTextDocument::DocumentTitle));
    // Paginate the document ourselves, in 96-dpi pixels of the printable area: print()
    // then only scales it, instead of adding its own 2 cm margins around a layout at the
    // printer's resolution (which made the images overflow the page).
    const QRectF area = writer.pageLayout().paintRect(QPageLayout::Millimeter);
    doc.setPageSize(QSizeF(area.width() / 25.4 * 96, area.height() / 25.4 * 96));
    doc.print(&writer);
  }
  if (!pdf.startsWith("%PDF")) return writeError(path, QStringLiteral("the PDF writer produced no output"));
  return saveBytes(path, pdf);
}

}  // namespace dasp::ui
