// SPDX-License-Identifier: MIT
#include "net/server/shard_log.h"

#include "net/client/ps_client.h"
#include "net/transport/payload_options.h"

#include <grpcpp/grpcpp.h>

#include <utility>

namespace dasp::net {

ShardLogSender::ShardLogSender(std::string address, int shard, NodeSecurity security, double deadlineS,
                               OnError onError)
    : m_address(std::move(address)),
      m_shard(shard),
      m_security(std::move(security)),
      m_deadlineS(deadlineS),
      m_onError(std::move(onError)) {
  m_thread = std::thread([this] { loop(); });
}

ShardLogSender::~ShardLogSender() {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  if (m_thread.joinable()) m_thread.join();
}

void ShardLogSender::enqueue(const dasp::ps::v1::ShardStep& step) {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    *m_queued.add_steps() = step;
  }
  m_cv.notify_one();
}

void ShardLogSender::loop() {
  grpc::ChannelArguments args;
  // A batch of a large cluster's steps can pass gRPC's default 4 MB (an update of 65,536
  // gradients names them all): the payload limits, at least 64 MB.
  sizeChannelForPayload(args, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  auto stub = dasp::ps::v1::ParameterServer::NewStub(openChannel(m_address, m_security, args));
  grpc::ClientContext context;
  context.set_wait_for_ready(true);  // the shard was started first; a moment's race is waited out
  setDeadline(context, m_deadlineS);
  attachToken(context, m_security);
  dasp::ps::v1::ShardLogReply reply;
  auto writer = stub->FollowShard(&context, &reply);
  dasp::ps::v1::ShardLog batch;
  bool broken = false;
  auto report = [&](const grpc::Status& status) {
    if (m_onError) {
      m_onError("shard " + std::to_string(m_shard) + " at " + m_address +
                " stopped following shard 0's decisions (" + describe(status) + ")");
    }
  };
  std::unique_lock<std::mutex> lock(m_mu);
  while (true) {
    m_cv.wait(lock, [&] { return m_stop || m_queued.steps_size() > 0; });
    if (m_queued.steps_size() == 0) break;  // stopping, and everything is written
    batch.Swap(&m_queued);
    lock.unlock();
    if (!broken && !writer->Write(batch)) {
      // The stream is over: the shard's status says why (a step it refused, or it is gone).
      broken = true;
      report(writer->Finish());
    }
    batch.clear_steps();
    lock.lock();
  }
  lock.unlock();
  if (broken) return;
  writer->WritesDone();
  if (const grpc::Status status = writer->Finish(); !status.ok()) report(status);
}

}  // namespace dasp::net
