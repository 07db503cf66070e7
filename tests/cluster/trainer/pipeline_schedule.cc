#include "pipeline_schedule.h"

#include <algorithm>

namespace trainer {
namespace {

// The exchanges of Megatron's p2p_communication.py for one stage. A null microbatch (-1)
// leaves that tensor out; _batched_p2p_ops orders what is left: send_prev, recv_prev, send_next,
// recv_next.
class Exchanges {
 public:
  Exchanges(int pp, int stage, std::vector<PipeAction>* out)
      : first_(stage == 0), last_(stage == pp - 1), out_(out) {}

  void RecvForward(int mb) { Add("recv_forward", -1, first_ ? -1 : mb, -1, -1); }
  void SendForward(int mb) { Add("send_forward", -1, -1, last_ ? -1 : mb, -1); }
  void SendForwardRecvBackward(int fwd, int bwd) {
    if (last_) return;
    Add("send_forward_recv_backward", -1, -1, fwd, bwd);
  }
  void SendBackwardRecvForward(int bwd, int fwd) {
    if (first_) return;
    Add("send_backward_recv_forward", bwd, fwd, -1, -1);
  }
  void RecvBackward(int mb) { Add("recv_backward", -1, -1, -1, last_ ? -1 : mb); }
  void SendBackward(int mb) { Add("send_backward", first_ ? -1 : mb, -1, -1, -1); }

 private:
  // Microbatches of: the gradient sent to the previous stage, the activation received from it,
  // the activation sent to the next stage, the gradient received from it.
  void Add(const char* name, int send_prev, int recv_prev, int send_next, int recv_next) {
    PipeAction a;
    a.kind = PipeAction::kExchange;
    a.name = name;
    if (send_prev >= 0) a.ops.push_back({true, false, true, send_prev});
    if (recv_prev >= 0) a.ops.push_back({false, false, false, recv_prev});
    if (send_next >= 0) a.ops.push_back({true, true, false, send_next});
    if (recv_next >= 0) a.ops.push_back({false, true, true, recv_next});
    if (!a.ops.empty()) out_->push_back(std::move(a));
  }
  bool first_, last_;
  std::vector<PipeAction>* out_;
};

}  // namespace

std::vector<PipeAction> OneFOneB(int pp, int stage, int microbatches) {
  std::vector<PipeAction> out;
  Exchanges x(pp, stage, &out);
  auto compute = [&](PipeAction::Kind kind, int mb) {
    PipeAction a;
    a.kind = kind;
    a.microbatch = mb;
    out.push_back(a);
  };
  const int warmup = std::min(pp - stage - 1, microbatches);
  const int remaining = microbatches - warmup;
  for (int i = 0; i < warmup; ++i) {
    x.RecvForward(i);
    compute(PipeAction::kForward, i);
    x.SendForward(i);
  }
  if (remaining > 0) x.RecvForward(warmup);
  for (int i = 0; i < remaining; ++i) {
    const int fwd = warmup + i;  // the forward of this 1F1B round, and the backward of mb i
    compute(PipeAction::kForward, fwd);
    x.SendForwardRecvBackward(fwd, i);
    compute(PipeAction::kBackward, i);
    if (i == remaining - 1) {
      x.SendBackward(i);
    } else {
      x.SendBackwardRecvForward(i, fwd + 1);
    }
  }
  for (int i = remaining; i < microbatches; ++i) {
    x.RecvBackward(i);
    compute(PipeAction::kBackward, i);
    x.SendBackward(i);
  }
  return out;
}

std::string Describe(const PipeAction& a) {
  if (a.kind == PipeAction::kForward) return "F" + std::to_string(a.microbatch);
  if (a.kind == PipeAction::kBackward) return "B" + std::to_string(a.microbatch);
  std::string s = std::string(a.name) + "(";
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const PipeOp& o = a.ops[i];
    s += (i ? "," : "") + std::string(o.send ? "send " : "recv ") + (o.backward ? "b" : "f") +
         std::to_string(o.microbatch) + (o.next ? " next" : " prev");
  }
  return s + ")";
}

}  // namespace trainer
