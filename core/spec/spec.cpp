// SPDX-License-Identifier: MIT
#include "core/spec/spec.h"
#include "core/spec/spec_text.h"
#include "core/params/gradient_guard.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <regex>
#include <cstring>
#include <sstream>

namespace dasp {
namespace {

namespace pb = google::protobuf;
using namespace spec_text;

// Offset of the first JSON syntax error, or npos when the text is well-formed JSON.
// Protobuf 3.21's parser names the field for type errors but gives no position for
// syntax errors, so we find it ourselves to report a line and column.
class JsonSyntax {
 public:
  explicit JsonSyntax(const std::string& text) : m_s(text) {}
  std::size_t firstError() {
    skipSpace();
    if (!value()) return m_pos;
    skipSpace();
    return m_pos == m_s.size() ? std::string::npos : m_pos;
  }

 private:
  void skipSpace() {
    while (m_pos < m_s.size() && std::isspace(static_cast<unsigned char>(m_s[m_pos]))) ++m_pos;
  }
  bool literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (m_s.compare(m_pos, n, word) != 0) return false;
    m_pos += n;
    return true;
  }
  bool string() {
    if (m_pos >= m_s.size() || m_s[m_pos] != '"') return false;
    for (++m_pos; m_pos < m_s.size(); ++m_pos) {
      if (m_s[m_pos] == '\\') {
        ++m_pos;
      } else if (m_s[m_pos] == '"') {
        ++m_pos;
        return true;
      }
    }
    return false;
  }
  bool number() {
    const std::size_t start = m_pos;
    while (m_pos < m_s.size() && std::strchr("+-0123456789.eE", m_s[m_pos]) != nullptr) ++m_pos;
    return m_pos > start;
  }
  bool value() {
    if (m_pos >= m_s.size()) return false;
    switch (m_s[m_pos]) {
      case '{': return container('}', true);
      case '[': return container(']', false);
      case '"': return string();
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }
  bool container(char close, bool object) {
    ++m_pos;
    skipSpace();
    if (m_pos < m_s.size() && m_s[m_pos] == close) {
      ++m_pos;
      return true;
    }
    while (true) {
      skipSpace();
      if (object) {
        if (!string()) return false;
        skipSpace();
        if (m_pos >= m_s.size() || m_s[m_pos] != ':') return false;
        ++m_pos;
        skipSpace();
      }
      if (!value()) return false;
      skipSpace();
      if (m_pos < m_s.size() && m_s[m_pos] == ',') {
        ++m_pos;
        continue;
      }
      if (m_pos < m_s.size() && m_s[m_pos] == close) {
        ++m_pos;
        return true;
      }
      return false;
    }
  }
  const std::string& m_s;
  std::size_t m_pos = 0;
};

std::string describeParseError(const std::string& message, const std::string& json) {
  const std::string firstLine = message.substr(0, message.find('\n'));
  const std::size_t offset = JsonSyntax(json).firstError();
  if (offset == std::string::npos) return firstLine;  // well-formed: a field/type error
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < json.size(); ++i) {
    if (json[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + firstLine;
}

}  // namespace

const std::vector<std::string>& knownModels() {
  static const std::vector<std::string> names{"logreg", "mlp", "lenet", "ttf-cnn", "resnet8"};
  return names;
}
const std::vector<std::string>& knownDatasets() {
  static const std::vector<std::string> names{"fashion-mnist", "mnist", "cifar10",
                                              "synthetic"};
  return names;
}
const std::vector<std::string>& knownStrategies() {
  static const std::vector<std::string> names{"bsp", "asp", "ssp", "dssp", "backup", "dasp"};
  return names;
}

Result<ExperimentSpec> parseSpecJson(const std::string& json, const std::string& source) {
  ExperimentSpec spec;
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  options.case_insensitive_enum_parsing = true;
  const auto status = pb::util::JsonStringToMessage(json, &spec, options);
  if (!status.ok()) {
    return Status::error(source + ": " + describeParseError(std::string(status.message()), json));
  }
  return spec;
}

Result<ExperimentSpec> loadSpecFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::error(path + ": cannot open (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::error(path + ": read error (" + std::strerror(errno) + ")");
  auto spec = parseSpecJson(text.str(), path);
  if (spec && spec->name().empty()) {
    auto base = path.substr(path.find_last_of('/') + 1);
    if (base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0) {
      base.resize(base.size() - 5);
    }
    spec->set_name(base);
  }
  return spec;
}

std::string specToJson(const ExperimentSpec& spec, bool pretty) {
  pb::util::JsonPrintOptions options;
  options.add_whitespace = pretty;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)pb::util::MessageToJsonString(spec, &out, options);
  return out;
}

ExperimentSpec withDefaults(ExperimentSpec spec) {
  auto* model = spec.mutable_model();
  if (model->name().empty()) model->set_name("mlp");
  if (!model->has_hidden()) model->set_hidden(128);

  auto* data = spec.mutable_dataset();
  if (data->name().empty()) data->set_name("fashion-mnist");
  if (data->path().empty() && data->name() == "fashion-mnist") {
    data->set_path("/usr/share/datasets/fashion-mnist");
  }
  if (!data->has_normalize()) data->set_normalize(true);
  if (data->partition() == v1::DatasetSpec::PARTITION_UNSPECIFIED) {
    data->set_partition(v1::DatasetSpec::IID);
  }
  if (!data->has_dirichlet_alpha()) data->set_dirichlet_alpha(0.5);
  if (data->name() == "synthetic") {
    auto* syn = data->mutable_synthetic();
    if (!syn->has_classes()) syn->set_classes(10);
    if (!syn->has_dimension()) syn->set_dimension(32);
    if (!syn->has_train_count()) syn->set_train_count(4096);
    if (!syn->has_test_count()) syn->set_test_count(1024);
    if (!syn->has_separation()) syn->set_separation(3.0);
  }

  auto* opt = spec.mutable_optimizer();
  if (!opt->has_lr()) opt->set_lr(0.01);
  if (!opt->has_momentum()) opt->set_momentum(0.9);
  if (opt->lr_convention() == v1::OptimizerSpec::LR_CONVENTION_UNSPECIFIED) {
    opt->set_lr_convention(v1::OptimizerSpec::PER_GRADIENT);
  }
  auto* decay = opt->mutable_decay();
  if (decay->kind() != v1::LrDecay::NONE) {
    if (!decay->has_every_steps()) decay->set_every_steps(1000);
    if (!decay->has_gamma()) decay->set_gamma(decay->kind() == v1::LrDecay::STEP ? 0.5 : 0.95);
  }

  if (!spec.has_batch_size()) spec.set_batch_size(64);
  auto* cluster = spec.mutable_cluster();
  if (cluster->workers_size() == 0 && !cluster->has_count()) cluster->set_count(1);

  auto* strategy = spec.mutable_strategy();
  if (strategy->name().empty()) strategy->set_name("bsp");
  if (!strategy->ssp().has_staleness()) strategy->mutable_ssp()->set_staleness(3);
  if (!strategy->dssp().has_s_low()) strategy->mutable_dssp()->set_s_low(3);
  if (!strategy->dssp().has_s_high()) strategy->mutable_dssp()->set_s_high(15);
  if (!strategy->backup().has_backup_workers()) strategy->mutable_backup()->set_backup_workers(1);
  auto* dasp = strategy->mutable_dasp();
  if (!dasp->has_alpha()) dasp->set_alpha(0.2);
  if (!dasp->has_delta()) dasp->set_delta(0.3);
  if (!dasp->has_kappa()) dasp->set_kappa(1.5);
  if (!dasp->has_s_max()) dasp->set_s_max(8);
  if (!dasp->has_s_high()) dasp->set_s_high(15);
  if (!dasp->has_staleness_scaling()) dasp->set_staleness_scaling(true);
  if (!dasp->has_lead_cap()) dasp->set_lead_cap(false);
  if (!dasp->has_hysteresis()) dasp->set_hysteresis(2);
  if (dasp->rule() == v1::DaspParams::RULE_UNSPECIFIED) dasp->set_rule(v1::DaspParams::ADAPTIVE);
  if (!dasp->has_balance_batches()) dasp->set_balance_batches(true);
  if (!dasp->has_min_batch()) dasp->set_min_batch(defaultDaspMinBatch(spec.batch_size()));
  if (!dasp->has_change_band()) dasp->set_change_band(0.5);
  if (!dasp->has_anytime()) dasp->set_anytime(true);
  if (dasp->batch_budget() == v1::DaspParams::BATCH_BUDGET_UNSPECIFIED) {
    dasp->set_batch_budget(v1::DaspParams::FASTEST_AT_NOMINAL);
  }
  if (!strategy->has_barrier_timeout_s()) strategy->set_barrier_timeout_s(10.0);
  *strategy->mutable_gradient_guard() = resolvedGuardSpec(strategy->gradient_guard());

  auto* stop = spec.mutable_stop();
  if (stop->target_accuracy() <= 0 && stop->max_seconds() <= 0 && stop->epochs() <= 0 &&
      stop->max_updates() <= 0) {
    stop->set_epochs(1);
  }
  if (!stop->has_stop_at_target()) stop->set_stop_at_target(true);
  auto* divergence = stop->mutable_divergence();
  if (!divergence->has_loss_factor()) divergence->set_loss_factor(10.0);
  if (!divergence->has_window_s()) divergence->set_window_s(2.0);
  auto* eval = spec.mutable_evaluation();
  if (!eval->has_every_steps()) eval->set_every_steps(200);

  auto* recovery = spec.mutable_recovery();
  if (!recovery->has_checkpoint_every_updates()) recovery->set_checkpoint_every_updates(100);
  if (!recovery->has_checkpoint_keep()) recovery->set_checkpoint_keep(2);
  if (!recovery->has_replicas()) recovery->set_replicas(3);
  if (!recovery->has_forward_every()) recovery->set_forward_every(1);
  if (!recovery->has_backlog_max_gradients()) recovery->set_backlog_max_gradients(1000);
  if (!recovery->has_backlog_max_mb()) recovery->set_backlog_max_mb(1024);
  if (!recovery->has_backlog_lr_scale()) recovery->set_backlog_lr_scale(0.1);
  if (!recovery->has_backlog_lr_threshold()) recovery->set_backlog_lr_threshold(50);
  if (!recovery->has_backlog_clip_gradients()) recovery->set_backlog_clip_gradients(10);
  if (!recovery->has_local_max_steps()) recovery->set_local_max_steps(1000);
  if (!recovery->has_reconnect_timeout_s()) recovery->set_reconnect_timeout_s(120);

  if (!spec.has_seed()) spec.set_seed(1);
  if (!spec.ps().has_shards()) spec.mutable_ps()->set_shards(1);
  if (spec.device().empty()) spec.set_device("auto");
  if (!spec.has_threads()) spec.set_threads(1);
  if (spec.engine().empty()) spec.set_engine("real");
  // The engine's models only mean something to the engine: a real run's stored spec does
  // not claim a link model it never used.
  if (spec.engine() == "sim") {
    auto* sim = spec.mutable_sim();
    if (!sim->has_push_overhead_ms()) sim->set_push_overhead_ms(0.05);
    if (!sim->has_apply_ns_per_param()) sim->set_apply_ns_per_param(1.0);
    if (!sim->has_restart_ms()) sim->set_restart_ms(500);
    if (!sim->has_failover_ms()) sim->set_failover_ms(250);
    auto* link = cluster->mutable_link();
    if (!link->has_latency_ms()) link->set_latency_ms(0.1);
    if (!link->has_mbit()) link->set_mbit(8000);
  }
  return spec;
}

}  // namespace dasp
