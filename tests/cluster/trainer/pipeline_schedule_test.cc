#include "pipeline_schedule.h"

#include <gtest/gtest.h>

#include <set>

namespace trainer {
namespace {

std::string Trace(const std::vector<PipeAction>& actions) {
  std::string s;
  for (const PipeAction& a : actions) s += (s.empty() ? "" : " ") + Describe(a);
  return s;
}

TEST(PipelineSchedule, TwoStagesFourMicrobatches) {
  EXPECT_EQ(Trace(OneFOneB(2, 0, 4)),
            "F0 send_forward(send f0 next) "
            "F1 send_forward_recv_backward(send f1 next,recv b0 next) B0 "
            "F2 send_forward_recv_backward(send f2 next,recv b1 next) B1 "
            "F3 send_forward_recv_backward(send f3 next,recv b2 next) B2 "
            "recv_backward(recv b3 next) B3");
  EXPECT_EQ(
      Trace(OneFOneB(2, 1, 4)),
      "recv_forward(recv f0 prev) F0 B0 send_backward_recv_forward(send b0 prev,recv f1 prev) "
      "F1 B1 send_backward_recv_forward(send b1 prev,recv f2 prev) "
      "F2 B2 send_backward_recv_forward(send b2 prev,recv f3 prev) "
      "F3 B3 send_backward(send b3 prev)");
}

TEST(PipelineSchedule, OneStageHasNoExchanges) {
  EXPECT_EQ(Trace(OneFOneB(1, 0, 2)), "F0 B0 F1 B1");
}

// Every stage runs each microbatch forward then backward once, and what a stage sends to the
// next is what that stage receives from its previous one, in the same order.
TEST(PipelineSchedule, StagesAgree) {
  for (int pp = 1; pp <= 5; ++pp) {
    for (int m = 1; m <= 6; ++m) {
      std::vector<std::vector<PipeAction>> s;
      for (int st = 0; st < pp; ++st) s.push_back(OneFOneB(pp, st, m));
      for (int st = 0; st < pp; ++st) {
        std::multiset<int> f, b;
        for (const PipeAction& a : s[st]) {
          if (a.kind == PipeAction::kForward) f.insert(a.microbatch);
          if (a.kind == PipeAction::kBackward) {
            EXPECT_EQ(f.count(a.microbatch), 1u) << "backward before forward";
            b.insert(a.microbatch);
          }
        }
        EXPECT_EQ(f.size(), static_cast<size_t>(m));
        EXPECT_EQ(b.size(), static_cast<size_t>(m));
        if (st + 1 == pp) continue;
        std::vector<std::pair<bool, int>> sent, received;  // (backward, mb)
        for (const PipeAction& a : s[st]) {
          for (const PipeOp& o : a.ops) {
            if (o.send && o.next) sent.push_back({o.backward, o.microbatch});
            if (!o.send && o.next) received.push_back({o.backward, o.microbatch});
          }
        }
        std::vector<std::pair<bool, int>> got, returned;
        for (const PipeAction& a : s[st + 1]) {
          for (const PipeOp& o : a.ops) {
            if (!o.send && !o.next) got.push_back({o.backward, o.microbatch});
            if (o.send && !o.next) returned.push_back({o.backward, o.microbatch});
          }
        }
        EXPECT_EQ(sent, got) << "pp " << pp << " m " << m << " stage " << st;
        EXPECT_EQ(received, returned) << "pp " << pp << " m " << m << " stage " << st;
      }
    }
  }
}

// Under rendezvous semantics (a batch completes only when every one of its transfers meets its
// counterpart in the peer's current batch, as NCCL's grouped send/recv may), all stages finish:
// the schedule cannot deadlock whatever the transport buffers.
TEST(PipelineSchedule, NoDeadlockWithRendezvousTransfers) {
  for (int pp = 2; pp <= 6; ++pp) {
    for (int m = 1; m <= 8; ++m) {
      std::vector<std::vector<PipeAction>> q(pp);
      for (int st = 0; st < pp; ++st) {
        for (PipeAction& a : OneFOneB(pp, st, m)) {
          if (a.kind == PipeAction::kExchange) q[st].push_back(a);
        }
      }
      std::vector<size_t> head(pp, 0);
      for (int rounds = 0; rounds < 10000; ++rounds) {
        std::vector<bool> ready(pp);
        for (int st = 0; st < pp; ++st) ready[st] = head[st] < q[st].size();
        for (bool changed = true; changed;) {  // drop stages whose batch cannot complete
          changed = false;
          for (int st = 0; st < pp; ++st) {
            if (!ready[st]) continue;
            for (const PipeOp& o : q[st][head[st]].ops) {
              int peer = st + (o.next ? 1 : -1);
              bool met = false;
              if (peer >= 0 && peer < pp && ready[peer]) {
                for (const PipeOp& p : q[peer][head[peer]].ops) {
                  met = met || (p.send != o.send && p.next != o.next && p.backward == o.backward &&
                                p.microbatch == o.microbatch);
                }
              }
              if (!met) {
                ready[st] = false;
                changed = true;
                break;
              }
            }
          }
        }
        bool any = false;
        for (int st = 0; st < pp; ++st) {
          if (ready[st]) ++head[st], any = true;
        }
        if (!any) break;
      }
      for (int st = 0; st < pp; ++st) {
        EXPECT_EQ(head[st], q[st].size()) << "deadlock: pp " << pp << " m " << m << " stage " << st
                                          << " stuck at " << Describe(q[st][head[st]]);
      }
    }
  }
}

}  // namespace
}  // namespace trainer
