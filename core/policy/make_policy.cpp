// SPDX-License-Identifier: MIT
// makePolicy(): a strategy spec to its policy.
#include "core/policy/policy_internal.h"
#include "core/policy/sync_policies.h"
#include "core/policy/dasp_adaptive.h"
#include "core/spec/spec.h"

#include <sstream>

#include <algorithm>
#include <cmath>

namespace dasp {

using namespace policy_internal;

// ---------------------------------------------------------------------------------------
// makePolicy

namespace {

Status badField(const std::string& field, const std::string& message) {
  return Status::error("strategy." + field + ": " + message);
}

std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

Result<std::unique_ptr<SyncPolicy>> makePolicy(const v1::StrategySpec& strategy, int batchSize) {
  // Defaults as withDefaults() writes them, so an unresolved spec builds the same policy.
  const std::string name = strategy.name().empty() ? std::string("bsp") : strategy.name();
  const double timeout = strategy.has_barrier_timeout_s() ? strategy.barrier_timeout_s() : 10.0;
  if (!(timeout > 0)) {
    return badField("barrier_timeout_s", "must be > 0 (got " + num(timeout) + ")");
  }

  std::unique_ptr<SyncPolicy> policy;
  if (name == "bsp") {
    policy = std::make_unique<BspPolicy>(timeout);
  } else if (name == "asp") {
    policy = std::make_unique<AspPolicy>();
  } else if (name == "ssp") {
    const int s = strategy.ssp().has_staleness() ? strategy.ssp().staleness() : 3;
    if (s < 0) return badField("ssp.staleness", "must be >= 0 (got " + std::to_string(s) + ")");
    policy = std::make_unique<SspPolicy>(s, timeout);
  } else if (name == "dssp") {
    const int lo = strategy.dssp().has_s_low() ? strategy.dssp().s_low() : 3;
    const int hi = strategy.dssp().has_s_high() ? strategy.dssp().s_high() : 15;
    if (lo < 0 || hi < lo) {
      return badField("dssp", "needs 0 <= s_low <= s_high (got " + std::to_string(lo) + ", " +
                                  std::to_string(hi) + ")");
    }
    policy = std::make_unique<DsspPolicy>(lo, hi, timeout);
  } else if (name == "backup") {
    const int b = strategy.backup().has_backup_workers() ? strategy.backup().backup_workers() : 1;
    if (b < 0) {
      return badField("backup.backup_workers", "must be >= 0 (got " + std::to_string(b) + ")");
    }
    policy = std::make_unique<BackupPolicy>(b, timeout);
  } else if (name == "dasp") {
    const auto& d = strategy.dasp();
    DaspParamsResolved p;
    if (d.has_alpha()) p.alpha = d.alpha();
    if (d.has_delta()) p.delta = d.delta();
    if (d.has_kappa()) p.kappa = d.kappa();
    if (d.has_s_max()) p.sMax = d.s_max();
    if (d.has_s_high()) p.sHigh = d.s_high();
    if (d.has_staleness_scaling()) p.stalenessScaling = d.staleness_scaling();
    if (d.has_lead_cap()) p.leadCap = d.lead_cap();
    if (d.has_hysteresis()) p.hysteresis = d.hysteresis();
    p.barrierTimeoutS = timeout;
    if (!(p.alpha > 0 && p.alpha <= 1)) {
      return badField("dasp.alpha", "must be in (0, 1] (got " + num(p.alpha) + ")");
    }
    if (!(p.delta >= 0)) return badField("dasp.delta", "must be >= 0 (got " + num(p.delta) + ")");
    if (!(p.kappa >= 1)) return badField("dasp.kappa", "must be >= 1 (got " + num(p.kappa) + ")");
    if (p.sMax < 0) {
      return badField("dasp.s_max", "must be >= 0 (got " + std::to_string(p.sMax) + ")");
    }
    if (p.sHigh < 0) {
      return badField("dasp.s_high", "must be >= 0 (got " + std::to_string(p.sHigh) + ")");
    }
    if (p.hysteresis < 1) {
      return badField("dasp.hysteresis",
                      "must be >= 1 (got " + std::to_string(p.hysteresis) + ")");
    }
    if (d.has_balance_batches()) p.balanceBatches = d.balance_batches();
    p.minBatch = d.has_min_batch() ? d.min_batch() : defaultDaspMinBatch(batchSize);
    if (d.has_change_band()) p.changeBand = d.change_band();
    p.fastestAtNominal = d.batch_budget() != v1::DaspParams::CLUSTER_TOTAL;
    p.anytime = d.anytime();
    if (p.minBatch < 1) {
      return badField("dasp.min_batch", "must be >= 1 (got " + std::to_string(p.minBatch) + ")");
    }
    if (!(p.changeBand > 0 && p.changeBand < 1)) {
      return badField("dasp.change_band", "must be in (0, 1) (got " + num(p.changeBand) + ")");
    }
    if (batchSize < 1) {
      return Status::error("batch_size: must be >= 1 (got " + std::to_string(batchSize) + ")");
    }
    if (d.rule() == v1::DaspParams::PAPER) {
      policy = std::make_unique<DaspPolicy>(p);
    } else {
      policy = std::make_unique<DaspAdaptivePolicy>(p, batchSize);
    }
  } else {
    std::string known;
    for (const auto& k : knownStrategies()) known += (known.empty() ? "" : ", ") + k;
    return badField("name", "unknown strategy '" + name + "' (known: " + known + ")");
  }
  return Result<std::unique_ptr<SyncPolicy>>(std::move(policy));
}

}  // namespace dasp
