// SPDX-License-Identifier: MIT
#include "net/client/recovery_line.h"

#include <charconv>
#include <map>

namespace dasp::net {
namespace {

constexpr std::string_view kOutage = "outage_detected";
constexpr std::string_view kProgress = "outage_progress";
constexpr std::string_view kReconnected = "reconnected";

std::string_view kindWord(RecoveryReport::Kind kind) {
  switch (kind) {
    case RecoveryReport::Kind::OutageDetected: return kOutage;
    case RecoveryReport::Kind::OutageProgress: return kProgress;
    case RecoveryReport::Kind::Reconnected: return kReconnected;
  }
  return kOutage;
}

std::string value(std::string_view text) {
  const bool plain = !text.empty() && text.find_first_of(" \"\\\n\r\t") == std::string_view::npos;
  if (plain) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' || c == '\r' ? ' ' : c;
  }
  return out + "\"";
}

std::string number(std::int64_t v) { return std::to_string(v); }

std::string number(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 6);
  return std::string(buf, r.ptr);
}

// key=value pairs after the kind; false on a malformed line.
bool fields(std::string_view rest, std::map<std::string, std::string, std::less<>>& out) {
  std::size_t i = 0;
  while (i < rest.size()) {
    if (rest[i] == ' ') {
      ++i;
      continue;
    }
    const auto eq = rest.find('=', i);
    if (eq == std::string_view::npos || eq == i) return false;
    std::string key(rest.substr(i, eq - i));
    if (key.find(' ') != std::string::npos) return false;
    i = eq + 1;
    std::string v;
    if (i < rest.size() && rest[i] == '"') {
      ++i;
      bool closed = false;
      while (i < rest.size()) {
        const char c = rest[i++];
        if (c == '\\' && i < rest.size()) {
          v += rest[i++];
        } else if (c == '"') {
          closed = true;
          break;
        } else {
          v += c;
        }
      }
      if (!closed) return false;
    } else {
      const auto end = std::min(rest.find(' ', i), rest.size());
      v = std::string(rest.substr(i, end - i));
      i = end;
    }
    out[std::move(key)] = std::move(v);
  }
  return true;
}

template <typename T>
bool parseNumber(const std::map<std::string, std::string, std::less<>>& f, const char* key, T& out) {
  const auto it = f.find(key);
  if (it == f.end()) return true;  // optional: the default stays
  const auto& s = it->second;
  T v{};
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return false;
  out = v;
  return true;
}

}  // namespace

std::string formatRecoveryLine(const RecoveryReport& r) {
  std::string line(kRecoveryLinePrefix);
  line += kindWord(r.kind);
  line += " node=" + value(r.node) + " server=" + value(r.server);
  if (r.kind == RecoveryReport::Kind::OutageDetected) {
    line += " acked=" + number(r.ackedVersion) + " status=" + value(r.status);
  } else if (r.kind == RecoveryReport::Kind::OutageProgress) {
    line += " outage_s=" + number(r.outageS) + " period_s=" + number(r.periodS) + " computed=" + number(r.computed);
  } else {
    line += " outage_s=" + number(r.outageS) + " computed=" + number(r.computed) +
            " in_flight_kept=" + number(r.inFlightKept) + " dropped=" + number(r.dropped) +
            " discarded=" + number(r.discarded) + " flushed=" + number(r.flushed);
  }
  if (r.stalled) line += " stalled=1";
  return line;
}

std::optional<RecoveryReport> parseRecoveryLine(std::string_view line) {
  if (line.substr(0, kRecoveryLinePrefix.size()) != kRecoveryLinePrefix) return std::nullopt;
  line.remove_prefix(kRecoveryLinePrefix.size());
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  const auto space = std::min(line.find(' '), line.size());
  const std::string_view kind = line.substr(0, space);
  RecoveryReport r;
  if (kind == kOutage) {
    r.kind = RecoveryReport::Kind::OutageDetected;
  } else if (kind == kProgress) {
    r.kind = RecoveryReport::Kind::OutageProgress;
  } else if (kind == kReconnected) {
    r.kind = RecoveryReport::Kind::Reconnected;
  } else {
    return std::nullopt;
  }
  std::map<std::string, std::string, std::less<>> f;
  if (!fields(line.substr(space), f)) return std::nullopt;
  const auto node = f.find("node");
  const auto server = f.find("server");
  if (node == f.end() || server == f.end() || node->second.empty()) return std::nullopt;
  r.node = node->second;
  r.server = server->second;
  if (const auto s = f.find("stalled"); s != f.end()) r.stalled = s->second == "1";
  if (r.kind == RecoveryReport::Kind::OutageDetected) {
    if (!parseNumber(f, "acked", r.ackedVersion)) return std::nullopt;
    if (const auto s = f.find("status"); s != f.end()) r.status = s->second;
    return r;
  }
  if (f.find("outage_s") == f.end()) return std::nullopt;
  if (r.kind == RecoveryReport::Kind::OutageProgress) {
    if (!parseNumber(f, "outage_s", r.outageS) || !parseNumber(f, "period_s", r.periodS) ||
        !parseNumber(f, "computed", r.computed)) {
      return std::nullopt;
    }
    return r;
  }
  const bool ok = parseNumber(f, "outage_s", r.outageS) && parseNumber(f, "computed", r.computed) &&
                  parseNumber(f, "in_flight_kept", r.inFlightKept) && parseNumber(f, "dropped", r.dropped) &&
                  parseNumber(f, "discarded", r.discarded) && parseNumber(f, "flushed", r.flushed);
  if (!ok) return std::nullopt;
  return r;
}

}  // namespace dasp::net
