// SPDX-License-Identifier: MIT
// A cluster profile as one JSON document and back: what `dasp profile --json` prints and
// what a run stores with itself (kProfileSummaryKey).
#include "core/results/cluster_profile.h"

#include "core/common/json_text.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include <sstream>

namespace dasp {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value* field(const Struct& s, const char* key) {
  const auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}
double number(const Struct& s, const char* key) {
  const Value* v = field(s, key);
  return v != nullptr && v->kind_case() == Value::kNumberValue ? v->number_value() : 0.0;
}
std::int64_t count(const Struct& s, const char* key) { return static_cast<std::int64_t>(number(s, key)); }
const Struct& object(const Struct& s, const char* key) {
  const Value* v = field(s, key);
  return v != nullptr && v->kind_case() == Value::kStructValue ? v->struct_value() : Struct::default_instance();
}
const google::protobuf::RepeatedPtrField<Value>& list(const Struct& s, const char* key) {
  static const google::protobuf::ListValue kEmpty;
  const Value* v = field(s, key);
  return (v != nullptr && v->kind_case() == Value::kListValue ? v->list_value() : kEmpty).values();
}

}  // namespace

std::string profileJson(const ClusterProfile& profile) {
  std::ostringstream o;
  o << "{\"run_id\":" << profile.runId << ",\"workers\":[";
  for (std::size_t w = 0; w < profile.workers.size(); ++w) {
    const NodeProfile& n = profile.workers[w];
    o << (w ? "," : "") << "{\"name\":" << jsonString(n.name) << ",\"iterations\":" << n.iterations
      << ",\"pull_s\":" << jsonNumber(n.pullS) << ",\"push_s\":" << jsonNumber(n.pushS) << ",\"segments\":[";
    for (std::size_t s = 0; s < n.segments.size(); ++s) {
      const SpeedSegment& g = n.segments[s];
      o << (s ? "," : "") << "{\"from_s\":" << jsonNumber(g.fromS) << ",\"to_s\":" << jsonNumber(g.toS)
        << ",\"seconds_per_sample\":" << jsonNumber(g.secondsPerSample) << ",\"iterations\":" << g.iterations << "}";
    }
    o << "]}";
  }
  const ServerLoad& l = profile.server;
  o << "],\"server\":{\"apply_s_per_gradient\":" << jsonNumber(l.applySPerGradient)
    << ",\"serve_s_per_push\":" << jsonNumber(l.serveSPerPush) << ",\"covered_s\":" << jsonNumber(l.coveredS)
    << ",\"gradients\":" << l.gradients << ",\"pushes\":" << l.pushes << "}";
  const EvaluationCost& e = profile.evaluation;
  o << ",\"evaluation\":{\"evaluations\":" << e.evaluations << ",\"cpu_s\":" << jsonNumber(e.cpuS)
    << ",\"cpu_s_per_evaluation\":" << jsonNumber(e.cpuSPerEvaluation) << "},\"host_links\":[";
  for (std::size_t h = 0; h < profile.hostLinks.size(); ++h) {
    const HostLinkProfile& link = profile.hostLinks[h];
    o << (h ? "," : "") << "{\"host\":" << jsonString(link.host) << ",\"workers\":[";
    for (std::size_t w = 0; w < link.workers.size(); ++w) o << (w ? "," : "") << jsonString(link.workers[w]);
    o << "],\"queued_s\":[";
    for (std::size_t w = 0; w < link.queuedS.size(); ++w) o << (w ? "," : "") << jsonNumber(link.queuedS[w]);
    o << "]";
    for (const auto& [key, way] : {std::pair{"down", &link.down}, std::pair{"up", &link.up}}) {
      o << ",\"" << key << "\":{\"transfers\":" << way->transfers << ",\"queues\":" << way->queues
        << ",\"first_s\":" << jsonNumber(way->firstS) << ",\"link_s\":" << jsonNumber(way->linkS) << "}";
    }
    o << "}";
  }
  o << "]}";
  return o.str();
}

Result<ClusterProfile> parseProfileJson(const std::string& json) {
  Struct doc;
  if (!google::protobuf::util::JsonStringToMessage(json, &doc).ok() || field(doc, "workers") == nullptr) {
    return Status::error("a cluster profile: not the JSON document of profileJson");
  }
  ClusterProfile p;
  p.runId = count(doc, "run_id");
  for (const Value& w : list(doc, "workers")) {
    const Struct& n = w.struct_value();
    NodeProfile node;
    if (const Value* name = field(n, "name")) node.name = name->string_value();
    node.iterations = count(n, "iterations");
    node.pullS = number(n, "pull_s");
    node.pushS = number(n, "push_s");
    for (const Value& g : list(n, "segments")) {
      const Struct& seg = g.struct_value();
      node.segments.push_back({number(seg, "from_s"), number(seg, "to_s"), number(seg, "seconds_per_sample"),
                               count(seg, "iterations")});
    }
    if (node.segments.empty()) return Status::error("a cluster profile: worker '" + node.name + "' has no segment");
    p.workers.push_back(std::move(node));
  }
  const Struct& server = object(doc, "server");
  p.server.applySPerGradient = number(server, "apply_s_per_gradient");
  p.server.serveSPerPush = number(server, "serve_s_per_push");
  p.server.coveredS = number(server, "covered_s");
  p.server.gradients = count(server, "gradients");
  p.server.pushes = count(server, "pushes");
  const Struct& evaluation = object(doc, "evaluation");
  p.evaluation.evaluations = count(evaluation, "evaluations");
  p.evaluation.cpuS = number(evaluation, "cpu_s");
  p.evaluation.cpuSPerEvaluation = number(evaluation, "cpu_s_per_evaluation");
  for (const Value& h : list(doc, "host_links")) {
    const Struct& l = h.struct_value();
    HostLinkProfile link;
    if (const Value* host = field(l, "host")) link.host = host->string_value();
    for (const Value& w : list(l, "workers")) link.workers.push_back(w.string_value());
    for (const Value& q : list(l, "queued_s")) link.queuedS.push_back(q.number_value());
    link.queuedS.resize(link.workers.size(), 0.0);
    for (const auto& [key, way] : {std::pair{"down", &link.down}, std::pair{"up", &link.up}}) {
      const Struct& w = object(l, key);
      way->transfers = count(w, "transfers");
      way->queues = count(w, "queues");
      way->firstS = number(w, "first_s");
      way->linkS = number(w, "link_s");
    }
    p.hostLinks.push_back(std::move(link));
  }
  return p;
}

}  // namespace dasp
