// SPDX-License-Identifier: MIT
#include "net/client/node_support.h"

namespace dasp::net::node_support {

std::vector<std::string> serverList(const WorkerOptions& options) {
  if (!options.servers.empty()) return options.servers;
  return {options.server};
}

bool isOutage(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
         status.error_code() == grpc::StatusCode::CANCELLED;
}

void recoveryLine(const WorkerOptions& o, const RecoveryReport& report) { say(o, formatRecoveryLine(report)); }

RecoveryReport outageReport(const WorkerOptions& o, const std::string& server, const grpc::Status& why,
                            std::int64_t acked) {
  RecoveryReport r;
  r.kind = RecoveryReport::Kind::OutageDetected;
  r.node = o.name;
  r.server = server;
  r.ackedVersion = acked;
  r.status = describe(why);
  return r;
}

}  // namespace dasp::net::node_support
