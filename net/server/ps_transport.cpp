// SPDX-License-Identifier: MIT
// The parameter server's same-host transports (internal: net/server/ps_server_impl.h):
// the Unix socket it listens on besides TCP, and the shared-memory regions of the workers
// on its host (net/transport/shared_region.h). A spec with cluster.transport TCP gets
// neither. Both live in the run's private directory (options.localDir, else a private
// temporary directory this server makes and removes).
#include "net/server/ps_reactors.h"

#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace dasp::net {

Status ParameterServer::Impl::addLocalPort(grpc::ServerBuilder& builder) {
  if (options.spec.cluster().transport() == v1::ClusterSpec::TCP) return Status::ok();
  localDir = options.localDir;
  if (localDir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/dasp-ps-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      return Status::error(options.name + ": cannot make a private directory for the Unix socket in " + pattern);
    }
    localDir = pattern;
    ownsLocalDir = true;
  }
  const std::string path = localDir + "/" + options.name + ".sock";
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    // A path this long cannot be a socket address: same-host workers use TCP.
    say("no Unix socket: its path " + path + " is longer than " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
        " bytes; workers on this host use TCP");
    return Status::ok();
  }
  ::unlink(path.c_str());  // a socket left by a server of this run that was killed
  unixAddress = "unix:" + path;
  builder.AddListeningPort(unixAddress, grpc::experimental::LocalServerCredentials(UDS));
  return Status::ok();
}

void ParameterServer::Impl::removeLocalFiles() {
  std::lock_guard<std::mutex> lock(mu);
  for (auto& region : regions) {
    if (region) region->unlinkFile();
  }
  if (!unixAddress.empty()) ::unlink(unixAddress.substr(5).c_str());
  if (ownsLocalDir) {
    std::error_code ec;
    std::filesystem::remove_all(localDir, ec);
  }
}

grpc::Status ParameterServer::Impl::offerTransportLocked(const pb::JoinRequest& req, int rank, pb::JoinReply* reply) {
  const std::string& asked = req.transport();
  if (asked.empty() || asked == "tcp" || unixAddress.empty()) return grpc::Status::OK;
  reply->set_unix_address(unixAddress);
  if (asked != "shm") return grpc::Status::OK;
  auto made = SharedRegion::create(localDir, "rank-" + std::to_string(rank) + "-join-" + std::to_string(++regionsMade),
                                   store->size());
  if (!made) return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, options.name + ": " + made.message());
  auto& region = regions[static_cast<std::size_t>(rank)];
  if (region) region->unlinkFile();  // an earlier join's region: in use only by calls in flight
  region = std::move(made).value();
  slotHolds[static_cast<std::size_t>(rank)] = {};
  openDoorbellLocked(rank, region);
  reply->set_shm_path(region->path());
  reply->set_shm_nonce(region->nonce());
  return grpc::Status::OK;
}

std::shared_ptr<SharedRegion> ParameterServer::Impl::regionOf(int rank) {
  std::lock_guard<std::mutex> lock(mu);
  if (rank < 0 || rank >= options.workers) return nullptr;
  return regions[static_cast<std::size_t>(rank)];
}

grpc::Status ParameterServer::Impl::noRegion(int rank) const {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      options.name + ": rank " + std::to_string(rank) +
                          " named its shared-memory region, but it has none from a join to this server");
}

}  // namespace dasp::net
