// Network evidence from RDMA ports (rdma_ports, rdma_counters: the recorder's rdma source).
// NCCL's InfiniBand/RoCE transport bypasses the kernel's TCP stack: a bad cable, a flapping
// link or a congested switch port there produces no TCP retransmit, only the port's own
// counters move. They fall in three kinds (names as the kernel gives them):
//   link errors      the InfiniBand port counters of the physical and link layers (IBTA
//                    PortCounters): symbol_error, link_error_recovery, link_downed,
//                    local_link_integrity_errors, excessive_buffer_overrun_errors,
//                    port_rcv_errors, port_rcv_remote_physical_errors,
//                    port_rcv_switch_relay_errors, port_xmit_discards
//   transport retries the driver's counts of packets the reliable transport had to resend or
//                    found out of order (mlx5's hw_counters): out_of_sequence, packet_seq_err,
//                    local_ack_timeout_err, implied_nak_seq_err, duplicate_request,
//                    rnr_nak_retry_err, roce_adp_retrans, roce_adp_retrans_to,
//                    roce_slow_restart
//   congestion       port_xmit_wait (ticks the port had data and no credit to send), RoCE's
//                    congestion notifications (np_cnp_sent, rp_cnp_handled,
//                    np_ecn_marked_roce_packets), out_of_buffer: they rise under ordinary load
//                    too, so they are shown beside the others, never a cause alone.
// Like retransmits, a port's link errors and retries are a cause only where the collectives
// whose data moved while they rose (a reading's window, about a second) took longer than the
// others for their size (network.h CompareTransfers); else they are an observation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyzer/collectives.h"
#include "analyzer/network.h"
#include "analyzer/report_model.h"
#include "rscore/result.h"
#include "rscore/sqlite.h"

namespace rs::analyzer {

struct RdmaIncrease {
  std::string counter;
  int64_t increase = 0;  // summed over the recording
};

// One port with link errors or transport retries during the recording.
struct RdmaPortErrors {
  std::string node, device;
  int64_t port = 0;
  std::string link_layer, netdev;
  std::vector<RdmaIncrease> link_errors, retries, congestion;  // the largest first
  // The readings' windows (since_ns, timestamp_ns] in which a link error or retry counter rose.
  std::vector<std::pair<int64_t, int64_t>> windows;
  TransferComparison transfers;  // collectives overlapping those windows against the others
  int64_t Errors() const;        // link errors and retries, summed
  std::string Label() const;     // "node2 mlx5_0 port 1 (InfiniBand, ib0)"
};

struct RdmaLinks {
  int64_t ports = 0;                        // ports recorded, on every node
  int64_t nodes = 0;                        // nodes with a port
  std::vector<RdmaPortErrors> with_errors;  // the most errors first
};

// Nothing (0 ports) where the recording has no RDMA table or port.
rs::Result<RdmaLinks> LoadRdmaLinks(rs::Db& db, const CollectiveData& data);

// The port's network cause and evidence; its finding (node-level, shape network): a verdict
// of medium confidence where its collectives were slowed, else low (an observation).
Cause RdmaCause(const RdmaPortErrors& p);
Evidence RdmaEvidence(const RdmaPortErrors& p);
Straggler RdmaStraggler(const RdmaPortErrors& p);

// Places the findings of the ports with errors, the most errors per node: beside a lateness
// finding on its node (a network cause, where its collectives were slowed), else a finding of
// its own (ranked where slowed, else observed). Adds a note saying what the ports showed.
void PlaceRdmaFindings(const RdmaLinks& links, std::vector<Straggler>& ranked,
                       std::vector<Straggler>& observed, std::vector<std::string>& notes);

}  // namespace rs::analyzer
