// SPDX-License-Identifier: MIT
#include "ui/charts/fault_spans.h"

#include <QStringList>

#include <algorithm>
#include <cmath>

namespace dasp::ui {

namespace {

QString seconds(double v) { return QString::number(v, 'f', 2); }

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
                             .arg(s.action == QLatin1String("pause")        ? QStringLiteral("resumed")
                                  : s.action == QLatin1String("disconnect") ? QStringLiteral("link restored")
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
    const EventKind kind = events[i].kind;
    if ((kind == v1::RunEvent::FAULT || kind == v1::RunEvent::CONTROL) && std::isfinite(events[i].t)) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return events[a].t < events[b].t; });
  std::vector<FaultSpan> out;
  for (std::size_t i : order) {
    const Event& e = events[i];
    if (e.code == v1::RunEvent::KILL || e.code == v1::RunEvent::PAUSE || e.code == v1::RunEvent::DISCONNECT) {
      FaultSpan s;
      s.t0 = e.t;
      s.t1 = e.t;
      s.node = e.subject();
      s.action = e.code == v1::RunEvent::KILL    ? QStringLiteral("kill")
                 : e.code == v1::RunEvent::PAUSE ? QStringLiteral("pause")
                                                 : QStringLiteral("disconnect");
      s.label = e.detail;
      s.detail = QStringLiteral("%1 at %2 s (%3)").arg(e.detail, seconds(e.t), e.kind == v1::RunEvent::FAULT
                                                                                  ? QStringLiteral("drill")
                                                                                  : QStringLiteral("live action"));
      out.push_back(std::move(s));
      continue;
    }
    if (e.code != v1::RunEvent::RESUME && e.code != v1::RunEvent::RESTARTED && e.code != v1::RunEvent::RECONNECT) continue;
    const QString& node = e.subject();
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

bool isMarkedEvent(const Event& e) { return !isRoutineCode(e.code); }

}  // namespace dasp::ui
