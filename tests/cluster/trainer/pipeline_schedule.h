// One pipeline stage's work in a training step under Megatron-LM's non-interleaved 1F1B
// schedule (megatron/core/pipeline_parallel/schedules.py,
// forward_backward_pipelining_without_interleaving): min(pp - stage - 1, M) warm-up forwards,
// then one forward and one backward at a time, then the cool-down backwards. Every exchange
// with the neighbouring stages is one batch_isend_irecv (Megatron's default batch_p2p_comm):
// recv_forward, send_forward, send_forward_recv_backward, send_backward_recv_forward,
// recv_backward, send_backward, with its operations in _batched_p2p_ops' order (send to the
// previous stage, receive from it, send to the next, receive from it). Exchanges with a stage
// that does not exist (before the first, after the last) are left out, as Megatron's are.
#pragma once

#include <string>
#include <vector>

namespace trainer {

struct PipeOp {
  bool send = false;
  bool next = false;      // with the next stage (else the previous one)
  bool backward = false;  // a gradient (else an activation)
  int microbatch = 0;
};

struct PipeAction {
  enum Kind { kForward, kBackward, kExchange };
  Kind kind = kForward;
  int microbatch = 0;       // kForward, kBackward
  const char* name = "";    // kExchange: Megatron's function ("send_forward", ...)
  std::vector<PipeOp> ops;  // kExchange
};

std::vector<PipeAction> OneFOneB(int pp, int stage, int microbatches);

std::string Describe(const PipeAction& a);  // "F3", "B0", "send_forward_recv_backward(f3,b0)"

}  // namespace trainer
