// SPDX-License-Identifier: MIT
#pragma once
// The fault-tolerance GUI tests' fixtures (tst_faults.cpp, tst_fault_designer.cpp): specs
// with drills, table cells, a stored run with fault drills, evaluation curves.
#include "core/store/run_store.h"
#include "core/spec/spec.h"
#include "ui/charts/convergence_chart.h"
#include "ui/charts/fault_spans.h"
#include "ui/runs/compare_panel.h"
#include "ui/designer/fault_table.h"
#include "ui/runs/faults_view.h"
#include "ui/live/live_charts.h"
#include "ui/live/live_panel.h"
#include "ui/live/live_run_feed.h"
#include "ui/live/run_controller.h"
#include "ui/charts/run_data.h"
#include "ui/designer/spec_designer.h"

#include <google/protobuf/util/message_differencer.h>

#include <QChart>
#include <QComboBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStyleOptionViewItem>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QValueAxis>
#include "drill_faults.h"

#include <QtTest>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

using namespace dasp;
using namespace dasp::ui;

using RE = dasp::v1::RunEvent;

namespace fault_fixtures {

inline bool sameSpec(const ExperimentSpec& a, const ExperimentSpec& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

inline ExperimentSpec parse(const char* json) {
  auto spec = parseSpecJson(json, "test");
  if (!spec) qFatal("bad test spec: %s", spec.message().c_str());
  return spec.value();
}

inline const char* kDrillSpec = R"({
  "name": "drill",
  "cluster": {"count": 3, "slowdowns": [1, 1, 2], "base_iteration_ms": 10},
  "strategy": {"name": "asp"},
  "recovery": {"mode": "CHECKPOINT", "checkpoint_every_updates": 50, "checkpoint_keep": 3,
               "reconnect_timeout_s": 30},
  "faults": [{"node": "server", "action": "KILL", "at_s": 4, "restart_after_s": 2},
             {"node": "worker-1", "action": "PAUSE", "at_s": 7.5}],
  "stop": {"max_seconds": 20}
})";

inline QString cell(const QTableWidget* t, int row, int column) {
  const QTableWidgetItem* item = t->item(row, column);
  return item ? item->text() : QStringLiteral("<none>");
}

bool visibleIn(const QWidget* w, const QWidget* top) { return w != nullptr && w->isVisibleTo(top); }

inline void selectValue(QComboBox* combo, const QString& value) {
  const int index = combo->findData(value);
  QVERIFY2(index >= 0, qPrintable(value));
  combo->setCurrentIndex(index);
  Q_EMIT combo->activated(index);  // as a user's choice
}


// One run in the store: evaluations, events and (when given) fault drills.
inline std::int64_t writeRun(RunStore& store, const std::string& path, const std::vector<RecoveryMetrics>& faults) {
  NewRun run;
  run.kind = "distributed";
  run.name = "faults-test";
  run.specJson = R"({"name":"faults-test","cluster":{"count":2},"strategy":{"name":"asp"},)"
                 R"("recovery":{"mode":"CHECKPOINT"},"stop":{"target_accuracy":0.5}})";
  run.model = "mlp";
  run.dataset = "synthetic";
  run.strategy = "asp";
  run.recovery = faults.empty() ? "none" : "checkpoint";
  run.seed = 1;
  run.codeVersion = "test";
  Result<std::int64_t> id = store.createRun(run);
  if (!id) qFatal("createRun: %s", id.message().c_str());
  auto rec = RunRecorder::open(path, *id);
  if (!rec) qFatal("recorder: %s", rec.message().c_str());
  RunRecorder& r = **rec;
  for (int e = 0; e < 8; ++e) r.record(EvaluationRow{*id, e * 0.5, e * 10, e * 10, e * 640, 2.0 / (1 + e), 0.1 + 0.1 * e});
  if (!faults.empty()) {
    r.record(EventRow{*id, 1.2, RE::FAULT, "server", "kill server", RE::KILL, "server"});
    r.record(EventRow{*id, 1.5, RE::FAULT, "server", "restarted server (recovery checkpoint)", RE::RESTARTED, "server"});
    r.recordFaults(faults);
  }
  if (Status s = r.finish(RunStatus::Completed); !s) qFatal("finish: %s", s.message().c_str());
  return *id;
}

inline RunData evalRun(double end) {
  RunData r;
  r.runId = 5;
  r.strategy = QStringLiteral("asp");
  for (int i = 0; i <= 20; ++i) {
    const double t = end * i / 20;
    r.evaluations.push_back({t, i * 10, i * 640, 2.0 / (1 + i), 0.1 + 0.04 * i});
  }
  r.endT = end;
  return r;
}

}  // namespace fault_fixtures
