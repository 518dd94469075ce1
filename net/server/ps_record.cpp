// SPDX-License-Identifier: MIT
// The update record of a server (internal: net/server/ps_server_impl.h): every state it
// holds and every update it applies, for audits and replays (core/params/update_record.h);
// and the version its replies vouch for. Every *Locked function runs with Impl::mu held.
#include "net/server/ps_reactors.h"

#include <algorithm>

namespace dasp::net {

Status ParameterServer::Impl::openRecord() {
  if (options.recordPath.empty()) return Status::ok();
  auto opened = UpdateRecordWriter::open(options.recordPath);
  if (!opened) return Status::error(options.name + ": " + opened.message());
  record = std::move(opened).value();
  recordScratch.assign(static_cast<std::size_t>(store->size()), 0.0f);
  return Status::ok();
}

void ParameterServer::Impl::recordStateLocked(UpdateRecordKind kind) {
  if (!record) return;
  const auto n = static_cast<std::size_t>(store->size());
  auto written = record->write(kind, store->version(), 0, store->parameters(), n, store->momentumBuffer().data(), n);
  if (!written) {
    // An audit that cannot be written must not stop training; it is said once and ends.
    say(written.message() + "; the update record stops here");
    record.reset();
  }
}

void ParameterServer::Impl::recordUpdateLocked(const float* const* gradients, const double* weights, int count,
                                               double lr) {
  if (!record) return;
  // combine() folds the gradients with the same float operations as apply(): applying the
  // recorded gradient with weight 1 replays the update bitwise.
  store->combine(gradients, weights, count, recordScratch.data());
  auto written = record->write(UpdateRecordKind::Update, store->version(), lr, recordScratch.data(),
                               recordScratch.size());
  if (!written) {
    say(written.message() + "; the update record stops here");
    record.reset();
  }
}

std::int64_t ParameterServer::Impl::vouchedVersionLocked() const {
  const std::int64_t v = store->version();
  return forwardsEachUpdate() ? std::min(v, replicatedVersion) : v;
}

}  // namespace dasp::net
