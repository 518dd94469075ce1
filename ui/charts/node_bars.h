// SPDX-License-Identifier: MIT
#pragma once
// NodeBars: per-node statistics of one run as horizontal bars, one row per worker and
// four columns: mean wait (s), mean staleness, throughput (iterations/s) and the
// straggler score (0..1: the lower of the throughput relative to the fastest node and to
// the node's own best window, core/results/straggler_score.h). The figures cover a time
// window: by default the last 10 s of the run (for a live run: how the nodes behave now),
// or a fixed [t0, t1]. The straggler (the lowest score, below 0.75) is flagged in red
// with "straggler".
// Custom painted: a handful of rows, refreshed at 5–10 Hz while a run is live.
// Threading: GUI thread only. The RunData is not owned; it must outlive the widget or be
// replaced with setRun(nullptr) first.

#include "ui/charts/run_data.h"

#include <QString>
#include <QWidget>

#include <cstdint>
#include <vector>

namespace dasp::ui {

struct NodeStats {
  QString name;
  double meanWait = 0;       // seconds; NaN when the node has no wait sample in the window
  double meanStaleness = 0;  // NaN when no gradient of the node was applied in the window
  double throughput = 0;     // iterations per second of the window
  double samplesPerS = 0;    // training samples per second of the window (Σ its iterations' batches)
  double batch = 0;          // its batch at the window's end (NaN: unknown)
  double batchShare = 0;     // that batch over the sum of every node's (NaN: unknown)
  std::int64_t iterations = 0;
  double relativeScore = 0;    // throughput / the fastest node's (NaN: unknown)
  double individualScore = 0;  // throughput / the node's best window of the same length
  double score = 0;            // the straggler score: the lower of the two (NaN: unknown)
  bool straggler = false;
};

// "48 (19%)": a node's batch and its share of the cluster's ("–" unknown).
QString batchText(const NodeStats& stats);

class NodeBars : public QWidget {
  Q_OBJECT

 public:
  explicit NodeBars(QWidget* parent = nullptr);
  ~NodeBars() override;

  void setRun(const RunData* run);
  // The last `seconds` of the run (the default, with 10 s).
  void setLastSeconds(double seconds);
  // A fixed window [t0, t1] of run time (e.g. the node lanes' visible window).
  void setWindow(double t0, double t1);
  // Recomputes the figures from the run.
  void refresh();
  const std::vector<NodeStats>& stats() const { return m_stats; }

  // The figures of every worker over (t0, t1] (a window starting at or before 0 includes
  // t = 0), scored and the straggler flagged. Iterations are counted from the wait
  // samples (one per iteration, in time order), else the training-loss samples;
  // non-finite values are left out of means.
  static std::vector<NodeStats> computeStats(const RunData& run, double t0, double t1);

  // The height that shows `rows` bar rows and the header without a scroll bar.
  static int heightForRows(int rows);
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  const RunData* m_run = nullptr;
  bool m_fixed = false;
  double m_lastSeconds = 10;
  double m_t0 = 0, m_t1 = 0;
  double m_shownT0 = 0, m_shownT1 = 0;
  std::vector<NodeStats> m_stats;
};

}  // namespace dasp::ui
