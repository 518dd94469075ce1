// SPDX-License-Identifier: MIT
#include "net/transport/payload_options.h"

#include <algorithm>
#include <limits>

namespace dasp::net {
namespace {

// Flow-control window and frame: with HTTP/2's 64 KB defaults a 250 KB push needs several
// window updates (round trips) to get through.
constexpr int kLookaheadBytes = 8 << 20;
constexpr int kMaxFrameBytes = (16 << 20) - 1;

}  // namespace

int payloadMessageLimit(std::int64_t parameters) {
  const std::int64_t bytes = 2 * parameters * 4 + (16 << 20);
  return static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(bytes, 64 << 20),
                                                 std::numeric_limits<int>::max()));
}

void sizeServerForPayload(grpc::ServerBuilder& builder, std::int64_t parameters) {
  builder.AddChannelArgument(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kLookaheadBytes);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, kMaxFrameBytes);
  builder.SetMaxReceiveMessageSize(payloadMessageLimit(parameters));
  builder.SetMaxSendMessageSize(payloadMessageLimit(parameters));
}

void sizeChannelForPayload(grpc::ChannelArguments& args, std::int64_t parameters) {
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, kLookaheadBytes);
  args.SetInt(GRPC_ARG_HTTP2_MAX_FRAME_SIZE, kMaxFrameBytes);
  args.SetMaxReceiveMessageSize(payloadMessageLimit(parameters));
  args.SetMaxSendMessageSize(payloadMessageLimit(parameters));
}

}  // namespace dasp::net
