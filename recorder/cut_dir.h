// The cut directory: CUT_DIR/CUT-ID/NODE.rsb, one CUT-ID directory per cut (or per request,
// shared by every node that answers it), with the request that made it.
//
// The cut directory must be the recorders' alone (trusted_dir.h, checked at start: owned by
// root or the recorder's user, writable by nobody else). What is found in it is still read as
// a stranger's input, because a root daemon that obeys files is a way in when a directory's
// mode is ever loosened:
//   - a CUT-ID is a directory (never followed as a link) with a name recorders make
//     ([A-Za-z0-9._-], up to 128 characters), owned by root or the recorder's user;
//   - a request is read only when it is a regular file (not a link, FIFO or device) with one
//     link, at most kMaxRequestBytes, owned by root, the recorder's user or the cut
//     directory's owner, and its fields are what recorders write (a valid node name, a known
//     reason, a time); anything else is refused with its reason;
//   - every removal (rotation, left-overs) goes through the directory's descriptor and never
//     follows a link out of it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rscore/result.h"

namespace rs::rec {

// What a cut says about itself (metadata cut_*).
struct CutInfo {
  std::string reason;  // request, stop, recovered, stall, slowdown
  std::string node;
  int64_t cut_ns = 0;  // wall time of the cut
  int64_t recording_start_ns = 0;
  // A cut asked for through the cut directory: its id (CUT-ID), who asked and when.
  std::string cut_id;
  std::string requested_by;
  int64_t requested_ns = 0;
  // Writing had stopped (a full disk): the cut holds what was committed until then.
  int64_t writing_stopped_ns = 0;
  std::string writing_stopped_reason;
};

// CUT_DIR/CUT-ID/NODE.rsb. CUT-ID is the request's, else the UTC time of the cut and its
// reason (20261125T174502Z-request): the cuts of one request on every node share a directory.
std::string CutPath(const std::string& cut_dir, const CutInfo& info);

// A cluster-wide cut goes through the cut directory (a shared file system: no service, no
// port): the node that cuts writes CUT_DIR/CUT-ID/request (its node, the wall time, the
// reason); every recorder watching the directory answers each request newer than its own
// start with a cut of its ring into the same CUT-ID directory.
struct CutRequest {
  std::string cut_id, node, reason;
  int64_t cut_ns = 0;
};
// A request file larger than this is no recorder's (they write about 80 bytes).
inline constexpr int64_t kMaxRequestBytes = 4096;

// Posts a request, or joins one posted within `join_ns` of `cut_ns` (overlapping windows make
// one cut): returns the request this cut answers.
rs::Result<CutRequest> PostCutRequest(const std::string& cut_dir, const std::string& node,
                                      int64_t cut_ns, const std::string& reason, int64_t join_ns);

// A CUT-ID directory whose request was not read, and why (for the log, once).
struct RefusedRequest {
  std::string cut_id, why;
};
struct PendingRequests {
  std::vector<CutRequest> pending;  // oldest first
  std::vector<RefusedRequest> refused;
};
// Requests in `cut_dir` posted at or after `since_ns` that `node` has not answered (no
// NODE.rsb in their directory), and the ones refused.
PendingRequests PendingCutRequests(const std::string& cut_dir, const std::string& node,
                                   int64_t since_ns);

// CUT_DIR/CUT-ID, made (mode 0700) when missing; an existing one must be a directory (not a
// link) of root or the recorder's user. Returns its path.
rs::Result<std::string> CutIdDir(const std::string& cut_dir, const std::string& cut_id);

// Removes `node`'s oldest cuts (CUT_DIR/*/NODE.rsb, by CUT-ID: its UTC time comes first)
// while they take more than `max_bytes` together, and a cut directory left without bundles.
// Never the newest cut, nor the newest of an incident of this node's own (a cut it asked
// for: request, stall, slowdown). Returns the bundles removed.
std::vector<std::string> RotateCuts(const std::string& cut_dir, const std::string& node,
                                    uint64_t max_bytes);

// What a cut of `node` leaves when its recorder dies while writing it (SIGKILL, power): the
// copy of the ring (CUT_DIR/CUT-ID/.NODE.cut-PID.db and its journal) and the half-written
// bundle (.NODE.rsb.partial-PID-XXXXXX; NODE.rsb.partial of earlier recorders) of a
// recorder no longer running. Removes them and returns their paths.
std::vector<std::string> RemoveStaleCutFiles(const std::string& cut_dir, const std::string& node);

// mkdir -p, mode 0700 (cuts hold what ran on the node).
rs::Result<void> MakeDirs(const std::string& dir);

}  // namespace rs::rec
