// SPDX-License-Identifier: MIT
#pragma once
// The line a worker or the evaluator prints when it goes through a server outage, and
// the runner reads (its stdout is the only channel from a node to the runner besides the
// server): one structured, versioned format, written and parsed only here.
//
// Format version 2, one line, fields separated by single spaces:
//   dasp-recovery/2 outage_detected node=worker-0 server=127.0.0.1:4000 acked=57 status="UNAVAILABLE: …"
//   dasp-recovery/2 outage_progress node=worker-0 server=127.0.0.1:4000 outage_s=1.00 period_s=1.00
//       computed=10
//   dasp-recovery/2 reconnected node=worker-0 server=127.0.0.1:4001 outage_s=1.25 computed=12
//       in_flight_kept=1 dropped=0 discarded=0 flushed=13
// (the second and the third are one line each). A worker that keeps computing through an
// outage (STATELESS's backlog, LOCAL's local steps) writes outage_progress about once a
// second, and once more just before it reconnects, so that the runner can show its work
// while no server could. A value is bare, or double-quoted with \" and \\ escaped when
// it is empty or holds a space, a quote or a backslash; numbers are written in the C
// locale. Keys a reader does not know are skipped; a line of another format version is not
// parsed (nullopt), so an old runner never misreads a newer node.
//
// Threading: pure functions; any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dasp::net {

inline constexpr std::string_view kRecoveryLinePrefix = "dasp-recovery/2 ";

struct RecoveryReport {
  enum class Kind { OutageDetected, OutageProgress, Reconnected };
  Kind kind = Kind::OutageDetected;
  std::string node;    // the node that saw the outage
  std::string server;  // outage_detected: the server that failed; reconnected: the one found
  // outage_detected: the highest version the failed server acknowledged to this node
  // (PushReply / PullReply acked_version since the node joined it); -1: none.
  std::int64_t ackedVersion = -1;
  std::string status;  // outage_detected: the failed call's status, for people only
  // A stall: the node's own calls went unanswered (its link was cut) while the server
  // lived; written as stalled=1 on both lines of it.
  bool stalled = false;
  // outage_progress and reconnected:
  double outageS = 0;              // how long no server answered (so far)
  // stateless: gradients computed during the outage; local: local steps taken (so far)
  std::int64_t computed = 0;
  double periodS = 0;              // outage_progress: the time since the previous line of it
  // reconnected:
  std::int64_t inFlightKept = 0;   // stateless: 1 when the gradient in flight joined the backlog
  std::int64_t dropped = 0;        // of the backlog, dropped by the bound (oldest first)
  std::int64_t discarded = 0;      // otherwise: the gradient in flight, thrown away
  std::int64_t flushed = 0;        // backlog gradients pushed to the server found
};

std::string formatRecoveryLine(const RecoveryReport& report);
// The report of a line in this format (leading text before the prefix is not allowed);
// nullopt for any other line, a line of another version, or one missing a required field
// (node, server; outage_s for outage_progress and reconnected).
std::optional<RecoveryReport> parseRecoveryLine(std::string_view line);

}  // namespace dasp::net
