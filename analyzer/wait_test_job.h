// The hang engine's tests' job builder (wait_graph.h): each test lays out what every rank's
// record holds. Shared by wait_graph_test.cc and wait_moments_test.cc.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analyzer/wait_graph.h"

namespace rs::analyzer::wait::test_job {

using rs::NcclOp;
using rs::OpState;
using V = std::vector<int64_t>;

constexpr int64_t kT0 = 1'764'000'000'000'000'000;
constexpr int64_t kS = 1'000'000'000;

class Job {
 public:
  size_t Group(const std::string& label, V members) {
    in.groups.push_back(wait::Group{label, std::move(members)});
    return in.groups.size() - 1;
  }
  Rank& R(int64_t rank, Basis basis = Basis::kFlightRecorderNccl) {
    for (Rank& r : in.ranks) {
      if (r.rank == rank) return r;
    }
    in.ranks.push_back(Rank{rank, true, basis, false, false, {}});
    return in.ranks.back();
  }
  void Missing(int64_t rank) { in.ranks.push_back(Rank{rank, false, {}, false, false, {}}); }
  Op& Coll(int64_t rank, size_t g, int64_t seq, Outcome out, int64_t t,
           NcclOp op = NcclOp::kAllReduce) {
    Op o;
    o.group = g;
    o.op = op;
    o.seq = seq;
    o.outcome = out;
    o.state = out == Outcome::kCompleted ? OpState::kCompleted : OpState::kEnqueued;
    o.created_ns = t;
    if (out == Outcome::kCompleted) o.completed_ns = t + 1000;
    o.count = 2048;
    o.dtype = "float32";
    o.timeout_ns = 600 * kS;
    R(rank).ops.push_back(o);
    return R(rank).ops.back();
  }
  // Collectives first..last of group g, completed, on every given rank.
  void Done(size_t g, V ranks, int64_t first, int64_t last, NcclOp op = NcclOp::kAllReduce) {
    for (int64_t r : ranks) {
      for (int64_t s = first; s <= last; ++s) Coll(r, g, s, Outcome::kCompleted, kT0 + s * kS, op);
    }
  }
  Op& P2p(int64_t rank, size_t g, NcclOp op, int64_t peer, int64_t seq, Outcome out, int64_t t) {
    Op& o = Coll(rank, g, seq, out, t, op);
    o.p2p = true;
    o.peer = peer;
    o.count.reset();
    return o;
  }
  Result Run() { return Analyze(in); }

  Input in;
};

inline std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

inline const End* EndOf(const Result& r, int64_t rank) {
  for (const End& e : r.ends) {
    if (e.rank == rank) return &e;
  }
  return nullptr;
}

}  // namespace rs::analyzer::wait::test_job
