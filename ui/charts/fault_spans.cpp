// SPDX-License-Identifier: MIT
#include "ui/charts/fault_spans.h"

#include <QStringList>

#include <algorithm>
#include <cmath>

namespace dasp::ui {

namespace {

QString seconds(double v) { return QString::number(v, 'f', 2); }

// The node a restart message names: "restarted server-0; it rejoins…" → "server-0",
// "restarted the evaluator" → "evaluator".
QString restartedNode(const QStringList& words) {
  if (words.size() < 2) return {};
  QString node = words[1] == QLatin1String("the") && words.size() > 2 ? words[2] : words[1];
  while (!node.isEmpty() && (node.endsWith(QLatin1Char(';')) || node.endsWith(QLatin1Char(',')))) node.chop(1);
  return node;
}

std::vector<FaultSpan> fromMetrics(const std::vector<RecoveryMetrics>& faults) {
  std::vector<FaultSpan> out;
  out.reserve(faults.size());
  for (const RecoveryMetrics& m : faults) {
    const FaultRecord& f = m.fault;
    if (!std::isfinite(f.atS)) continue;
    FaultSpan s;
    s.t0 = f.atS;
    s.closed = f.restartAtS.has_value() && std::isfinite(*f.restartAtS);
    s.t1 = s.closed ? std::max(*f.restartAtS, f.atS) : f.atS;
    s.node = QString::fromStdString(f.node);
    s.action = QString::fromStdString(f.action);
    s.label = s.action + QLatin1Char(' ') + s.node;
    QStringList lines;
    lines << QStringLiteral("%1 at %2 s").arg(s.label, seconds(f.atS));
    lines << (s.closed ? QStringLiteral("%1 at %2 s")
                             .arg(s.action == QLatin1String("pause") ? QStringLiteral("resumed")
                                                                     : QStringLiteral("restarted"),
                                  seconds(s.t1))
                       : QStringLiteral("never restarted"));
    if (m.detectionS) lines << QStringLiteral("detected after %1 s").arg(seconds(*m.detectionS));
    if (m.downtimeS) lines << QStringLiteral("training resumed after %1 s").arg(seconds(*m.downtimeS));
    if (f.versionAfter) {
      lines << QStringLiteral("version %1 → %2 (%3 updates lost)")
                   .arg(f.versionBefore)
                   .arg(*f.versionAfter)
                   .arg(m.updatesLost.value_or(0));
    }
    if (m.accuracyBefore) {
      QString line = QStringLiteral("accuracy before %1").arg(*m.accuracyBefore, 0, 'f', 4);
      if (m.accuracyLowestAfter) line += QStringLiteral(", lowest after %1").arg(*m.accuracyLowestAfter, 0, 'f', 4);
      line += m.recoverS ? QStringLiteral(", back after %1 s").arg(seconds(*m.recoverS)) : QStringLiteral(", never back");
      lines << line;
    }
    if (!f.detail.empty()) lines << QString::fromStdString(f.detail);
    s.detail = lines.join(QLatin1Char('\n'));
    out.push_back(std::move(s));
  }
  std::stable_sort(out.begin(), out.end(), [](const FaultSpan& a, const FaultSpan& b) { return a.t0 < b.t0; });
  return out;
}

std::vector<FaultSpan> fromEvents(const std::vector<Event>& events) {
  // Events merged from the store may arrive out of time order: walk them sorted.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const QString& kind = events[i].kind;
    if ((kind == QLatin1String("fault") || kind == QLatin1String("control")) && std::isfinite(events[i].t)) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return events[a].t < events[b].t; });
  std::vector<FaultSpan> out;
  for (std::size_t i : order) {
    const Event& e = events[i];
    const QStringList words = e.detail.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (words.isEmpty()) continue;
    const QString& verb = words.front();
    if ((verb == QLatin1String("kill") || verb == QLatin1String("pause")) && words.size() == 2) {
      FaultSpan s;
      s.t0 = e.t;
      s.t1 = e.t;
      s.node = words[1];
      s.action = verb;
      s.label = e.detail;
      s.detail = QStringLiteral("%1 at %2 s (%3)").arg(e.detail, seconds(e.t), e.kind == QLatin1String("fault")
                                                                                  ? QStringLiteral("drill")
                                                                                  : QStringLiteral("live action"));
      out.push_back(std::move(s));
      continue;
    }
    QString node;
    if (verb == QLatin1String("resume") && words.size() == 2) node = words[1];
    if (verb == QLatin1String("restarted")) node = restartedNode(words);
    if (node.isEmpty()) continue;
    // The latest open span of that node ends here.
    for (auto it = out.rbegin(); it != out.rend(); ++it) {
      if (it->closed || it->node != node) continue;
      it->closed = true;
      it->t1 = std::max(e.t, it->t0);
      it->detail += QStringLiteral("\n%1 at %2 s").arg(e.detail, seconds(e.t));
      break;
    }
  }
  return out;
}

}  // namespace

std::vector<FaultSpan> faultSpans(const RunData& run) {
  if (!run.faults.empty()) return fromMetrics(run.faults);
  return fromEvents(run.events);
}

bool isMarkedEvent(const Event& e) {
  if (e.kind == QLatin1String("node") && e.detail.startsWith(QLatin1String("UP"))) return false;
  if (e.kind == QLatin1String("recovery") && e.detail.startsWith(QLatin1String("checkpoint:"))) return false;
  return true;
}

}  // namespace dasp::ui
