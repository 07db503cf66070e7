// A degraded network link, emulated for run-cluster --fault rdma. On a real cluster a bad
// cable or port makes the adapter retry at the link or transport layer: the data leaves late,
// NCCL's proxy sees its sends longer on the network, the peers wait, and no TCP retransmit
// happens. Here: where RANKSCOPE_TESTLIB_LINK_DELAY_FILE names a file holding a number of
// microseconds, each collective exchange step of this rank that sends to another node waits that
// long once its transfers are posted. The file is read again at most every 100 ms, so a harness
// turns the fault on mid-run by writing it; no file, or no number in it: no delay.
#pragma once

#include <cstdint>
#include <vector>

#include "transport.h"

namespace ncclcpu {

// The delay now in force, in microseconds (0: none).
int64_t LinkDelayUs();

// Waits the link's delay where one of the transfers is a send to another node (its socket's
// peer address is not its own).
void DelayOnDegradedLink(const std::vector<Transfer>& transfers);

}  // namespace ncclcpu
