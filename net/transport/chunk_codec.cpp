// SPDX-License-Identifier: MIT
#include "net/transport/chunk_codec.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dasp::net {
namespace {

constexpr unsigned char kHeaderTag = (1 << 3) | 2;  // field 1, length-delimited
constexpr unsigned char kDataTag = (2 << 3) | 2;    // field 2, length-delimited

void appendVarint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Reads the bytes of a list of slices in order, across slice boundaries.
class SliceCursor {
 public:
  explicit SliceCursor(std::vector<grpc::Slice> slices) : m_slices(std::move(slices)) { skipEmpty(); }
  bool atEnd() const { return m_slice >= m_slices.size(); }
  bool readByte(unsigned char& b) {
    if (atEnd()) return false;
    b = m_slices[m_slice].begin()[m_offset];
    advance(1);
    return true;
  }
  bool readVarint(std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      unsigned char b = 0;
      if (!readByte(b)) return false;
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  // Copies (or, with `to` null, skips) `n` bytes; false if fewer are left.
  bool read(char* to, std::size_t n) {
    while (n > 0) {
      if (atEnd()) return false;
      const auto& s = m_slices[m_slice];
      const std::size_t k = std::min(n, s.size() - m_offset);
      if (to != nullptr) {
        std::memcpy(to, s.begin() + m_offset, k);
        to += k;
      }
      advance(k);
      n -= k;
    }
    return true;
  }

 private:
  void advance(std::size_t k) {
    m_offset += k;
    if (m_offset == m_slices[m_slice].size()) {
      ++m_slice;
      m_offset = 0;
      skipEmpty();
    }
  }
  void skipEmpty() {
    while (m_slice < m_slices.size() && m_slices[m_slice].size() == 0) ++m_slice;
  }
  std::vector<grpc::Slice> m_slices;
  std::size_t m_slice = 0;
  std::size_t m_offset = 0;
};

}  // namespace

grpc::ByteBuffer encodeChunk(const std::string* header, const char* data, std::size_t size) {
  return encodeChunk(header, size == 0 ? grpc::Slice() : grpc::Slice(data, size, grpc::Slice::STATIC_SLICE));
}

grpc::ByteBuffer encodeChunk(const std::string* header, grpc::Slice payload) {
  std::string prefix;
  if (header != nullptr) {
    prefix.push_back(static_cast<char>(kHeaderTag));
    appendVarint(prefix, header->size());
    prefix += *header;
  }
  if (payload.size() == 0) {
    grpc::Slice only(prefix.data(), prefix.size());
    return grpc::ByteBuffer(&only, 1);
  }
  prefix.push_back(static_cast<char>(kDataTag));
  appendVarint(prefix, payload.size());
  grpc::Slice slices[] = {grpc::Slice(prefix.data(), prefix.size()), std::move(payload)};
  return grpc::ByteBuffer(slices, 2);
}

std::string decodeChunk(const grpc::ByteBuffer& chunk, const std::function<void(const std::string&)>& onHeader,
                        const std::function<char*(std::size_t n, std::string& refusal)>& target) {
  std::vector<grpc::Slice> slices;
  if (!chunk.Dump(&slices).ok()) return "a chunk that cannot be read";
  SliceCursor in(std::move(slices));
  while (!in.atEnd()) {
    std::uint64_t tag = 0, length = 0;
    if (!in.readVarint(tag)) return "a truncated chunk (field tag)";
    const auto wireType = tag & 7;
    if (wireType == 0) {
      if (!in.readVarint(length)) return "a truncated chunk (varint field)";
      continue;
    }
    if (wireType == 1 || wireType == 5) {
      if (!in.read(nullptr, wireType == 1 ? 8 : 4)) return "a truncated chunk (fixed field)";
      continue;
    }
    if (wireType != 2) return "a malformed chunk (wire type " + std::to_string(wireType) + ")";
    if (!in.readVarint(length)) return "a truncated chunk (field length)";
    const auto n = static_cast<std::size_t>(length);
    if (tag == kHeaderTag) {
      std::string header(n, '\0');
      if (!in.read(header.data(), n)) return "a truncated chunk (header)";
      onHeader(header);
    } else if (tag == kDataTag) {
      std::string refusal;
      char* to = target(n, refusal);
      if (to == nullptr) return refusal;
      if (!in.read(to, n)) return "a truncated chunk (payload)";
    } else if (!in.read(nullptr, n)) {
      return "a truncated chunk (unknown field)";
    }
  }
  return {};
}

}  // namespace dasp::net
