// SPDX-License-Identifier: MIT
#include "net/server/shard_log.h"

#include "net/client/payload_link.h"
#include "net/client/ps_client.h"
#include "net/transport/payload_options.h"

#include <grpcpp/grpcpp.h>

#include <utility>

namespace dasp::net {

namespace pb = dasp::ps::v1;

namespace {

// The shard was started before shard 0: a moment's race is waited out, a shard that never
// answers is not.
constexpr double kProbeS = 30;
// One batch over the payload socket: sent, carried out and answered.
constexpr double kBatchS = 60;

}  // namespace

// The way the log goes to the shard: write() one batch after another, then finish().
// A status that is not OK ends the log (no further call is made).
class ShardLogSender::Stream {
 public:
  virtual ~Stream() = default;
  virtual grpc::Status write(const pb::ShardLog& batch) = 0;
  virtual grpc::Status finish() = 0;
};

namespace {

// Over the shard's payload socket: each batch is a call whose answer is awaited before the
// next batch goes (steps queued meanwhile go together), so the shard's refusal is known
// at once. Two thread wake-ups per batch, against gRPC's four or more.
class SocketStream final : public ShardLogSender::Stream {
 public:
  SocketStream(const std::string& address, int port, std::string token)
      : m_link(hostOf(address), port), m_token(std::move(token)) {}
  grpc::Status write(const pb::ShardLog& batch) override {
    (void)batch.SerializeToString(&m_bytes);
    return m_link.call(SocketCall::ShardLog, m_token, std::string(), m_bytes.data(), m_bytes.size(), nullptr, 0,
                       kBatchS, m_answer);
  }
  grpc::Status finish() override { return grpc::Status::OK; }  // the connection's end ends the log

 private:
  PayloadLink m_link;
  const std::string m_token;
  std::string m_bytes;
  PayloadLink::Answer m_answer;
};

// Over the FollowShard stream (a run with TLS: its shards have no payload socket).
class GrpcStream final : public ShardLogSender::Stream {
 public:
  GrpcStream(pb::ParameterServer::Stub& stub, const NodeSecurity& security, double deadlineS) {
    setDeadline(m_context, deadlineS);
    attachToken(m_context, security);
    m_writer = stub.FollowShard(&m_context, &m_reply);
  }
  grpc::Status write(const pb::ShardLog& batch) override {
    // The stream is over when a write fails: the shard's status says why.
    return m_writer->Write(batch) ? grpc::Status::OK : m_writer->Finish();
  }
  grpc::Status finish() override {
    m_writer->WritesDone();
    return m_writer->Finish();
  }

 private:
  grpc::ClientContext m_context;
  pb::ShardLogReply m_reply;
  std::unique_ptr<grpc::ClientWriter<pb::ShardLog>> m_writer;
};

}  // namespace

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

void ShardLogSender::enqueue(const pb::ShardStep& step, double t) {
  {
    std::lock_guard<std::mutex> lock(m_mu);
    *m_queued.add_steps() = step;
    m_queued.set_t_s(t);
  }
  m_cv.notify_one();
}

void ShardLogSender::report(const grpc::Status& status) const {
  if (m_onError) {
    m_onError("shard " + std::to_string(m_shard) + " at " + m_address + " stopped following shard 0's decisions (" +
              describe(status) + ")");
  }
}

namespace {

grpc::Status probe(pb::ParameterServer::Stub& stub, const NodeSecurity& security, double timeoutS,
                   pb::JoinReply& reply) {
  grpc::ClientContext context;
  context.set_wait_for_ready(true);
  setDeadline(context, timeoutS);
  attachToken(context, security);
  pb::JoinRequest request;
  request.set_role("probe");
  request.set_name("shard-0");
  return stub.Join(&context, request, &reply);
}

}  // namespace

Result<pb::JoinReply> probeShard(const std::string& address, const NodeSecurity& security, double timeoutS) {
  auto stub = pb::ParameterServer::NewStub(openChannel(address, security, grpc::ChannelArguments()));
  pb::JoinReply reply;
  if (const grpc::Status st = probe(*stub, security, timeoutS, reply); !st.ok()) {
    return Status::error("the shard at " + address + " does not answer (" + describe(st) + ")");
  }
  return reply;
}

// Asks the shard (gRPC's Join, role "probe") whether it has a payload socket: the log goes
// there, else through gRPC.
std::unique_ptr<ShardLogSender::Stream> ShardLogSender::open(pb::ParameterServer::Stub& stub, grpc::Status& status) {
  pb::JoinReply reply;
  status = probe(stub, m_security, kProbeS, reply);
  if (!status.ok()) return nullptr;
  if (reply.payload_port() > 0) return std::make_unique<SocketStream>(m_address, reply.payload_port(), m_security.token);
  return std::make_unique<GrpcStream>(stub, m_security, m_deadlineS);
}

void ShardLogSender::loop() {
  grpc::ChannelArguments args;
  // A batch of a large cluster's steps can pass gRPC's default 4 MB (an update of 65,536
  // gradients names them all): the payload limits, at least 64 MB.
  sizeChannelForPayload(args, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  auto stub = pb::ParameterServer::NewStub(openChannel(m_address, m_security, args));
  grpc::Status status;
  std::unique_ptr<Stream> stream = open(*stub, status);
  if (!stream) report(status);
  bool broken = !stream;
  pb::ShardLog batch;
  std::unique_lock<std::mutex> lock(m_mu);
  while (true) {
    m_cv.wait(lock, [&] { return m_stop || m_queued.steps_size() > 0; });
    if (m_queued.steps_size() == 0) break;  // stopping, and everything is written
    batch.Swap(&m_queued);
    lock.unlock();
    if (!broken) {
      status = stream->write(batch);
      broken = !status.ok();
      if (broken) report(status);
    }
    batch.Clear();
    lock.lock();
  }
  lock.unlock();
  if (broken) return;
  if (status = stream->finish(); !status.ok()) report(status);
}

}  // namespace dasp::net
