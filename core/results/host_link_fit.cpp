// SPDX-License-Identifier: MIT
// A host's shared link measured from its workers' transfers (HostLinkProfile): what makes a
// measured prediction hold where two workers behind one NIC pull at the same moment.
#include "core/results/cluster_profile.h"

#include <algorithm>
#include <map>
#include <set>

namespace dasp {
namespace {

struct Transfer {
  double t0 = 0, t1 = 0;
  std::size_t worker = 0;  // its index in HostLinkProfile::workers
};

// The busy periods of one way's transfers (sorted by start): runs of transfers each
// starting before the ends of those before it; each period's transfers by end.
std::vector<std::vector<Transfer>> busyPeriods(const std::vector<Transfer>& ts) {
  std::vector<std::vector<Transfer>> periods;
  double end = -1;
  for (const Transfer& t : ts) {
    if (periods.empty() || t.t0 >= end) {
      periods.emplace_back();
      end = t.t1;
    }
    periods.back().push_back(t);
    end = std::max(end, t.t1);
  }
  for (auto& p : periods) {
    std::sort(p.begin(), p.end(), [](const Transfer& a, const Transfer& b) { return a.t1 < b.t1; });
  }
  return periods;
}

// One way from its transfers: its queues' first transfers and link-time; each worker's waits
// behind the others (n − 1 link-times for the n-th to end) added to `queued` when the way
// is shared, as the mean per transfer of that worker.
HostLinkWay measureWay(std::vector<Transfer> ts, std::vector<double>& queued) {
  HostLinkWay way;
  way.transfers = static_cast<std::int64_t>(ts.size());
  std::sort(ts.begin(), ts.end(), [](const Transfer& a, const Transfer& b) { return a.t0 < b.t0; });
  const auto periods = busyPeriods(ts);
  // A queue's n-th to end took n link-times longer than its first (see the header).
  double first = 0, excess = 0;
  for (const auto& p : periods) {
    if (p.size() < 2) continue;
    ++way.queues;
    const double firstS = p.front().t1 - p.front().t0;
    first += firstS;
    double longer = 0;
    for (std::size_t n = 1; n < p.size(); ++n) longer += (p[n].t1 - p[n].t0 - firstS) / static_cast<double>(n);
    excess += longer / static_cast<double>(p.size() - 1);
  }
  if (way.queues == 0) return way;
  way.firstS = first / static_cast<double>(way.queues);
  way.linkS = excess / static_cast<double>(way.queues);
  if (!way.shared()) return way;
  std::vector<double> waited(queued.size(), 0.0), count(queued.size(), 0.0);
  for (const auto& p : periods) {
    for (std::size_t n = 0; n < p.size(); ++n) {
      waited[p[n].worker] += static_cast<double>(n) * way.linkS;
      count[p[n].worker] += 1;
    }
  }
  for (std::size_t w = 0; w < queued.size(); ++w) {
    if (count[w] > 0) queued[w] += waited[w] / count[w];
  }
  return way;
}

}  // namespace

std::vector<HostLinkProfile> measureHostLinks(const ClusterProfile& profile, const std::vector<NodeRow>& nodes,
                                              const std::vector<StateIntervalRow>& intervals) {
  std::set<std::string> profiled;
  for (const NodeProfile& w : profile.workers) profiled.insert(w.name);
  std::map<std::string, HostLinkProfile> hosts;
  std::map<std::string, std::pair<std::string, std::size_t>> placeOf;  // worker -> (host, index)
  for (const NodeRow& n : nodes) {
    if (n.host.empty() || profiled.count(n.node) == 0) continue;
    HostLinkProfile& h = hosts[n.host];
    h.host = n.host;
    placeOf[n.node] = {n.host, h.workers.size()};
    h.workers.push_back(n.node);
  }
  std::map<std::string, std::pair<std::vector<Transfer>, std::vector<Transfer>>> transfers;  // host -> (pulls, pushes)
  for (const StateIntervalRow& i : intervals) {
    const auto at = placeOf.find(i.node);
    if (at == placeOf.end() || (i.state != "PULL" && i.state != "PUSH") || !(i.t1S > i.t0S)) continue;
    auto& [pulls, pushes] = transfers[at->second.first];
    (i.state == "PULL" ? pulls : pushes).push_back({i.t0S, i.t1S, at->second.second});
  }
  std::vector<HostLinkProfile> out;
  for (auto& [name, link] : hosts) {
    if (link.workers.size() < 2) continue;
    link.queuedS.assign(link.workers.size(), 0.0);
    link.down = measureWay(std::move(transfers[name].first), link.queuedS);
    link.up = measureWay(std::move(transfers[name].second), link.queuedS);
    out.push_back(std::move(link));
  }
  return out;
}

}  // namespace dasp
