// SPDX-License-Identifier: MIT
// A property of the whole ExperimentSpec: no value silently turns into its opposite. Every
// numeric field, found from the message's descriptor (so a field added later is covered,
// in nested messages and in the first element of every repeated one), is set in turn to
// 0, -1, ±1e300, 1e-300, NaN and ±inf (an integer field: 0, -1 and its type's extremes).
// Each value is either refused by the spec check with an error naming the field, or it is
// accepted and honoured:
//  - a short run of the virtual-cluster engine on it ends, without a crash, with finite
//    figures, and within kRunLimitS of wall time (a watchdog cancels a run that hangs);
//  - every worker's emulated iteration is a wait the worker keeps (SpeedProfile's
//    restOfIteration: never shorter than asked, up to the longest duration there is);
//  - a run with a target evaluates on its schedule before it ends.
#include "core/common/durations.h"
#include "core/data/dataset.h"
#include "core/sim/sim_engine.h"
#include "core/sim/softmax_model.h"
#include "core/spec/speed_profile.h"
#include "core/spec/spec.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include <QtTest>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace dasp;
namespace gp = google::protobuf;

namespace {

constexpr double kRunLimitS = 20;

// A small engine run that reaches every repeated message of the spec: two workers (the
// first with a speed change, jitter and a link), one suite entry, one fault drill, one host, a
// learning-rate grid and seeds of one value each. Evaluations by time only, as the presets
// write it (every_steps 0).
ExperimentSpec baseSpec() {
  auto spec = parseSpecJson(R"({
    "name": "fields", "engine": "sim", "model": {"name": "logreg"},
    "dataset": {"name": "synthetic", "synthetic": {"classes": 4, "dimension": 8, "train_count": 512, "test_count": 128}},
    "optimizer": {"lr": 0.05, "momentum": 0.5, "decay": {"kind": "STEP", "every_steps": 20}},
    "batch_size": 16,
    "cluster": {
      "workers": [
        {"speed": {"base_iteration_ms": 10, "jitter": 0.1, "changes": [{"at_s": 0.2, "slowdown": 2}]},
         "link": {"latency_ms": 0.2, "mbit": 1000}},
        {"speed": {"base_iteration_ms": 10}}],
      "slowdowns": [1], "link": {"latency_ms": 0.1, "mbit": 8000}},
    "strategy": {"name": "dasp", "barrier_timeout_s": 1},
    "stop": {"target_accuracy": 0.99, "max_seconds": 0.6, "max_updates": 60, "epochs": 20},
    "evaluation": {"every_steps": 0, "every_s": 0.1},
    "recovery": {"mode": "CHECKPOINT", "checkpoint_every_updates": 10},
    "suite": [{"strategy": {"name": "dasp"}, "recovery": {"mode": "CHECKPOINT", "checkpoint_every_updates": 10},
               "workers": 2}],
    "faults": [{"node": "server", "action": "KILL", "at_s": 0.3, "restart_after_s": 0.1}],
    "sim": {"gradients": "POLICY_ONLY", "compute_ms": 5, "restart_ms": 50},
    "launch": {"hosts": [{"name": "here", "ssh_port": 22}]},
    "lr_grid": [0.05], "seeds": [3], "seed": 3
  })",
                            "base");
  if (!spec) qFatal("%s", spec.message().c_str());
  return spec.value();
}

// One numeric field of the spec: where it is (the path the spec check names) and how to set it.
struct NumericField {
  std::string path;    // "cluster.workers[0].speed.jitter"
  std::string parent;  // "cluster.workers[0].speed"
  std::string name;    // "jitter"
  std::vector<const gp::FieldDescriptor*> route;  // message fields down to it
  const gp::FieldDescriptor* field = nullptr;
};

// Every numeric field reachable from `message` (into the first element of repeated
// messages, which the base spec must have: a repeated message left empty is an error, so
// that a new one is not silently skipped).
void collect(const gp::Message& message, const std::string& prefix, std::vector<const gp::FieldDescriptor*> route,
             std::vector<NumericField>& out, std::vector<std::string>& empty) {
  const auto* d = message.GetDescriptor();
  const auto* r = message.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    const std::string at = prefix + f->name() + (f->is_repeated() ? "[0]" : "");
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (f->is_repeated() && r->FieldSize(message, f) == 0) {
        empty.push_back(at);
        continue;
      }
      const auto& sub = f->is_repeated() ? r->GetRepeatedMessage(message, f, 0) : r->GetMessage(message, f);
      auto next = route;
      next.push_back(f);
      collect(sub, at + ".", next, out, empty);
      continue;
    }
    switch (f->cpp_type()) {
      case gp::FieldDescriptor::CPPTYPE_INT32: case gp::FieldDescriptor::CPPTYPE_INT64:
      case gp::FieldDescriptor::CPPTYPE_UINT32: case gp::FieldDescriptor::CPPTYPE_UINT64:
      case gp::FieldDescriptor::CPPTYPE_DOUBLE: case gp::FieldDescriptor::CPPTYPE_FLOAT:
        break;
      default:
        continue;
    }
    if (f->is_repeated() && r->FieldSize(message, f) == 0) {
      empty.push_back(at);
      continue;
    }
    const auto dot = prefix.empty() ? std::string() : prefix.substr(0, prefix.size() - 1);
    out.push_back({at, dot, f->name(), route, f});
  }
}

// The message that holds `field` inside `spec`, made mutable along its route.
gp::Message* holder(gp::Message* m, const NumericField& field) {
  for (const auto* f : field.route) {
    const auto* r = m->GetReflection();
    m = f->is_repeated() ? r->MutableRepeatedMessage(m, f, 0) : r->MutableMessage(m, f);
  }
  return m;
}

// The test values of a field's type, as text for the report and as a setter.
struct TestValue {
  std::string text;
  double real = 0;
  std::int64_t signedInt = 0;
  std::uint64_t unsignedInt = 0;
};

std::vector<TestValue> valuesFor(const gp::FieldDescriptor* f) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (f->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_DOUBLE: case gp::FieldDescriptor::CPPTYPE_FLOAT: {
      std::vector<TestValue> out;
      for (double v : {0.0, -1.0, 1e300, -1e300, 1e-300, std::nan(""), inf, -inf}) {
        out.push_back({QString::number(v).toStdString(), v, 0, 0});
      }
      return out;
    }
    case gp::FieldDescriptor::CPPTYPE_INT32:
      return {{"0", 0, 0, 0}, {"-1", 0, -1, 0}, {"INT32_MAX", 0, std::numeric_limits<std::int32_t>::max(), 0},
              {"INT32_MIN", 0, std::numeric_limits<std::int32_t>::min(), 0}};
    case gp::FieldDescriptor::CPPTYPE_INT64:
      return {{"0", 0, 0, 0}, {"-1", 0, -1, 0}, {"INT64_MAX", 0, std::numeric_limits<std::int64_t>::max(), 0},
              {"INT64_MIN", 0, std::numeric_limits<std::int64_t>::min(), 0}};
    case gp::FieldDescriptor::CPPTYPE_UINT32:
      return {{"0", 0, 0, 0}, {"UINT32_MAX", 0, 0, std::numeric_limits<std::uint32_t>::max()}};
    default:
      return {{"0", 0, 0, 0}, {"UINT64_MAX", 0, 0, std::numeric_limits<std::uint64_t>::max()}};
  }
}

void set(gp::Message* m, const gp::FieldDescriptor* f, const TestValue& v) {
  const auto* r = m->GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case gp::FieldDescriptor::CPPTYPE_DOUBLE:
      rep ? r->SetRepeatedDouble(m, f, 0, v.real) : r->SetDouble(m, f, v.real);
      break;
    case gp::FieldDescriptor::CPPTYPE_FLOAT:
      rep ? r->SetRepeatedFloat(m, f, 0, static_cast<float>(v.real)) : r->SetFloat(m, f, static_cast<float>(v.real));
      break;
    case gp::FieldDescriptor::CPPTYPE_INT32:
      rep ? r->SetRepeatedInt32(m, f, 0, static_cast<std::int32_t>(v.signedInt))
          : r->SetInt32(m, f, static_cast<std::int32_t>(v.signedInt));
      break;
    case gp::FieldDescriptor::CPPTYPE_INT64:
      rep ? r->SetRepeatedInt64(m, f, 0, v.signedInt) : r->SetInt64(m, f, v.signedInt);
      break;
    case gp::FieldDescriptor::CPPTYPE_UINT32:
      rep ? r->SetRepeatedUInt32(m, f, 0, static_cast<std::uint32_t>(v.unsignedInt))
          : r->SetUInt32(m, f, static_cast<std::uint32_t>(v.unsignedInt));
      break;
    default:
      rep ? r->SetRepeatedUInt64(m, f, 0, v.unsignedInt) : r->SetUInt64(m, f, v.unsignedInt);
      break;
  }
}

// A refusal names the field: its whole path, or (a check of several fields of one
// message) the message's path and the field's name.
bool namesField(const std::string& message, const NumericField& f) {
  if (message.find(f.path) != std::string::npos) return true;
  return !f.parent.empty() && message.find(f.parent) != std::string::npos && message.find(f.name) != std::string::npos;
}

// Sets `cancel` once `limitS` of wall time have passed, unless stopped first.
class Watchdog {
 public:
  explicit Watchdog(std::atomic<bool>& cancel, double limitS)
      : m_thread([this, &cancel, limitS] {
          std::unique_lock<std::mutex> lock(m_mu);
          if (!m_cv.wait_for(lock, durationFromSeconds(limitS), [this] { return m_done; })) cancel = true;
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(m_mu);
      m_done = true;
    }
    m_cv.notify_all();
    m_thread.join();
  }

 private:
  std::mutex m_mu;
  std::condition_variable m_cv;
  bool m_done = false;
  std::thread m_thread;
};

// One engine run of a planned run, on its synthetic data: "" when it ended and honoured
// its schedule, else what went wrong.
std::string runEngine(const ExperimentSpec& spec) {
  SyntheticOptions o;
  o.classes = spec.dataset().synthetic().classes();
  o.dimension = spec.dataset().synthetic().dimension();
  o.trainCount = spec.dataset().synthetic().train_count();
  o.testCount = spec.dataset().synthetic().test_count();
  o.separation = spec.dataset().synthetic().separation();
  const TrainTest data = makeSynthetic(o, spec.seed());
  auto evaluator = SoftmaxEvaluator::create(data.test, 0);
  if (!evaluator) return "the evaluator: " + evaluator.message();
  SimCompute compute;
  compute.initialParameters = softmaxInitialParameters(data.train, spec.seed());
  compute.evaluator = evaluator.value().get();
  compute.trainCount = data.train.count;
  compute.makeSource = [&data, &spec](int rank, int n) -> Result<std::unique_ptr<GradientSource>> {
    auto s = SoftmaxGradientSource::create(spec, data.train, rank, n);
    if (!s) return s.status();
    return std::unique_ptr<GradientSource>(std::move(s).value());
  };
  std::atomic<bool> cancel{false};
  std::vector<double> evaluatedAt;
  SimOptions options;
  options.cancel = &cancel;
  options.onEvaluation = [&](const EvaluationRow& e) { evaluatedAt.push_back(e.tS); };
  Result<RunSummary> r = Status::error("not run");
  {
    Watchdog watchdog(cancel, kRunLimitS);
    r = runSimulation(spec, compute, options);
  }
  if (cancel) return "the engine run was still going after " + std::to_string(kRunLimitS) + " s of wall time";
  if (!r) return "the engine run failed: " + r.message();
  const auto& s = r.value();
  for (double v : {s.seconds, s.meanWaitS, s.meanStaleness, s.finalAccuracy}) {
    if (!std::isfinite(v)) return "a figure of the run's summary is not finite";
  }
  // A run with a target evaluates its new versions on its schedule (the final evaluation
  // aside), when it lasts longer than the period or the step interval.
  const auto& eval = spec.evaluation();
  const bool byTime = eval.every_s() > 0 && s.seconds / 2 > eval.every_s();
  const bool bySteps = eval.every_steps() > 0 && s.updates / 2 > eval.every_steps();
  if (spec.stop().target_accuracy() > 0 && s.updates > 0 && (byTime || bySteps) && evaluatedAt.size() < 2) {
    return "no evaluation on the schedule before the end: a target could never be seen";
  }
  return {};
}

// Every worker's emulated iteration is a wait the worker keeps: never shorter than the
// spec asks, up to the longest duration there is.
std::string checkIterationWaits(const ExperimentSpec& spec) {
  const double computeS = 0.001;
  for (const auto& node : expandWorkers(spec)) {
    SpeedProfile profile(node, spec.seed());
    for (double t : {0.0, 1.0}) {
      profile.beginIteration();
      const double target = profile.targetSeconds(computeS, t, 0, 1.0);
      const auto wait = SpeedProfile::restOfIteration(target, computeS);
      const double asked = std::min(target - computeS, kMaxDurationS);
      const double got = std::chrono::duration<double>(wait).count();
      if (got < 0 || (asked > 0 && got < asked - 1e-9)) {  // a nanosecond of rounding
        return node.name() + "'s iteration of " + QString::number(target).toStdString() + " s would wait " + QString::number(got).toStdString() + " s";
      }
    }
  }
  return {};
}

}  // namespace

class TestSpecFields : public QObject {
  Q_OBJECT

 private slots:
  void baseSpecRunsAndReachesEveryRepeatedField();
  void everyNumericValueIsRefusedOrHonoured();
};

void TestSpecFields::baseSpecRunsAndReachesEveryRepeatedField() {
  const auto spec = baseSpec();
  std::vector<NumericField> fields;
  std::vector<std::string> empty;
  collect(spec, "", {}, fields, empty);
  for (const auto& e : empty) QFAIL(("give the base spec an element of " + e).c_str());
  QVERIFY(fields.size() > 80);
  auto planned = planRuns(spec);
  QVERIFY2(planned.isOk(), planned.message().c_str());
  for (const auto& run : planned.value()) {
    const auto why = runEngine(run.spec);
    QVERIFY2(why.empty(), why.c_str());
  }
}

void TestSpecFields::everyNumericValueIsRefusedOrHonoured() {
  const auto base = baseSpec();
  std::vector<NumericField> fields;
  std::vector<std::string> empty;
  collect(base, "", {}, fields, empty);
  int refused = 0, honoured = 0;
  std::vector<std::string> failures;
  for (const auto& field : fields) {
    for (const auto& value : valuesFor(field.field)) {
      ExperimentSpec spec = base;
      set(holder(&spec, field), field.field, value);
      const std::string what = field.path + " = " + value.text + ": ";
      auto planned = planRuns(spec);
      if (!planned) {
        ++refused;
        if (!namesField(planned.message(), field)) failures.push_back(what + "refused without naming it: " + planned.message());
        continue;
      }
      ++honoured;
      for (const auto& run : planned.value()) {
        auto why = checkIterationWaits(run.spec);
        if (why.empty()) why = runEngine(run.spec);
        if (!why.empty()) failures.push_back(what + why);
      }
    }
  }
  qInfo("%zu numeric fields: %d values refused with the field named, %d accepted and honoured", fields.size(), refused,
        honoured);
  for (const auto& f : failures) qWarning("%s", f.c_str());
  QVERIFY2(failures.empty(), (std::to_string(failures.size()) + " values neither refused nor honoured (listed above)").c_str());
}

QTEST_APPLESS_MAIN(TestSpecFields)
#include "tst_spec_fields.moc"
