// Clock alignment from collective rendezvous points.
//
// Semantics used: no rank can finish a collective (or communicator init) before every rank
// started it. Each node's evidence of a rendezvous (evidence.h: device times, blocking calls,
// blocking syncs after an enqueue, communicator init) gives an entry no later than its ranks'
// start and an exit no earlier than their finish. For nodes a and b with clock offsets o_a, o_b
// (how far each clock is ahead of true time), every rendezvous seen on both gives, in the nodes'
// own clocks,
//     entry_i - exit_j  <=  o_a - o_b  <=  exit_i - entry_j     (ranks i on a, j on b)
// The intersection over all rendezvous is a guaranteed interval. The centre of the differences
// of the nodes' median exits (where both rest on one kind of evidence; CentreOfExits: between
// their two modes where the algorithm's exit order makes two, else their median) is the
// estimate when it is precise enough and lies inside the interval; otherwise the interval's
// centre (smallest worst-case error). With linear drift the slope comes from the trend of the
// exit differences (with two modes, the slope that separates them best) and the offset is
// chosen the same way among those the constraints allow for that slope (the feasible set of
// lines bounds the error). Which calls are rendezvous is decided before (evidence.h), never from
// how well exits cluster: widely spread exits only make the estimate the interval's centre.
// Where the constraints contradict each other (no offset line satisfies them all), an
// assumption of the evidence failed, and the node is aligned through another node or falls back
// to its recorded wall clock, bounded by the kernel's own sync-error estimate.
//
// Pure math on plain structs: no SQLite here (see rendezvous.h for the extraction).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace rs::merge {

// What an observation's exits rest on (evidence.h), strongest first.
enum class Evidence { kDevice, kBlockingCall, kSyncAfter, kCommInit };
inline constexpr int kEvidenceKinds = 4;
// 'device' | 'blocking_call' | 'sync_after' | 'comm_init'
const char* EvidenceName(Evidence e);

// What one node saw of one rendezvous (all its ranks), in that node's local clock.
struct NodeObservation {
  int node = 0;              // index into the node list
  int64_t max_entry_ns = 0;  // latest entry of the node's ranks
  int64_t min_exit_ns = 0;   // earliest exit
  int64_t mid_exit_ns = 0;   // median exit of the kind `evidence`
  Evidence evidence = Evidence::kBlockingCall;
  bool device_clock_unbounded = false;  // an entry is a device time without a conversion bound
};

// One rendezvous (a matched collective or communicator init) seen on two or more nodes.
struct Rendezvous {
  std::vector<NodeObservation> nodes;  // at most one entry per node
};

// One rendezvous as a constraint on d = o_a - o_b at local time x (node a's clock).
struct PairConstraint {
  int64_t x_ns = 0;
  int64_t lo_ns = 0;      // guaranteed lower bound of d
  int64_t hi_ns = 0;      // guaranteed upper bound of d
  int64_t point_ns = 0;   // exit-cluster estimate of d
  bool has_point = true;  // false: the nodes' exits are of different kinds (point biased)
  Evidence evidence = Evidence::kBlockingCall;  // the weaker side's kind
  bool device_clock_unbounded = false;
};

// A clock model of one node relative to another: d(x) = offset + drift_ppm*1e-6*(x - anchor).
struct PairEstimate {
  bool usable = false;  // false: no constraints, or constraints contradict the data
  double offset_ns = 0;
  double drift_ppm = 0;
  int64_t anchor_ns = 0;
  double error_bound_ns = 0;
  int64_t count = 0;
  std::array<int64_t, kEvidenceKinds> by_evidence{};  // constraints per kind (Evidence)
  int64_t device_clock_unbounded = 0;                 // constraints with an unbounded device time
  std::string note;                                   // why unusable, or which model was chosen
};

// "device 120, comm_init 1": the kinds with a count, strongest first; empty when all are 0.
std::string EvidenceSummary(const std::array<int64_t, kEvidenceKinds>& by_evidence);

struct AlignOptions {
  // Drift is fitted only with this many rendezvous, when the slope is this many standard
  // errors from zero, and when it moves the offset by at least min_drift_effect_ns over the
  // recording. Three: exits that wake up hosts (syncs after enqueues) or leave a ring spread by
  // hundreds of microseconds on a loaded machine, and a 20 ppm drift over a recording of
  // seconds was then often below five (measured on the test bed), while a drift fitted where
  // none is costs at most a few standard errors of slope.
  int min_drift_points = 8;
  double drift_sigmas = 3.0;
  double min_drift_effect_ns = 1000.0;
  // The exit-cluster estimate is used when it lies inside the guaranteed interval and its
  // standard error (from the spread of the exit differences and their number) is at most this
  // fraction of the interval's width; otherwise the interval's centre.
  double exit_estimate_spread_ratio = 0.1;
  // Two exit modes (see CentreOfExits): looked for with this many exit differences or more,
  // between the order statistics at (1 - mode_search_fraction)/2 and (1 + ...)/2, with windows
  // of mode_window_fraction of the points (at least 2) on either side of each; a window at
  // least mode_sparsity_ratio times as wide as the median window there is the gap between two
  // modes. Measured on the test bed: gaps 18-79 times the median window; one mode (normal,
  // Laplace, log-normal, 200-5000 points) at most 9 times.
  int min_mode_points = 200;
  double mode_search_fraction = 0.4;
  double mode_window_fraction = 0.004;
  double mode_sparsity_ratio = 12.0;
  // With two modes and drift, the slope is the one whose residuals leave the widest gap between
  // the modes (windows of mode_slope_window_fraction: wider than the centre's, so that the gap's
  // width varies smoothly with the slope), searched within this many ppm (or four standard
  // errors, the larger) of the least-squares slope.
  double mode_slope_window_fraction = 0.02;
  double mode_slope_search_ppm = 10.0;
  // The largest drift between two clocks the bounds allow for (each kernel clock is corrected
  // by at most 500 ppm, MAXFREQ in adjtimex(2)).
  double max_drift_ppm = 1000.0;
  // Bound used when a node's clock_refs carry no kernel maxerror: the kernel's own ceiling
  // for maxerror (NTP_PHASE_LIMIT, 16 s).
  int64_t unknown_maxerror_ns = 16'000'000'000;
};

// The centre of exit differences (residuals from the fitted line). Where a collective's ranks
// finish in an order set by which rank arrived last (around a ring, the ranks finish one after
// the other from the last arrival), a pair's exit difference is d + h or d - h for a hop time h,
// by the algorithm's symmetry, depending on who arrived last: two modes with a gap between them,
// weighted by how often each rank was last. The median then lies in the heavier mode, up to h
// from d; the centre of the gap does not depend on the weights. Returns the centre of the
// sparsest window near the middle when it is clearly sparser than the rest (two modes), else
// the median.
struct ExitCentre {
  double value = 0;
  bool between_modes = false;
};
ExitCentre CentreOfExits(std::vector<double> residuals, const AlignOptions& opt = {});

// Among slopes in [lo, hi], the one whose residuals y - slope*u leave the widest gap between two
// exit modes (the line that separates them with the largest margin): a wrong slope tilts the
// gap across the recording and narrows it. `u`: when each exit difference was taken (from the
// anchor), `y`: the difference.
double SeparatingSlope(const std::vector<double>& u, const std::vector<double>& y, double lo,
                       double hi, const AlignOptions& opt = {});

// Estimates o_a - o_b from the constraints (x in a's clock; anchor = `anchor_ns`).
PairEstimate EstimatePair(std::vector<PairConstraint> constraints, int64_t anchor_ns,
                          const AlignOptions& opt = {});

// Builds the constraints between nodes a and b from every rendezvous both saw.
std::vector<PairConstraint> PairConstraints(const std::vector<Rendezvous>& rendezvous, int a,
                                            int b);

// What the merge knows of each node's clock besides the rendezvous.
struct NodeClock {
  std::string name;
  int64_t start_ns = 0;      // local recording start (anchor for drift)
  int64_t maxerror_ns = -1;  // largest kernel maxerror (+ read span) in its clock_refs; -1 none
};

// The result per node; aligned = local - offset_ns - drift_ppm*1e-6*(local - anchor_ns).
struct NodeAlignment {
  std::string node;
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t anchor_ns = 0;
  int64_t error_bound_ns = 0;
  std::string method;  // 'reference' | 'rendezvous' | 'wall_clock'
  int64_t rendezvous_count = 0;
  std::string note;
  std::string evidence;  // EvidenceSummary of the rendezvous used; empty: none

  int64_t Apply(int64_t local_ns) const;
};

// Aligns every node to a reference: `reference` (an index) or, when -1, the node that shares
// rendezvous with the most other nodes (ties: the first). A node whose rendezvous with the
// reference are missing or unusable goes through aligned nodes it shares rendezvous with (most
// shared first); one without any usable path falls back to 'wall_clock'.
std::vector<NodeAlignment> AlignClocks(const std::vector<NodeClock>& nodes,
                                       const std::vector<Rendezvous>& rendezvous,
                                       int reference = -1, const AlignOptions& opt = {});

}  // namespace rs::merge
