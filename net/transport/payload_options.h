// SPDX-License-Identifier: MIT
#pragma once
// The gRPC settings that model-sized payloads need, in one place for the parameter server,
// its client and the transfer bench's gRPC echo (which must move bytes under the same
// settings to be the ceiling of the server's own calls).
// Threading: free functions and constants.

#include <grpcpp/server_builder.h>
#include <grpcpp/support/channel_arguments.h>

#include <cstddef>
#include <cstdint>

namespace dasp::net {

// The piece of a chunked push or pull (a few MB: gRPC moves such messages several times
// faster than one message of a whole large model).
constexpr std::size_t kPayloadChunkBytes = 2u << 20;

// gRPC's default 4 MB limit is far below a model's parameters. The largest message is a
// chain replica's catch-up state (the parameters and the momentum): that plus headroom, at
// least 64 MB.
int payloadMessageLimit(std::int64_t parameters);

// A server's message limits, flow-control window and frame size for a model of `parameters`.
void sizeServerForPayload(grpc::ServerBuilder& builder, std::int64_t parameters);

// A channel's message limits, flow-control window and frame size for the same model.
void sizeChannelForPayload(grpc::ChannelArguments& args, std::int64_t parameters);

}  // namespace dasp::net
