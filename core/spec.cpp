// SPDX-License-Identifier: MIT
#include "core/spec.h"

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

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

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

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
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
  if (dasp->batch_budget() == v1::DaspParams::BATCH_BUDGET_UNSPECIFIED) {
    dasp->set_batch_budget(v1::DaspParams::FASTEST_AT_NOMINAL);
  }
  if (!strategy->has_barrier_timeout_s()) strategy->set_barrier_timeout_s(10.0);

  auto* stop = spec.mutable_stop();
  if (stop->target_accuracy() <= 0 && stop->max_seconds() <= 0 && stop->epochs() <= 0 &&
      stop->max_updates() <= 0) {
    stop->set_epochs(1);
  }
  if (!stop->has_stop_at_target()) stop->set_stop_at_target(true);
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
  if (!recovery->has_reconnect_timeout_s()) recovery->set_reconnect_timeout_s(120);

  if (!spec.has_seed()) spec.set_seed(1);
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

namespace {

Status checkLink(const v1::LinkSpec& link, const std::string& field) {
  if (link.has_latency_ms() && !(link.latency_ms() >= 0 && std::isfinite(link.latency_ms()))) {
    return Status::error(field + ".latency_ms: must be >= 0 (got " + num(link.latency_ms()) + ")");
  }
  if (link.has_mbit() && !(link.mbit() > 0 && std::isfinite(link.mbit()))) {
    return Status::error(field + ".mbit: must be > 0 (got " + num(link.mbit()) + ")");
  }
  return Status::ok();
}

// The engine and its models; what the simulator does not model is refused by name rather
// than silently ignored.
Status validateEngine(const ExperimentSpec& spec) {
  const auto& engine = spec.engine();
  if (!engine.empty() && engine != "real" && engine != "sim") {
    return Status::error("engine: must be real or sim (got '" + engine + "')");
  }
  if (auto st = checkLink(spec.cluster().link(), "cluster.link"); !st) return st;
  for (int i = 0; i < spec.cluster().workers_size(); ++i) {
    if (auto st = checkLink(spec.cluster().workers(i).link(), "cluster.workers[" + std::to_string(i) + "].link"); !st) {
      return st;
    }
  }
  const auto& sim = spec.sim();
  auto nonNegative = [](double v, bool has, const char* field) -> Status {
    if (has && !(v >= 0 && std::isfinite(v))) {
      return Status::error(std::string("sim.") + field + ": must be >= 0 (got " + num(v) + ")");
    }
    return Status::ok();
  };
  if (auto st = nonNegative(sim.compute_ms(), true, "compute_ms"); !st) return st;
  if (auto st = nonNegative(sim.push_overhead_ms(), sim.has_push_overhead_ms(), "push_overhead_ms"); !st) return st;
  if (auto st = nonNegative(sim.apply_ns_per_param(), sim.has_apply_ns_per_param(), "apply_ns_per_param"); !st) return st;
  if (auto st = nonNegative(sim.restart_ms(), sim.has_restart_ms(), "restart_ms"); !st) return st;
  if (auto st = nonNegative(sim.failover_ms(), sim.has_failover_ms(), "failover_ms"); !st) return st;
  if (engine != "sim") return Status::ok();
  for (int i = 0; i < spec.faults_size(); ++i) {
    if (spec.faults(i).node() == "evaluator") {
      return Status::error("faults[" + std::to_string(i) +
                           "].node: the simulator evaluates in virtual time and has no evaluator process to fault");
    }
  }
  auto stateless = [](const v1::RecoverySpec& r) { return r.mode() == v1::RecoverySpec::STATELESS; };
  bool anyStateless = stateless(spec.recovery());
  for (const auto& e : spec.suite()) anyStateless = anyStateless || stateless(e.recovery());
  if (anyStateless && spec.faults_size() > 0) {
    return Status::error("recovery.mode: STATELESS recovery is not modelled by the simulator (engine sim); "
                         "use engine real, or NONE, CHECKPOINT or CHAIN");
  }
  return Status::ok();
}

// Hosts, placement and launcher (spec.launch): host names unique and known to the
// placement, ssh/Slurm with hosts, values an ssh or srun command line can take.
Status validateLaunch(const ExperimentSpec& spec) {
  const auto& launch = spec.launch();
  const bool local = launch.launcher() == v1::LaunchSpec::LOCAL;
  const char* launcherName = launch.launcher() == v1::LaunchSpec::SSH ? "SSH" : "SLURM";
  auto word = [](const std::string& text) {  // one argument: no blanks, not an option
    return !text.empty() && text.front() != '-' &&
           std::none_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c) || c < 32; });
  };
  std::vector<std::string> names;
  for (int i = 0; i < launch.hosts_size(); ++i) {
    const auto& h = launch.hosts(i);
    const std::string field = "launch.hosts[" + std::to_string(i) + "]";
    if (h.name().empty()) return Status::error(field + ".name: required");
    if (!word(h.name())) {
      return Status::error(field + ".name: '" + h.name() + "' must be one word not starting with '-'");
    }
    for (std::size_t j = 0; j < names.size(); ++j) {
      if (names[j] == h.name()) {
        return Status::error(field + ".name: duplicate host name '" + h.name() + "' (also launch.hosts[" +
                             std::to_string(j) + "])");
      }
    }
    names.push_back(h.name());
    if (!h.address().empty() && !word(h.address())) {
      return Status::error(field + ".address: '" + h.address() + "' must be a host name or an IP address");
    }
    if (h.has_ssh_port() && (h.ssh_port() < 1 || h.ssh_port() > 65535)) {
      return Status::error(field + ".ssh_port: must be in [1, 65535] (got " + std::to_string(h.ssh_port()) + ")");
    }
    if (!h.ssh_user().empty() && !word(h.ssh_user())) {
      return Status::error(field + ".ssh_user: '" + h.ssh_user() + "' is not a user name");
    }
    // ssh_options go before the host on ssh's command line: a bare word there would become
    // the destination (and the rest its remote command). Only an option's own argument may
    // be a bare word (-i KEY, -o Key=Value, -p PORT, ...).
    static const std::string withArgument = "BbcDEeFIiJLlmOoPpQRSWw";
    for (int k = 0; k < h.ssh_options_size(); ++k) {
      const std::string& o = h.ssh_options(k);
      const bool option = o.size() >= 2 && o[0] == '-' && o[1] != '-';
      const std::string& before = k > 0 ? h.ssh_options(k - 1) : std::string();
      const bool argument = before.size() == 2 && before[0] == '-' && withArgument.find(before[1]) != std::string::npos;
      if (!option && !argument) {
        return Status::error(field + ".ssh_options[" + std::to_string(k) + "]: '" + o +
                             "' is neither an ssh option (-x) nor the argument of one (-i KEY, -o Key=Value)");
      }
    }
    if (!h.work_dir().empty() && h.work_dir().front() != '/') {
      return Status::error(field + ".work_dir: must be an absolute path (got '" + h.work_dir() + "')");
    }
    if (h.gpus() < 0) return Status::error(field + ".gpus: must be >= 0 (got " + std::to_string(h.gpus()) + ")");
    if (!h.netns().empty()) {
      if (!local) {
        return Status::error(field + ".netns: network namespaces are for the LOCAL launcher (launch.launcher is " +
                             launcherName + ")");
      }
      if (!word(h.netns()) || h.netns().find('/') != std::string::npos) {
        return Status::error(field + ".netns: '" + h.netns() + "' is not a namespace name");
      }
    }
  }
  if (!local && names.empty()) {
    return Status::error(std::string("launch.hosts: the ") + launcherName +
                         " launcher needs at least one host (name, address) to place nodes on");
  }
  const auto& placement = launch.placement();
  auto known = [&](const std::string& field, const std::string& host) -> Status {
    if (names.empty()) return Status::error(field + ": names host '" + host + "', but launch.hosts is empty");
    if (!contains(names, host)) {
      return Status::error(field + ": unknown host '" + host + "' (hosts: " + joined(names) + ")");
    }
    return Status::ok();
  };
  for (int i = 0; i < placement.servers_size(); ++i) {
    if (auto st = known("launch.placement.servers[" + std::to_string(i) + "]", placement.servers(i)); !st) return st;
  }
  if (!placement.evaluator().empty()) {
    if (auto st = known("launch.placement.evaluator", placement.evaluator()); !st) return st;
  }
  for (int i = 0; i < placement.workers_size(); ++i) {
    if (auto st = known("launch.placement.workers[" + std::to_string(i) + "]", placement.workers(i)); !st) return st;
  }
  const double timeout = launch.connect_timeout_s();
  if (launch.has_connect_timeout_s() && !(timeout > 0 && std::isfinite(timeout))) {
    return Status::error("launch.connect_timeout_s: must be > 0 (got " + num(timeout) + ")");
  }
  const int replicas = spec.recovery().mode() == v1::RecoverySpec::CHAIN
                           ? (spec.recovery().has_replicas() ? spec.recovery().replicas() : 3)
                           : 1;
  if (launch.server_port() < 0 || launch.server_port() + replicas - 1 > 65535) {
    return Status::error("launch.server_port: must be in [0, 65535] for every replica (got " +
                         std::to_string(launch.server_port()) + ")");
  }
  return Status::ok();
}

}  // namespace

Status validateSpec(const ExperimentSpec& spec) {
  auto bad = [](const std::string& field, const std::string& problem) {
    return Status::error(field + ": " + problem);
  };
  const auto& model = spec.model().name();
  if (!model.empty() && !contains(knownModels(), model)) {
    return bad("model.name", "unknown model '" + model + "' (known: " + joined(knownModels()) +
                                 ")");
  }
  if (spec.model().has_hidden() && spec.model().hidden() <= 0) {
    return bad("model.hidden", "must be > 0 (got " + std::to_string(spec.model().hidden()) + ")");
  }
  const auto& data = spec.dataset();
  if (!data.name().empty() && !contains(knownDatasets(), data.name())) {
    return bad("dataset.name", "unknown dataset '" + data.name() + "' (known: " +
                                   joined(knownDatasets()) + ")");
  }
  if ((data.name() == "mnist" || data.name() == "cifar10") && data.path().empty()) {
    return bad("dataset.path", "required for dataset '" + data.name() + "'");
  }
  for (int i = 0; i < spec.lr_grid_size(); ++i) {
    if (!(std::isfinite(spec.lr_grid(i)) && spec.lr_grid(i) > 0)) {
      return bad("lr_grid[" + std::to_string(i) + "]", "must be a finite learning rate > 0 (got " + num(spec.lr_grid(i)) + ")");
    }
  }
  if (data.train_limit() < 0) return bad("dataset.train_limit", "must be >= 0");
  if (data.test_limit() < 0) return bad("dataset.test_limit", "must be >= 0");
  if (data.has_dirichlet_alpha() && !(data.dirichlet_alpha() > 0)) {
    return bad("dataset.dirichlet_alpha",
               "must be > 0 (got " + num(data.dirichlet_alpha()) + ")");
  }
  const auto& syn = data.synthetic();
  if (syn.has_classes() && syn.classes() < 2) return bad("dataset.synthetic.classes", "must be >= 2");
  if (syn.has_dimension() && syn.dimension() < 1) {
    return bad("dataset.synthetic.dimension", "must be >= 1");
  }
  if (syn.has_train_count() && syn.train_count() < 1) {
    return bad("dataset.synthetic.train_count", "must be >= 1");
  }
  if (syn.has_test_count() && syn.test_count() < 1) {
    return bad("dataset.synthetic.test_count", "must be >= 1");
  }

  const auto& opt = spec.optimizer();
  if (opt.has_lr() && !(opt.lr() > 0 && std::isfinite(opt.lr()))) {
    return bad("optimizer.lr", "must be a positive number (got " + num(opt.lr()) + ")");
  }
  if (opt.has_momentum() && !(opt.momentum() >= 0 && opt.momentum() < 1)) {
    return bad("optimizer.momentum", "must be in [0, 1) (got " + num(opt.momentum()) + ")");
  }
  if (!(opt.weight_decay() >= 0)) {
    return bad("optimizer.weight_decay", "must be >= 0 (got " + num(opt.weight_decay()) + ")");
  }
  if (opt.decay().has_every_steps() && opt.decay().every_steps() <= 0) {
    return bad("optimizer.decay.every_steps", "must be > 0");
  }
  if (opt.decay().has_gamma() && !(opt.decay().gamma() > 0 && opt.decay().gamma() <= 1)) {
    return bad("optimizer.decay.gamma", "must be in (0, 1] (got " + num(opt.decay().gamma()) + ")");
  }
  if (spec.has_batch_size() && spec.batch_size() <= 0) {
    return bad("batch_size", "must be > 0 (got " + std::to_string(spec.batch_size()) + ")");
  }

  const auto& cluster = spec.cluster();
  if (cluster.has_count() && cluster.count() <= 0) {
    return bad("cluster.count", "must be > 0 (got " + std::to_string(cluster.count()) + ")");
  }
  for (int i = 0; i < cluster.slowdowns_size(); ++i) {
    if (!(cluster.slowdowns(i) > 0)) {
      return bad("cluster.slowdowns[" + std::to_string(i) + "]",
                 "must be > 0 (got " + num(cluster.slowdowns(i)) + ")");
    }
  }
  if (cluster.base_iteration_ms() < 0) return bad("cluster.base_iteration_ms", "must be >= 0");
  for (int i = 0; i < cluster.workers_size(); ++i) {
    const auto& speed = cluster.workers(i).speed();
    const std::string field = "cluster.workers[" + std::to_string(i) + "].speed";
    if (speed.has_slowdown() && !(speed.slowdown() > 0)) {
      return bad(field + ".slowdown", "must be > 0 (got " + num(speed.slowdown()) + ")");
    }
    if (speed.base_iteration_ms() < 0) return bad(field + ".base_iteration_ms", "must be >= 0");
    if (speed.jitter() < 0 || speed.jitter() > 1) {
      return bad(field + ".jitter", "must be in [0, 1] (got " + num(speed.jitter()) + ")");
    }
    for (int c = 0; c < speed.changes_size(); ++c) {
      if (!(speed.changes(c).slowdown() > 0) || speed.changes(c).at_s() < 0) {
        return bad(field + ".changes[" + std::to_string(c) + "]",
                   "needs at_s >= 0 and slowdown > 0");
      }
    }
  }

  auto checkStrategy = [&](const v1::StrategySpec& s, const std::string& prefix) -> Status {
    if (!s.name().empty() && !contains(knownStrategies(), s.name())) {
      return bad(prefix + "name", "unknown strategy '" + s.name() + "' (known: " +
                                      joined(knownStrategies()) + ")");
    }
    if (s.ssp().has_staleness() && s.ssp().staleness() < 0) {
      return bad(prefix + "ssp.staleness", "must be >= 0");
    }
    const int lo = s.dssp().has_s_low() ? s.dssp().s_low() : 3;
    const int hi = s.dssp().has_s_high() ? s.dssp().s_high() : 15;
    if (lo < 0 || hi < lo) {
      return bad(prefix + "dssp", "needs 0 <= s_low <= s_high (got " + std::to_string(lo) +
                                      ", " + std::to_string(hi) + ")");
    }
    if (s.backup().has_backup_workers() && s.backup().backup_workers() < 0) {
      return bad(prefix + "backup.backup_workers", "must be >= 0");
    }
    const auto& d = s.dasp();
    if (d.has_alpha() && !(d.alpha() > 0 && d.alpha() <= 1)) {
      return bad(prefix + "dasp.alpha", "must be in (0, 1] (got " + num(d.alpha()) + ")");
    }
    if (d.has_delta() && !(d.delta() >= 0)) return bad(prefix + "dasp.delta", "must be >= 0");
    if (d.has_kappa() && !(d.kappa() >= 1)) return bad(prefix + "dasp.kappa", "must be >= 1");
    if (d.has_s_max() && d.s_max() < 0) return bad(prefix + "dasp.s_max", "must be >= 0");
    if (d.has_s_high() && d.s_high() < 0) return bad(prefix + "dasp.s_high", "must be >= 0");
    if (d.has_hysteresis() && d.hysteresis() < 1) {
      return bad(prefix + "dasp.hysteresis", "must be >= 1");
    }
    if (d.has_min_batch() && d.min_batch() < 1) {
      return bad(prefix + "dasp.min_batch", "must be >= 1 (got " + std::to_string(d.min_batch()) + ")");
    }
    if (d.has_change_band() && !(d.change_band() > 0 && d.change_band() < 1)) {
      return bad(prefix + "dasp.change_band", "must be in (0, 1) (got " + num(d.change_band()) + ")");
    }
    if (s.has_barrier_timeout_s() && !(s.barrier_timeout_s() > 0)) {
      return bad(prefix + "barrier_timeout_s", "must be > 0");
    }
    return Status::ok();
  };
  if (auto st = checkStrategy(spec.strategy(), "strategy."); !st) return st;
  for (int i = 0; i < spec.suite_size(); ++i) {
    if (auto st = checkStrategy(spec.suite(i).strategy(),
                                "suite[" + std::to_string(i) + "].strategy.");
        !st) {
      return st;
    }
    if (spec.suite(i).workers() < 0) {
      return bad("suite[" + std::to_string(i) + "].workers", "must be >= 0");
    }
  }

  const auto& stop = spec.stop();
  if (stop.target_accuracy() < 0 || stop.target_accuracy() > 1) {
    return bad("stop.target_accuracy", "must be in [0, 1] (got " + num(stop.target_accuracy()) + ")");
  }
  if (stop.max_seconds() < 0) return bad("stop.max_seconds", "must be >= 0");
  if (stop.epochs() < 0) return bad("stop.epochs", "must be >= 0");
  if (stop.max_updates() < 0) return bad("stop.max_updates", "must be >= 0");
  if (stop.has_stop_at_target() && !stop.stop_at_target() && stop.max_seconds() <= 0 && stop.epochs() <= 0 &&
      stop.max_updates() <= 0) {
    return bad("stop.stop_at_target", "false needs another limit (max_seconds, epochs or max_updates)");
  }
  if (spec.evaluation().has_every_steps() && spec.evaluation().every_steps() <= 0) {
    return bad("evaluation.every_steps", "must be > 0");
  }
  if (spec.evaluation().every_s() < 0) return bad("evaluation.every_s", "must be >= 0");
  if (spec.evaluation().test_subset() < 0) return bad("evaluation.test_subset", "must be >= 0");

  auto checkRecovery = [&](const v1::RecoverySpec& r, const std::string& prefix) -> Status {
    if (r.has_checkpoint_every_updates() && r.checkpoint_every_updates() < 0) {
      return bad(prefix + "checkpoint_every_updates", "must be >= 0");
    }
    if (!(r.checkpoint_every_s() >= 0)) return bad(prefix + "checkpoint_every_s", "must be >= 0");
    if (r.mode() == v1::RecoverySpec::CHECKPOINT && r.has_checkpoint_every_updates() &&
        r.checkpoint_every_updates() == 0 && r.checkpoint_every_s() <= 0) {
      return bad(prefix + "checkpoint_every_updates", "0 needs checkpoint_every_s > 0 (otherwise nothing is saved)");
    }
    if (r.has_checkpoint_keep() && r.checkpoint_keep() < 1) return bad(prefix + "checkpoint_keep", "must be >= 1");
    if (r.has_replicas() && (r.replicas() < 2 || r.replicas() > 16)) {
      return bad(prefix + "replicas", "must be in [2, 16] (got " + std::to_string(r.replicas()) + ")");
    }
    if (r.has_forward_every() && r.forward_every() < 1) return bad(prefix + "forward_every", "must be >= 1");
    if (r.has_backlog_max_gradients() && r.backlog_max_gradients() < 1) {
      return bad(prefix + "backlog_max_gradients", "must be >= 1");
    }
    if (r.has_backlog_max_mb() && !(r.backlog_max_mb() > 0)) return bad(prefix + "backlog_max_mb", "must be > 0");
    if (r.has_backlog_lr_scale() && !(r.backlog_lr_scale() > 0 && r.backlog_lr_scale() <= 1)) {
      return bad(prefix + "backlog_lr_scale", "must be in (0, 1] (got " + num(r.backlog_lr_scale()) + ")");
    }
    if (r.has_backlog_lr_threshold() && r.backlog_lr_threshold() < 0) {
      return bad(prefix + "backlog_lr_threshold", "must be >= 0");
    }
    if (r.has_reconnect_timeout_s() && !(r.reconnect_timeout_s() > 0)) {
      return bad(prefix + "reconnect_timeout_s", "must be > 0");
    }
    return Status::ok();
  };
  if (auto st = checkRecovery(spec.recovery(), "recovery."); !st) return st;
  for (int i = 0; i < spec.suite_size(); ++i) {
    if (auto st = checkRecovery(spec.suite(i).recovery(), "suite[" + std::to_string(i) + "].recovery."); !st) return st;
  }
  // Fault drills name nodes of this run: server (the head), server-N (chain replicas),
  // evaluator, or a worker.
  std::vector<std::string> nodes{"server", "evaluator"};
  if (spec.recovery().mode() == v1::RecoverySpec::CHAIN) {
    const int replicas = spec.recovery().has_replicas() ? spec.recovery().replicas() : 3;
    for (int r = 0; r < replicas; ++r) nodes.push_back("server-" + std::to_string(r));
  }
  for (const auto& w : expandWorkers(spec)) nodes.push_back(w.name());
  for (int i = 0; i < spec.faults_size(); ++i) {
    const auto& f = spec.faults(i);
    const std::string field = "faults[" + std::to_string(i) + "]";
    if (!contains(nodes, f.node())) {
      return bad(field + ".node", "no node '" + f.node() + "' in this run (nodes: " + joined(nodes) + ")");
    }
    if (!(f.at_s() >= 0)) return bad(field + ".at_s", "must be >= 0 (got " + num(f.at_s()) + ")");
    if (f.has_restart_after_s() && !(f.restart_after_s() >= 0)) {
      return bad(field + ".restart_after_s", "must be >= 0 (got " + num(f.restart_after_s()) + ")");
    }
  }

  // Node traffic security: TLS needs both PEM files (whether they can be read is checked
  // where the server and the nodes start: the files may live on other hosts); the bind
  // address is a host or IP literal without a port.
  const auto& security = spec.security();
  if (security.tls() && security.tls_cert().empty()) {
    return bad("security.tls_cert", "required when security.tls is true (PEM certificate; tools/make-lab-cert.sh "
                                    "makes one)");
  }
  if (security.tls() && security.tls_key().empty()) {
    return bad("security.tls_key", "required when security.tls is true (PEM private key of security.tls_cert)");
  }
  if (!security.bind().empty()) {
    const auto& bind = security.bind();
    static const std::regex hostPattern(R"(^[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?$)");
    // IPv6 literals have two colons at least, so "10.0.0.1:5000" (a port) is refused.
    static const std::regex ipv6Pattern(R"(^[0-9A-Fa-f.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*$)");
    if (!std::regex_match(bind, hostPattern) && !std::regex_match(bind, ipv6Pattern)) {
      return bad("security.bind", "must be a host name or an IP address without a port (got '" + bind +
                                      "'; 0.0.0.0 or :: for all interfaces)");
    }
  }

  if (auto st = validateEngine(spec); !st) return st;
  if (auto st = validateLaunch(spec); !st) return st;

  const auto& device = spec.device();
  static const std::regex devicePattern(R"(^(auto|cpu|cuda(:\d+)?)$)");
  if (!device.empty() && !std::regex_match(device, devicePattern)) {
    return bad("device", "must be auto, cpu or cuda:N (got '" + device + "')");
  }
  if (spec.has_threads() && spec.threads() < 1) {
    return bad("threads", "must be >= 1 (got " + std::to_string(spec.threads()) + ")");
  }
  return Status::ok();
}

Status applyOverride(ExperimentSpec& spec, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::error("--set '" + assignment + "': expected path.to.field=value");
  }
  const std::string path = trim(assignment.substr(0, eq));
  const std::string value = trim(assignment.substr(eq + 1));
  pb::Message* message = &spec;
  std::string walked;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string name = path.substr(start, dot == std::string::npos ? dot : dot - start);
    walked += (walked.empty() ? "" : ".") + name;
    const auto* field = message->GetDescriptor()->FindFieldByName(name);
    if (field == nullptr) {
      return Status::error("--set " + path + ": no field '" + walked + "' in the spec");
    }
    const auto* reflection = message->GetReflection();
    if (dot != std::string::npos) {
      if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
        return Status::error("--set " + path + ": '" + walked + "' is not a message");
      }
      message = reflection->MutableMessage(message, field);
      start = dot + 1;
      continue;
    }
    // Leaf: parse the value (comma-separated for repeated fields).
    std::vector<std::string> items;
    if (field->is_repeated()) {
      reflection->ClearField(message, field);
      std::stringstream ss(value);
      std::string item;
      while (std::getline(ss, item, ',')) {
        if (!trim(item).empty()) items.push_back(trim(item));
      }
    } else {
      items.push_back(value);
    }
    for (const auto& item : items) {
      auto badValue = [&](const std::string& what) {
        return Status::error("--set " + path + ": '" + item + "' is not " + what);
      };
      try {
        std::size_t used = 0;
        switch (field->cpp_type()) {
          case pb::FieldDescriptor::CPPTYPE_INT32: {
            const int v = std::stoi(item, &used);
            if (used != item.size()) return badValue("an integer");
            field->is_repeated() ? reflection->AddInt32(message, field, v)
                                 : reflection->SetInt32(message, field, v);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_INT64: {
            const long long v = std::stoll(item, &used);
            if (used != item.size()) return badValue("an integer");
            field->is_repeated() ? reflection->AddInt64(message, field, v)
                                 : reflection->SetInt64(message, field, v);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_UINT32: {
            const unsigned long v = std::stoul(item, &used);
            if (used != item.size() || item[0] == '-') return badValue("an unsigned integer");
            field->is_repeated()
                ? reflection->AddUInt32(message, field, static_cast<std::uint32_t>(v))
                : reflection->SetUInt32(message, field, static_cast<std::uint32_t>(v));
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_UINT64: {
            const unsigned long long v = std::stoull(item, &used);
            if (used != item.size() || item[0] == '-') return badValue("an unsigned integer");
            field->is_repeated() ? reflection->AddUInt64(message, field, v)
                                 : reflection->SetUInt64(message, field, v);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_DOUBLE:
          case pb::FieldDescriptor::CPPTYPE_FLOAT: {
            const double v = std::stod(item, &used);
            if (used != item.size()) return badValue("a number");
            if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
              field->is_repeated() ? reflection->AddDouble(message, field, v)
                                   : reflection->SetDouble(message, field, v);
            } else {
              field->is_repeated()
                  ? reflection->AddFloat(message, field, static_cast<float>(v))
                  : reflection->SetFloat(message, field, static_cast<float>(v));
            }
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_BOOL: {
            const auto l = lower(item);
            bool v = false;
            if (l == "true" || l == "1" || l == "yes" || l == "on") {
              v = true;
            } else if (!(l == "false" || l == "0" || l == "no" || l == "off")) {
              return badValue("true or false");
            }
            field->is_repeated() ? reflection->AddBool(message, field, v)
                                 : reflection->SetBool(message, field, v);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_STRING:
            field->is_repeated() ? reflection->AddString(message, field, item)
                                 : reflection->SetString(message, field, item);
            break;
          case pb::FieldDescriptor::CPPTYPE_ENUM: {
            const pb::EnumValueDescriptor* ev = nullptr;
            std::string names;
            for (int i = 0; i < field->enum_type()->value_count(); ++i) {
              const auto* candidate = field->enum_type()->value(i);
              names += (names.empty() ? "" : ", ") + candidate->name();
              if (lower(candidate->name()) == lower(item)) ev = candidate;
            }
            if (ev == nullptr) return badValue("one of " + names);
            field->is_repeated() ? reflection->AddEnum(message, field, ev)
                                 : reflection->SetEnum(message, field, ev);
            break;
          }
          case pb::FieldDescriptor::CPPTYPE_MESSAGE:
            return Status::error("--set " + path + ": '" + walked +
                                 "' is a message; set one of its fields");
        }
      } catch (const std::exception&) {
        return badValue("a valid value for this field");
      }
    }
    return Status::ok();
  }
}

double learningRateAt(const v1::OptimizerSpec& optimizer, std::int64_t step) {
  const double lr = optimizer.lr();
  const auto& decay = optimizer.decay();
  const double every = static_cast<double>(decay.every_steps() > 0 ? decay.every_steps() : 1000);
  switch (decay.kind()) {
    case v1::LrDecay::STEP:
      return lr * std::pow(decay.gamma(), std::floor(static_cast<double>(step) / every));
    case v1::LrDecay::EXPONENTIAL:
      return lr * std::pow(decay.gamma(), static_cast<double>(step) / every);
    default:
      return lr;
  }
}

namespace {
std::vector<std::string> splitCommaList(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    if (!trim(item).empty()) out.push_back(trim(item));
  }
  return out;
}
}  // namespace

int defaultDaspMinBatch(int batchSize) { return std::max(1, batchSize / 16); }

std::string strategyLabel(const v1::StrategySpec& strategy) {
  const std::string& name = strategy.name();
  if (name == "ssp") return name + "(" + std::to_string(strategy.ssp().staleness()) + ")";
  if (name == "dssp") {
    return name + "(" + std::to_string(strategy.dssp().s_low()) + "," + std::to_string(strategy.dssp().s_high()) + ")";
  }
  if (name == "backup") return name + "(" + std::to_string(strategy.backup().backup_workers()) + ")";
  if (name == "dasp") {
    const auto& d = strategy.dasp();
    if (d.rule() == v1::DaspParams::PAPER) return "dasp-r";
    if (d.has_balance_batches() && !d.balance_batches()) return "dasp-eq";
    if (d.batch_budget() == v1::DaspParams::CLUSTER_TOTAL) return "dasp-ct";
  }
  return name;
}

Result<std::vector<PlannedRun>> planRuns(const ExperimentSpec& base, const std::vector<std::string>& grids) {
  std::vector<std::pair<ExperimentSpec, std::string>> gridSpecs{{base, ""}};
  for (const auto& g : grids) {
    const auto eq = g.find('=');
    if (eq == std::string::npos) return Status::error("--grid " + g + ": expected path=v1,v2,...");
    const auto path = g.substr(0, eq);
    const auto values = splitCommaList(g.substr(eq + 1));
    if (values.empty()) return Status::error("--grid " + g + ": no values");
    std::vector<std::pair<ExperimentSpec, std::string>> next;
    for (const auto& [spec, label] : gridSpecs) {
      for (const auto& v : values) {
        ExperimentSpec s = spec;
        if (auto st = applyOverride(s, path + "=" + v); !st) return Status::error("--grid: " + st.message());
        next.emplace_back(s, label + (label.empty() ? "" : " ") + path + "=" + v);
      }
    }
    gridSpecs = std::move(next);
  }
  std::vector<PlannedRun> out;
  for (const auto& [spec, gridLabel] : gridSpecs) {
    std::vector<v1::SuiteEntry> entries(spec.suite().begin(), spec.suite().end());
    if (entries.empty()) entries.emplace_back();
    std::vector<std::uint64_t> seeds(spec.seeds().begin(), spec.seeds().end());
    if (seeds.empty()) seeds.push_back(spec.has_seed() ? spec.seed() : withDefaults(spec).seed());
    // Fair tuning: every entry at every learning rate of the grid (the label stays the
    // strategy's; tables pick each strategy's best rate).
    std::vector<std::optional<double>> rates;
    for (double lr : spec.lr_grid()) rates.emplace_back(lr);
    if (rates.empty()) rates.emplace_back();
    for (const auto& entry : entries) {
      for (const auto& rate : rates) {
      for (const auto seed : seeds) {
        ExperimentSpec s = spec;
        s.clear_suite();
        s.clear_seeds();
        s.clear_lr_grid();
        s.set_seed(seed);
        if (rate) s.mutable_optimizer()->set_lr(*rate);
        if (entry.has_strategy()) {
          // The entry's strategy replaces the name and adds its knobs over the base's.
          auto strategy = spec.strategy();
          strategy.MergeFrom(entry.strategy());
          *s.mutable_strategy() = strategy;
        }
        if (entry.has_recovery()) *s.mutable_recovery() = entry.recovery();
        if (entry.workers() > 0) {
          auto* cluster = s.mutable_cluster();
          if (cluster->workers_size() > 0) {
            while (cluster->workers_size() > entry.workers()) cluster->mutable_workers()->RemoveLast();
          } else {
            cluster->set_count(entry.workers());
          }
        }
        if (auto st = validateSpec(s); !st) return st;
        s = withDefaults(s);
        std::string label = strategyLabel(s.strategy());
        if (entry.has_recovery()) label += " " + recoveryName(s.recovery().mode());
        if (entry.workers() > 0) label += " w=" + std::to_string(entry.workers());
        if (!gridLabel.empty()) label += " " + gridLabel;
        out.push_back({s, label});
      }
      }
    }
  }
  return out;
}

std::string recoveryName(v1::RecoverySpec::Mode mode) {
  std::string name = v1::RecoverySpec::Mode_Name(mode);
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

std::vector<v1::NodeSpec> expandWorkers(const ExperimentSpec& spec) {
  std::vector<v1::NodeSpec> out;
  const auto& cluster = spec.cluster();
  if (cluster.workers_size() > 0) {
    out.assign(cluster.workers().begin(), cluster.workers().end());
  } else {
    const int count = cluster.has_count() ? cluster.count() : 1;
    for (int i = 0; i < count; ++i) {
      v1::NodeSpec node;
      auto* speed = node.mutable_speed();
      if (cluster.slowdowns_size() > 0) {
        speed->set_slowdown(cluster.slowdowns(i % cluster.slowdowns_size()));
      }
      speed->set_base_iteration_ms(cluster.base_iteration_ms());
      out.push_back(node);
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].name().empty()) out[i].set_name("worker-" + std::to_string(i));
    if (!out[i].speed().has_slowdown()) out[i].mutable_speed()->set_slowdown(1.0);
  }
  return out;
}

double slowdownAt(const v1::SpeedProfile& speed, double t) {
  double slowdown = speed.has_slowdown() ? speed.slowdown() : 1.0;
  for (const auto& change : speed.changes()) {
    if (t >= change.at_s()) slowdown = change.slowdown();
  }
  return slowdown;
}

v1::LinkSpec effectiveLink(const v1::NodeSpec& node, const ExperimentSpec& spec) {
  v1::LinkSpec link = spec.cluster().link();
  if (node.link().has_latency_ms()) link.set_latency_ms(node.link().latency_ms());
  if (node.link().has_mbit()) link.set_mbit(node.link().mbit());
  return link;
}

}  // namespace dasp
