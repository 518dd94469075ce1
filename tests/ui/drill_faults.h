// SPDX-License-Identifier: MIT
#pragma once
// The recovery metrics of two fault drills, shared by the UI tests that store and show
// them: a server kill recovered from a checkpoint (its detail text given), and a worker
// pause after which accuracy never got back.
#include "core/results/recovery_metrics.h"

#include <string>
#include <vector>

inline std::vector<dasp::RecoveryMetrics> drillFaults(const std::string& killDetail = "restored checkpoint v10") {
  dasp::RecoveryMetrics kill;
  kill.fault.index = 0;
  kill.fault.node = "server";
  kill.fault.action = "kill";
  kill.fault.atS = 1.2;
  kill.fault.restartAtS = 1.5;
  kill.fault.detectedAtS = 1.3;
  kill.fault.resumedAtS = 2.0;
  kill.fault.versionBefore = 20;
  kill.fault.versionAfter = 10;
  kill.fault.gradientsDuringOutage = 6;
  kill.fault.gradientsDropped = 1;
  kill.fault.cpuS = 1.25;
  kill.fault.detail = killDetail;
  kill.detectionS = 0.1;
  kill.downtimeS = 0.8;
  kill.updatesLost = 10;
  kill.accuracyBefore = 0.25;
  kill.accuracyLowestAfter = 0.2;
  kill.recoverS = 0.4;
  kill.accuracyJump = 0.15;
  kill.finalAccuracy = 0.85;
  dasp::RecoveryMetrics pause;
  pause.fault.index = 1;
  pause.fault.node = "worker-1";
  pause.fault.action = "pause";
  pause.fault.atS = 3.0;
  pause.accuracyBefore = 0.55;
  pause.finalAccuracy = 0.85;
  return {kill, pause};
}
