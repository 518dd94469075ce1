// SPDX-License-Identifier: MIT
#pragma once
// The chunks of the chunked push and pull (PushChunk, PullChunk: field 1 the header
// message, field 2 a piece of the float32 payload) written and read as gRPC ByteBuffers
// without Protobuf in the payload's way. On the wire they are those messages exactly (a
// peer using the generated classes reads and writes the same bytes), but:
// - encodeChunk() sends the payload as a slice over the caller's memory: no copy into a
//   Protobuf field and none into a serialization buffer, only the kernel's;
// - decodeChunk() copies the payload from the received slices straight to where the
//   caller wants it: no Protobuf string between.
// Threading: free functions; a ByteBuffer is used by one thread at a time.

#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <functional>
#include <string>

namespace dasp::net {

// A chunk: `header` (a serialized PushRequest / PullReply; null: none — an empty one is
// still sent, as the first chunk's mark) and `size` bytes at `data`, which must stay
// unchanged until the call that sends the chunk has finished.
grpc::ByteBuffer encodeChunk(const std::string* header, const char* data, std::size_t size);

// The same with the payload as a slice of the caller's (empty: none), whose reference
// keeps the payload's memory alive for as long as gRPC needs it.
grpc::ByteBuffer encodeChunk(const std::string* header, grpc::Slice payload);

// Reads one chunk, in the order of its fields: `onHeader` gets the header's bytes when the
// chunk has one; `target(n)` says where the next `n` payload bytes go (nullptr: refused,
// with `refusal` saying why). Fields the chunk messages do not have are skipped. Returns
// "" or what is wrong with the bytes (a truncated or malformed chunk, a refused payload).
std::string decodeChunk(const grpc::ByteBuffer& chunk, const std::function<void(const std::string&)>& onHeader,
                        const std::function<char*(std::size_t n, std::string& refusal)>& target);

}  // namespace dasp::net
