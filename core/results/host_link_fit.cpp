// SPDX-License-Identifier: MIT
// A host's shared link fitted from its workers' transfers (HostLinkProfile): what makes a
// measured prediction hold where two workers behind one NIC pull at the same moment.
#include "core/results/cluster_profile.h"

#include <algorithm>
#include <map>
#include <set>

namespace dasp {
namespace {

struct Transfer {
  double t0 = 0, t1 = 0;
  std::string node;
  double concurrency = 1;
};

// Each transfer's concurrency: 1 + the overlap of the others (of other nodes) over its own
// length. `ts` sorted by start; only neighbours within the longest transfer can overlap.
void measureConcurrency(std::vector<Transfer>& ts) {
  double longest = 0;
  for (const Transfer& t : ts) longest = std::max(longest, t.t1 - t.t0);
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const double length = ts[i].t1 - ts[i].t0;
    double overlap = 0;
    auto add = [&](const Transfer& o) {
      if (o.node != ts[i].node) overlap += std::max(0.0, std::min(ts[i].t1, o.t1) - std::max(ts[i].t0, o.t0));
    };
    for (std::size_t j = i + 1; j < ts.size() && ts[j].t0 < ts[i].t1; ++j) add(ts[j]);
    for (std::size_t j = i; j-- > 0 && ts[j].t0 > ts[i].t0 - longest;) add(ts[j]);
    ts[i].concurrency = 1 + overlap / length;
  }
}

}  // namespace

std::vector<HostLinkProfile> measureHostLinks(const ClusterProfile& profile, const std::vector<NodeRow>& nodes,
                                              const std::vector<StateIntervalRow>& intervals) {
  std::set<std::string> profiled;
  for (const NodeProfile& w : profile.workers) profiled.insert(w.name);
  std::map<std::string, HostLinkProfile> hosts;
  std::map<std::string, std::string> hostOf;
  for (const NodeRow& n : nodes) {
    if (n.host.empty() || profiled.count(n.node) == 0) continue;
    hostOf[n.node] = n.host;
    hosts[n.host].host = n.host;
    hosts[n.host].workers.push_back(n.node);
  }
  // host -> (pulls, pushes)
  std::map<std::string, std::pair<std::vector<Transfer>, std::vector<Transfer>>> transfers;
  for (const StateIntervalRow& i : intervals) {
    const auto h = hostOf.find(i.node);
    if (h == hostOf.end() || (i.state != "PULL" && i.state != "PUSH") || !(i.t1S > i.t0S)) continue;
    auto& [pulls, pushes] = transfers[h->second];
    (i.state == "PULL" ? pulls : pushes).push_back({i.t0S, i.t1S, i.node});
  }
  std::vector<HostLinkProfile> out;
  for (auto& [name, link] : hosts) {
    if (link.workers.size() < 2) continue;
    std::vector<Transfer> all;
    for (auto* way : {&transfers[name].first, &transfers[name].second}) {
      std::sort(way->begin(), way->end(), [](const Transfer& a, const Transfer& b) { return a.t0 < b.t0; });
      measureConcurrency(*way);
      all.insert(all.end(), way->begin(), way->end());
    }
    link.transfers = static_cast<std::int64_t>(all.size());
    double sn = 0, sd = 0;
    for (const Transfer& t : all) {
      sn += t.concurrency;
      sd += t.t1 - t.t0;
      if (t.concurrency < 1.1) ++link.alone;
      if (t.concurrency >= 1.5) ++link.together;
    }
    if (link.alone < kMinHostLinkTransfers || link.together < kMinHostLinkTransfers) {
      link.callS = all.empty() ? 0 : sd / static_cast<double>(all.size());  // no fit: the mean
      out.push_back(std::move(link));
      continue;
    }
    const double n = static_cast<double>(all.size()), meanN = sn / n, meanD = sd / n;
    double cov = 0, var = 0;
    for (const Transfer& t : all) {
      cov += (t.concurrency - meanN) * (t.t1 - t.t0 - meanD);
      var += (t.concurrency - meanN) * (t.concurrency - meanN);
    }
    const double slope = var > 0 ? cov / var : 0;
    link.callS = std::max(0.0, meanD - slope * (meanN - 1));
    link.linkS = std::clamp(slope, 0.0, link.callS);  // a transfer alone holds the link at most its own time
    out.push_back(std::move(link));
  }
  return out;
}

}  // namespace dasp
