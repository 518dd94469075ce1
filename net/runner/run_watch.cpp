// SPDX-License-Identifier: MIT
#include "net/runner/run_watch.h"
#include "core/common/durations.h"

#include "net/client/ps_client.h"

#include <algorithm>

namespace dasp::net {

using Clock = std::chrono::steady_clock;

void RunClock::observe(double serverT) {
  if (serverT <= 0) return;
  const auto origin = Clock::now() - std::chrono::duration_cast<Clock::duration>(durationFromSeconds(serverT));
  std::lock_guard<std::mutex> lock(m_mu);
  if (!m_anchored || origin < m_origin) m_origin = origin;
  m_anchored = true;
}

double RunClock::now() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return m_anchored ? std::chrono::duration<double>(Clock::now() - m_origin).count() : 0.0;
}

EventWatcher::EventWatcher(const NodeLines& lines, const NodeSecurity& security, RunClock* clock, OnBatch onBatch)
    : m_lines(lines), m_security(security), m_clock(clock), m_onBatch(std::move(onBatch)) {}

EventWatcher::~EventWatcher() { stop(); }

std::int64_t EventWatcher::parameters() const {
  // Written by the pump before the first server listens, and only then read here.
  return m_lines.parameters;
}

void EventWatcher::start(const std::string& headAddress) {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_head = headAddress;
  }
  m_thread = std::thread([this] { loop(); });
}

void EventWatcher::stop() {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_stop = true;
    if (m_context) m_context->TryCancel();
    m_retryCv.notify_all();
  }
  if (m_thread.joinable()) m_thread.join();
}

std::string EventWatcher::head() const {
  std::lock_guard<std::mutex> lock(m_mu);
  return m_head;
}

void EventWatcher::setHead(const std::string& address) {
  std::lock_guard<std::mutex> lock(m_mu);
  m_head = address;
  if (m_context) m_context->TryCancel();
}

void EventWatcher::waitForEvents(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(m_eventMu);
  m_eventCv.wait_for(lock, timeout);
}

void EventWatcher::loop() {
  dasp::ps::v1::EventBatch batch;
  while (true) {
    const std::string address = head();
    PsClient client(address, parameters(), m_security);
    grpc::ClientContext context;
    // The stream lives as long as the run; its deadline only guards against a hung server.
    setDeadline(context, 7 * 24 * 3600.0);
    {
      std::lock_guard<std::mutex> lock(m_mu);
      if (m_stop) break;
      m_context = &context;
    }
    auto reader = client.watch(context);
    while (reader->Read(&batch)) {
      double latest = 0;
      for (const auto& e : batch.events()) latest = std::max(latest, e.t_s());
      if (m_clock != nullptr) m_clock->observe(latest);
      m_onBatch(batch);
      m_eventCv.notify_all();
    }
    (void)reader->Finish();
    m_eventCv.notify_all();
    std::unique_lock<std::mutex> lock(m_mu);
    m_context = nullptr;
    if (m_stop) break;
    // The server went away: try again shortly (it may be restarting, or a replica is
    // being promoted).
    m_retryCv.wait_for(lock, std::chrono::milliseconds(200), [&] { return m_stop; });
    if (m_stop) break;
  }
}

grpc::Status ServerControl::at(const std::string& address, const dasp::ps::v1::ControlRequest& req,
                               dasp::ps::v1::ControlReply& rep, double deadlineS) const {
  PsClient client(address, m_lines.parameters, m_security);
  return client.control(req, rep, deadlineS);
}

}  // namespace dasp::net
