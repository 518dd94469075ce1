// SPDX-License-Identifier: MIT
#include "core/results/results_table.h"

#include "core/store/run_store.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace dasp {

namespace {

constexpr const char* kReference = "reference";

// A learning rate as written in specs (0.01, 0.0004, 0.03).
std::string rateText(double lr) {
  char b[48];
  std::snprintf(b, sizeof b, "%g", lr);
  return b;
}

bool isReference(const std::string& label) { return label == kReference; }

StrategyResult summarize(const std::string& label, double lr, std::vector<const v1::RunResult*> runs) {
  StrategyResult s;
  s.label = label;
  s.lr = lr;
  s.runs = std::move(runs);
  std::vector<double> ttt, acc, share, stale, cost;
  for (const auto* r : s.runs) {
    if (r->has_time_to_target_s()) ttt.push_back(r->time_to_target_s());
    if (r->status() == toString(RunStatus::Diverged)) ++s.diverged;
    if (r->has_heterogeneity_cost()) cost.push_back(r->heterogeneity_cost());
    acc.push_back(r->final_accuracy());
    share.push_back(r->wait_fraction());
    stale.push_back(r->mean_staleness());
    s.maxStaleness = std::max(s.maxStaleness, r->max_staleness());
    if (r->has_speed_change_dip()) s.maxDip = std::max(s.maxDip.value_or(0.0), r->speed_change_dip());
  }
  s.reached = static_cast<int>(ttt.size());
  s.timeToTarget = meanStd(ttt);
  s.finalAccuracy = meanStd(acc);
  s.waitShare = meanStd(share);
  s.staleness = meanStd(stale);
  s.cost = meanStd(cost);
  return s;
}

// a is better than b: more seeds reached, then a lower mean time, then a higher accuracy.
bool better(const StrategyResult& a, const StrategyResult& b) {
  if (a.reached != b.reached) return a.reached > b.reached;
  if (a.reached > 0 && a.timeToTarget.mean != b.timeToTarget.mean) return a.timeToTarget.mean < b.timeToTarget.mean;
  return a.finalAccuracy.mean > b.finalAccuracy.mean;
}

std::string timeCell(const StrategyResult& s) {
  const std::string n = std::to_string(s.runs.size());
  const std::string diverged = s.diverged > 0 ? ", " + std::to_string(s.diverged) + " diverged" : "";
  if (s.reached == 0 && s.diverged == static_cast<int>(s.runs.size())) return "not reached (diverged)";
  if (s.reached == 0) return "never (0/" + n + diverged + ")";
  std::string text = formatMeanStd(s.timeToTarget, 1);
  if (!s.allReached()) text += " (" + std::to_string(s.reached) + "/" + n + " reached" + diverged + ")";
  return text;
}

double targetOf(const std::vector<v1::RunResult>& runs) {
  for (const auto& r : runs) {
    if (r.target() > 0) return r.target();
  }
  return 0;
}

std::string ratesNote(const std::vector<StrategyResult>& rows) {
  std::vector<double> all;
  for (const auto& r : rows) all.insert(all.end(), r.lrsTried.begin(), r.lrsTried.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::string text;
  for (double lr : all) text += (text.empty() ? "" : ", ") + rateText(lr);
  return text;
}

}  // namespace

std::vector<RunFaults> runFaultsOf(const std::vector<v1::RunResult>& runs) {
  auto opt = [](bool has, auto value) { return has ? std::optional<decltype(value)>(value) : std::nullopt; };
  std::vector<RunFaults> out;
  for (const auto& r : runs) {
    if (r.faults_size() == 0) continue;
    RunFaults rf;
    rf.runId = r.run_id();
    rf.label = r.label();
    rf.recovery = r.recovery();
    rf.workers = r.workers();
    rf.seed = r.seed();
    rf.finalAccuracy = r.final_accuracy();
    if (r.has_time_to_target_s()) rf.timeToTargetS = r.time_to_target_s();
    for (const auto& f : r.faults()) {
      RecoveryMetrics m;
      m.fault.index = f.index();
      m.fault.node = f.node();
      m.fault.action = f.action();
      m.fault.atS = f.at_s();
      m.fault.restartAtS = opt(f.has_restart_at_s(), f.restart_at_s());
      m.fault.versionBefore = f.version_before();
      m.fault.versionAfter = opt(f.has_version_after(), f.version_after());
      m.fault.ackedBefore = opt(f.has_acked_before(), f.acked_before());
      m.fault.gradientsDuringOutage = f.gradients_during_outage();
      m.fault.gradientsDropped = f.gradients_dropped();
      m.fault.gradientsDiscarded = f.gradients_discarded();
      m.fault.cpuS = f.cpu_s();
      m.fault.detail = f.detail();
      m.detectionS = opt(f.has_detection_s(), f.detection_s());
      m.downtimeS = opt(f.has_downtime_s(), f.downtime_s());
      m.updatesLost = opt(f.has_updates_lost(), f.updates_lost());
      m.accuracyBefore = opt(f.has_accuracy_before(), f.accuracy_before());
      m.accuracyLowestAfter = opt(f.has_accuracy_lowest_after(), f.accuracy_lowest_after());
      m.recoverS = opt(f.has_recover_s(), f.recover_s());
      m.accuracyJump = opt(f.has_accuracy_jump(), f.accuracy_jump());
      m.finalAccuracy = f.final_accuracy();
      rf.faults.push_back(std::move(m));
    }
    out.push_back(std::move(rf));
  }
  return out;
}

std::string formatMeanStd(const MeanStd& s, int decimals) {
  if (s.n == 0) return "-";
  return fixedText(s.mean, decimals) + " ± " + fixedText(s.sd, decimals);
}

std::vector<StrategyResult> bestByStrategy(const std::vector<v1::RunResult>& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<double>> rateOrder;
  std::map<std::string, std::map<double, std::vector<const v1::RunResult*>>> groups;
  for (const auto& r : runs) {
    if (!groups.count(r.label())) order.push_back(r.label());
    auto& byRate = groups[r.label()];
    if (!byRate.count(r.lr())) rateOrder[r.label()].push_back(r.lr());
    byRate[r.lr()].push_back(&r);
  }
  std::vector<StrategyResult> out;
  for (const auto& label : order) {
    std::optional<StrategyResult> best;
    for (double lr : rateOrder[label]) {
      auto candidate = summarize(label, lr, groups[label][lr]);
      if (!best || better(candidate, *best)) best = std::move(candidate);
    }
    best->lrsTried = rateOrder[label];
    out.push_back(std::move(*best));
  }
  return out;
}

std::optional<double> referenceMeanOf(const std::vector<StrategyResult>& rows) {
  for (const auto& r : rows) {
    if (isReference(r.label) && r.allReached()) return r.timeToTarget.mean;
  }
  return std::nullopt;
}

void fillHeterogeneityCost(std::vector<v1::RunResult>& runs) {
  const auto ref = referenceMeanOf(bestByStrategy(runs));
  for (auto& r : runs) {
    if (ref && *ref > 0 && r.has_time_to_target_s()) {
      r.set_heterogeneity_cost(r.time_to_target_s() / *ref);
    } else {
      r.clear_heterogeneity_cost();
    }
  }
}

std::string suiteTableMarkdown(const std::vector<v1::RunResult>& runs) {
  const auto rows = bestByStrategy(runs);
  std::optional<double> bsp;
  for (const auto& r : rows) {
    if (r.label.rfind("bsp", 0) == 0 && r.allReached()) {
      bsp = r.timeToTarget.mean;
      break;
    }
  }
  const bool withCost = referenceMeanOf(rows).has_value();
  bool withDip = false;
  for (const auto& r : rows) withDip = withDip || r.maxDip.has_value();
  std::ostringstream os;
  os << "| strategy | lr | runs | time to " << fixedText(targetOf(runs), 2) << " (s) |"
     << (withCost ? " heterogeneity cost |" : "")
     << " speedup vs BSP | final accuracy | wait share | mean staleness | max staleness |"
     << (withDip ? " largest dip after the speed change (points) |" : "") << "\n";
  os << "| --- | --- | --- | --- |" << (withCost ? " --- |" : "") << " --- | --- | --- | --- | --- |"
     << (withDip ? " --- |" : "") << "\n";
  for (const auto& r : rows) {
    std::string speedup = "-";
    if (bsp && r.allReached()) speedup = fixedText(*bsp / r.timeToTarget.mean, 2) + "×";
    os << "| " << r.label << " | " << rateText(r.lr) << " | " << r.runs.size() << " | " << timeCell(r) << " |";
    if (withCost) os << " " << formatMeanStd(r.cost, 2) << " |";
    os << " " << speedup << " | " << formatMeanStd(r.finalAccuracy, 4) << " | " << formatMeanStd(r.waitShare, 2)
       << " | " << formatMeanStd(r.staleness, 2) << " | " << r.maxStaleness << " |";
    if (withDip) os << " " << (r.maxDip ? fixedText(*r.maxDip, 1) : "-") << " |";
    os << "\n";
  }
  std::size_t ratesPerStrategy = 0;
  for (const auto& r : rows) ratesPerStrategy = std::max(ratesPerStrategy, r.lrsTried.size());
  if (ratesPerStrategy > 1) {
    os << "\nEach strategy at its best learning rate of {" << ratesNote(rows)
       << "} (most seeds reaching the target, then the lowest mean time, then the highest accuracy)";
  } else {
    os << "\nEach strategy at the one learning rate of its lr column (no grid tuned here: the spec's optimizer.lr, "
          "or the rate `--lr-from` gave it)";
  }
  os << "; mean ± sample std over seeds; time to target uses the server time at which the evaluated version was "
        "made";
  if (withCost) os << "; heterogeneity cost = time to target ÷ the homogeneous-equivalent reference's mean";
  os << ".\n";
  return os.str();
}

std::string matrixTableMarkdown(const std::vector<MatrixCase>& cases) {
  std::vector<std::string> labels;
  std::vector<std::vector<StrategyResult>> perCase;
  for (const auto& c : cases) {
    perCase.push_back(bestByStrategy(c.runs));
    for (const auto& r : perCase.back()) {
      if (!isReference(r.label) && std::find(labels.begin(), labels.end(), r.label) == labels.end()) {
        labels.push_back(r.label);
      }
    }
  }
  std::ostringstream os;
  os << "| case |";
  for (const auto& l : labels) os << " " << l << " |";
  os << " reference | DASP ≤ best other + std | DASP ÷ BSP | DASP ÷ backup(1) | DASP heterogeneity cost | DASP's "
        "largest dip after a speed change (points) |\n| --- |";
  for (std::size_t i = 0; i < labels.size() + 6; ++i) os << " --- |";
  os << "\n";
  for (std::size_t c = 0; c < cases.size(); ++c) {
    const auto& rows = perCase[c];
    auto find = [&](const std::string& label) -> const StrategyResult* {
      for (const auto& r : rows) {
        if (r.label == label) return &r;
      }
      return nullptr;
    };
    const StrategyResult* fastest = nullptr;
    const StrategyResult* bestOther = nullptr;
    for (const auto& r : rows) {
      if (isReference(r.label) || !r.allReached()) continue;
      if (!fastest || r.timeToTarget.mean < fastest->timeToTarget.mean) fastest = &r;
      if (r.label != "dasp" && (!bestOther || r.timeToTarget.mean < bestOther->timeToTarget.mean)) bestOther = &r;
    }
    os << "| " << cases[c].name << " |";
    for (const auto& l : labels) {
      const auto* r = find(l);
      if (!r) {
        os << " |";
        continue;
      }
      const std::string cell = timeCell(*r) + " @" + rateText(r->lr);
      os << " " << (r == fastest ? "**" + cell + "**" : cell) << " |";
    }
    const auto* ref = find(kReference);
    os << " " << (ref ? timeCell(*ref) : "-") << " |";
    const auto* dasp = find("dasp");
    std::string verdict = "-";
    if (dasp && bestOther) {
      const bool within = dasp->allReached() &&
                          dasp->timeToTarget.mean <= bestOther->timeToTarget.mean + bestOther->timeToTarget.sd;
      verdict = std::string(within ? "yes" : "no") + " (best other: " + bestOther->label + ")";
    }
    auto ratioTo = [&](const char* label) {
      const auto* other = find(label);
      if (!dasp || !other || !dasp->allReached() || !other->allReached()) return std::string("-");
      return fixedText(dasp->timeToTarget.mean / other->timeToTarget.mean, 2);
    };
    os << " " << verdict << " | " << ratioTo("bsp") << " | " << ratioTo("backup(1)") << " | "
       << (dasp ? formatMeanStd(dasp->cost, 2) : "-") << " | "
       << (dasp && dasp->maxDip ? fixedText(*dasp->maxDip, 1) : "-") << " |\n";
  }
  os << "\nTime to target in seconds, mean ± sample std over seeds, each strategy at its best learning rate "
        "(after the @); the fastest of each case in bold; the ratios are of the means. Generated by `dasp tables` "
        "from results/.\n";
  return os.str();
}

std::string diagnosisTableMarkdown(const std::vector<MatrixCase>& cases) {
  std::ostringstream os;
  os << "| case | strategy | lr | updates per s | epochs per s | gradients per update | dropped per 100 gradients | "
        "wait share | mean staleness | max staleness | largest dip after a speed change (points) |\n";
  os << "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& c : cases) {
    for (const auto& r : bestByStrategy(c.runs)) {
      std::vector<double> rate, samples, perUpdate, dropped;
      for (const auto* run : r.runs) {
        if (run->seconds() > 0) {
          rate.push_back(static_cast<double>(run->updates()) / run->seconds());
          samples.push_back(run->epochs() / run->seconds());  // the training samples taken in, as epochs
        }
        if (run->updates() > 0) {
          perUpdate.push_back(static_cast<double>(run->gradients()) / static_cast<double>(run->updates()));
        }
        if (run->gradients() > 0) {
          dropped.push_back(100.0 * static_cast<double>(run->dropped()) / static_cast<double>(run->gradients()));
        }
      }
      os << "| " << c.name << " | " << r.label << " | " << rateText(r.lr) << " | " << formatMeanStd(meanStd(rate), 1)
         << " | " << formatMeanStd(meanStd(samples), 3) << " | " << formatMeanStd(meanStd(perUpdate), 2) << " | " << formatMeanStd(meanStd(dropped), 1) << " | "
         << formatMeanStd(r.waitShare, 2) << " | " << formatMeanStd(r.staleness, 2) << " | " << r.maxStaleness
         << " | " << (r.maxDip ? fixedText(*r.maxDip, 1) : "-") << " |\n";
    }
  }
  os << "\nEach strategy at its best learning rate (as in the matrix table); mean ± sample std over seeds of each "
        "run's counts over its whole length. Generated by `dasp tables` from results/.\n";
  return os.str();
}

std::string shardsTableMarkdown(const std::vector<MatrixCase>& cases) {
  std::ostringstream os;
  os << "| case | strategy | server shards | time to target (s) | updates per s | wait share | final accuracy |\n";
  os << "| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const auto& c : cases) {
    for (const auto& r : bestByStrategy(c.runs)) {
      std::vector<double> rate;
      for (const auto* run : r.runs) {
        if (run->seconds() > 0) rate.push_back(static_cast<double>(run->updates()) / run->seconds());
      }
      const int shards = r.runs.empty() ? 1 : std::max(1, r.runs.front()->shards());
      os << "| " << c.name << " | " << r.label << " | " << shards << " | " << timeCell(r) << " | "
         << formatMeanStd(meanStd(rate), 1) << " | " << formatMeanStd(r.waitShare, 2) << " | "
         << formatMeanStd(r.finalAccuracy, 3) << " |\n";
    }
  }
  os << "\nEach strategy and shard count at its best learning rate; mean ± sample std over seeds. Generated by "
        "`dasp tables` from results/.\n";
  return os.str();
}

namespace {

// The strategies of `real` and `other` (each at its best rate) side by side: the rows of a
// table comparing them, and how many pairs the real runs separate (means further apart
// than the sum of their stds) `other` orders the same way: first the strategy that reached
// the target in more seeds, then the one with the lower mean time (a strategy that
// sometimes never reaches it is the slower one). `within`: the strategies both reach in
// every seed whose other ÷ real time is within [1 - tolerance, 1 + tolerance].
struct EngineComparison {
  std::string rows;
  int separated = 0, agree = 0;
  int bothReached = 0, within = 0;
};

EngineComparison compareWithReal(const std::vector<v1::RunResult>& real, const std::vector<v1::RunResult>& other,
                                 double tolerance) {
  const auto realRows = bestByStrategy(real);
  const auto otherRows = bestByStrategy(other);
  EngineComparison c;
  std::ostringstream os;
  std::vector<std::pair<const StrategyResult*, const StrategyResult*>> pairs;
  for (const auto& r : realRows) {
    const auto o = std::find_if(otherRows.begin(), otherRows.end(), [&](const auto& x) { return x.label == r.label; });
    if (o == otherRows.end()) continue;
    std::string ratio = "-";
    if (r.allReached() && o->allReached()) {
      const double q = o->timeToTarget.mean / r.timeToTarget.mean;
      ratio = fixedText(q, 2);
      ++c.bothReached;
      if (std::abs(q - 1.0) <= tolerance) ++c.within;
    }
    os << "| " << r.label << " | " << timeCell(r) << " | " << timeCell(*o) << " | " << ratio << " |\n";
    pairs.emplace_back(&r, &*o);
  }
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    for (std::size_t j = i + 1; j < pairs.size(); ++j) {
      const auto& [ra, oa] = pairs[i];
      const auto& [rb, ob] = pairs[j];
      if (!ra->allReached() || !rb->allReached()) continue;
      const double gap = ra->timeToTarget.mean - rb->timeToTarget.mean;
      if (std::abs(gap) <= ra->timeToTarget.sd + rb->timeToTarget.sd) continue;
      ++c.separated;
      if (oa->reached + ob->reached > 0 && better(*oa, *ob) == (gap < 0)) ++c.agree;
    }
  }
  c.rows = os.str();
  return c;
}

// Updates per second of each run of `label` in `runs`.
MeanStd updateRate(const std::vector<v1::RunResult>& runs, const std::string& label) {
  std::vector<double> rate;
  for (const auto& r : runs) {
    if (r.label() == label && r.seconds() > 0) rate.push_back(static_cast<double>(r.updates()) / r.seconds());
  }
  return meanStd(rate);
}

}  // namespace

std::string validationTableMarkdown(const std::vector<v1::RunResult>& real, const std::vector<v1::RunResult>& sim) {
  const EngineComparison c = compareWithReal(real, sim, 0.2);
  std::ostringstream os;
  os << "| strategy | real (s) | engine (s) | engine ÷ real |\n| --- | --- | --- | --- |\n" << c.rows;
  os << "\nThe real runs separate " << c.separated << " pairs of strategies (means further apart than the sum of "
     << "their stds); the engine orders " << c.agree << " of them the same way.\n";
  return os.str();
}

std::string predictionTableMarkdown(const std::vector<v1::RunResult>& real, const std::vector<v1::RunResult>& predicted,
                                    const std::vector<v1::RunResult>& measured) {
  const EngineComparison c = compareWithReal(real, predicted, 0.2);
  std::ostringstream os;
  os << "| strategy | real (s) | predicted (s) | predicted ÷ real |\n| --- | --- | --- | --- |\n" << c.rows;
  os << "\nThe real runs separate " << c.separated << " pairs of strategies (means further apart than the sum of "
     << "their stds); the prediction orders " << c.agree << " of them the same way. " << c.within << " of the "
     << c.bothReached << " strategies that reach the target in every seed, real and predicted, are predicted within "
     << "20 %.";
  if (!measured.empty()) {
    const std::string label = measured.front().label();
    const MeanStd measuredRate = updateRate(measured, label), predictedRate = updateRate(predicted, label);
    os << " The measured strategy (" << label << "): " << formatMeanStd(measuredRate, 1)
       << " updates/s in the measured runs, " << formatMeanStd(predictedRate, 1) << " predicted";
    if (measuredRate.n > 0 && predictedRate.n > 0 && measuredRate.mean > 0) {
      os << " (" << fixedText(predictedRate.mean / measuredRate.mean, 2) << "×)";
    }
    os << ".";
  }
  os << "\n";
  return os.str();
}

Result<std::vector<v1::RunResult>> parseResultLines(const std::string& text, const std::string& source) {
  std::vector<v1::RunResult> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    v1::RunResult r;
    const auto status = google::protobuf::util::JsonStringToMessage(line, &r, options);
    if (!status.ok()) {
      return Status::error(source + ":" + std::to_string(number) + ": not a run summary: " +
                           std::string(status.message()));
    }
    out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<v1::SetupTiming>> parseSetupTimingLines(const std::string& text, const std::string& source) {
  std::vector<v1::SetupTiming> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    v1::SetupTiming t;
    const auto status = google::protobuf::util::JsonStringToMessage(line, &t);
    if (!status.ok()) {
      return Status::error(source + ":" + std::to_string(number) + ": not a set-up timing: " +
                           std::string(status.message()));
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string setupTimingTableMarkdown(const std::vector<v1::SetupTiming>& timings) {
  std::ostringstream os;
  os << "| date | commit | machine | set-up and build | tests | tests passed |\n";
  os << "| --- | --- | --- | --- | --- | --- |\n";
  auto minutes = [](double s) {
    const long whole = std::lround(s);
    return std::to_string(whole / 60) + " min " + std::to_string(whole % 60) + " s";
  };
  for (const auto& t : timings) {
    std::string setup = minutes(t.build_s());
    if (t.cold_cache()) setup += ", cold ccache";
    if (t.packages_installed()) setup += ", packages already installed";
    os << "| " << t.date() << " | `" << t.commit() << "` | " << t.machine() << " | " << setup << " | "
       << minutes(t.tests_s()) << " | " << (t.tests() - t.failed()) << " of " << t.tests() << " |\n";
  }
  return os.str();
}

Result<std::string> regenerateBlocks(
    const std::string& text,
    const std::function<Result<std::string>(const std::string& kind, const std::vector<std::string>& args)>& generate) {
  static const std::string kOpen = "<!-- dasp-tables ";
  static const std::string kClose = "<!-- /dasp-tables -->";
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const auto open = text.find(kOpen, pos);
    if (open == std::string::npos) break;
    const auto lineOf = [&](std::size_t at) { return 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'); };
    const auto headEnd = text.find("-->", open);
    if (headEnd == std::string::npos) return Status::error("line " + std::to_string(lineOf(open)) + ": unclosed block marker");
    const auto close = text.find(kClose, headEnd);
    if (close == std::string::npos) {
      return Status::error("line " + std::to_string(lineOf(open)) + ": no " + kClose + " after this block");
    }
    std::istringstream head(text.substr(open + kOpen.size(), headEnd - open - kOpen.size()));
    std::string kind;
    head >> kind;
    std::vector<std::string> args;
    for (std::string a; head >> a;) args.push_back(a);
    auto body = generate(kind, args);
    if (!body) return Status::error("line " + std::to_string(lineOf(open)) + ": " + body.message());
    out += text.substr(pos, headEnd + 3 - pos);
    out += "\n\n" + body.value() + "\n";
    out += kClose;
    pos = close + kClose.size();
  }
  out += text.substr(pos);
  return out;
}

}  // namespace dasp
