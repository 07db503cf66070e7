#include "merger/clock_alignment.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <utility>

namespace rs::merge {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return (lo + hi) / 2;
}

double Mad(const std::vector<double>& residuals) {
  std::vector<double> a;
  a.reserve(residuals.size());
  for (double r : residuals) a.push_back(std::fabs(r));
  return Median(std::move(a));
}

struct Line {
  double intercept = 0;  // value at u = 0 (the anchor)
  double slope = 0;      // ns per ns
  double slope_se = std::numeric_limits<double>::infinity();
};

// Least squares of y on u, refitted once without points further than 5 MADs from the line
// (a late exit from a descheduled rank must not tilt the fit).
Line FitLine(const std::vector<double>& u, const std::vector<double>& y) {
  std::vector<bool> keep(u.size(), true);
  Line line;
  for (int pass = 0; pass < 2; ++pass) {
    double n = 0, su = 0, sy = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      if (!keep[i]) continue;
      n += 1;
      su += u[i];
      sy += y[i];
    }
    if (n < 2) return line;
    double mu = su / n, my = sy / n, suu = 0, suy = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      if (!keep[i]) continue;
      suu += (u[i] - mu) * (u[i] - mu);
      suy += (u[i] - mu) * (y[i] - my);
    }
    if (suu <= 0) return line;
    line.slope = suy / suu;
    line.intercept = my - line.slope * mu;
    std::vector<double> res;
    double ss = 0;
    for (size_t i = 0; i < u.size(); ++i) {
      double r = y[i] - (line.intercept + line.slope * u[i]);
      res.push_back(r);
      if (keep[i]) ss += r * r;
    }
    line.slope_se = n > 2 ? std::sqrt(ss / (n - 2) / suu) : std::numeric_limits<double>::infinity();
    double cut = 5 * std::max(Mad(res), 1.0);
    for (size_t i = 0; i < u.size(); ++i) keep[i] = std::fabs(res[i]) <= cut;
  }
  return line;
}

// The feasible set of lines d(u) = delta + k*u with lo_c <= d(u_c) <= hi_c for all c.
// Only the upper hull of the lower bounds and the lower hull of the upper bounds matter.
class LineFeasibility {
 public:
  LineFeasibility(const std::vector<double>& u, const std::vector<double>& lo,
                  const std::vector<double>& hi, double max_slope)
      : max_slope_(max_slope) {
    std::vector<std::pair<double, double>> l, h;
    for (size_t i = 0; i < u.size(); ++i) {
      l.emplace_back(u[i], lo[i]);
      h.emplace_back(u[i], -hi[i]);  // lower hull of hi = upper hull of -hi
    }
    lo_ = UpperHull(std::move(l));
    hi_ = UpperHull(std::move(h));
    for (auto& p : hi_) p.second = -p.second;
  }

  // Lowest intercept allowed for slope k (F) and highest (G).
  double F(double k) const {
    double m = -std::numeric_limits<double>::infinity();
    for (auto& [u, v] : lo_) m = std::max(m, v - k * u);
    return m;
  }
  double G(double k) const {
    double m = std::numeric_limits<double>::infinity();
    for (auto& [u, v] : hi_) m = std::min(m, v - k * u);
    return m;
  }

  // Finds the feasible slope range; false when no line satisfies every constraint.
  bool Solve() {
    auto h = [&](double k) { return F(k) - G(k); };  // convex
    double k = MinimizeConvex(h, -max_slope_, max_slope_);
    if (h(k) > 0.5) return false;
    k_lo_ = h(-max_slope_) <= 0.5 ? -max_slope_ : Bisect(h, -max_slope_, k);
    k_hi_ = h(max_slope_) <= 0.5 ? max_slope_ : Bisect(h, max_slope_, k);
    return true;
  }

  // The slopes of feasible lines (after Solve).
  std::pair<double, double> SlopeRange() const { return {k_lo_, k_hi_}; }

  // Range of d(u) over every feasible line.
  std::pair<double, double> RangeAt(double u) const {
    double lo_k = MinimizeConvex([&](double k) { return F(k) + k * u; }, k_lo_, k_hi_);
    double hi_k = MinimizeConvex([&](double k) { return -(G(k) + k * u); }, k_lo_, k_hi_);
    return {F(lo_k) + lo_k * u, G(hi_k) + hi_k * u};
  }

 private:
  static std::vector<std::pair<double, double>> UpperHull(
      std::vector<std::pair<double, double>> p) {
    std::sort(p.begin(), p.end());
    std::vector<std::pair<double, double>> out;
    for (auto& q : p) {
      if (!out.empty() && out.back().first == q.first) {  // same u: keep the higher
        if (q.second > out.back().second)
          out.pop_back();
        else
          continue;
      }
      while (out.size() >= 2) {
        auto& a = out[out.size() - 2];
        auto& b = out[out.size() - 1];
        double cross = (b.first - a.first) * (q.second - a.second) -
                       (b.second - a.second) * (q.first - a.first);
        if (cross >= 0)
          out.pop_back();
        else
          break;
      }
      out.push_back(q);
    }
    return out;
  }
  static double MinimizeConvex(const std::function<double(double)>& f, double a, double b) {
    for (int i = 0; i < 200 && b - a > 1e-15; ++i) {
      double m1 = a + (b - a) / 3, m2 = b - (b - a) / 3;
      if (f(m1) <= f(m2))
        b = m2;
      else
        a = m1;
    }
    return (a + b) / 2;
  }
  // Boundary between infeasible `out` and feasible `in` (h(in) <= 0.5).
  static double Bisect(const std::function<double(double)>& h, double out, double in) {
    for (int i = 0; i < 200; ++i) {
      double m = (out + in) / 2;
      if (h(m) <= 0.5)
        in = m;
      else
        out = m;
    }
    return in;
  }

  std::vector<std::pair<double, double>> lo_, hi_;
  double max_slope_;
  double k_lo_ = 0, k_hi_ = 0;
};

std::string Us(double ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f us", ns / 1000.0);
  return buf;
}

// The sparsest window of `sorted` near its middle (AlignOptions' mode_* fields; windows of
// `fraction` of the values on either side): its width, its centre, and the median width of the
// windows searched. width < 0: too few values.
struct Window {
  double width = -1, centre = 0, typical = 0;
};
Window SparsestWindow(const std::vector<double>& sorted, const AlignOptions& opt, double fraction,
                      bool want_typical) {
  Window w;
  const int64_t n = static_cast<int64_t>(sorted.size());
  if (n < opt.min_mode_points) return w;
  const int64_t k = std::max<int64_t>(2, static_cast<int64_t>(fraction * n));
  const int64_t lo =
      std::max<int64_t>(k, static_cast<int64_t>((1 - opt.mode_search_fraction) / 2 * n));
  const int64_t hi =
      std::min<int64_t>(n - 1 - k, static_cast<int64_t>((1 + opt.mode_search_fraction) / 2 * n));
  if (hi <= lo) return w;
  std::vector<double> widths;
  for (int64_t i = lo; i <= hi; ++i) {
    const double width = sorted[i + k] - sorted[i - k];
    if (want_typical) widths.push_back(width);
    if (width > w.width) {
      w.width = width;
      w.centre = (sorted[i + k] + sorted[i - k]) / 2;
    }
  }
  if (want_typical) w.typical = Median(std::move(widths));
  return w;
}

}  // namespace

ExitCentre CentreOfExits(std::vector<double> v, const AlignOptions& opt) {
  ExitCentre out;
  if (v.empty()) return out;
  std::sort(v.begin(), v.end());
  out.value = Median(v);
  const Window w = SparsestWindow(v, opt, opt.mode_window_fraction, true);
  if (w.width < 0 || w.width < opt.mode_sparsity_ratio * std::max(w.typical, 1.0)) return out;
  out.value = w.centre;
  out.between_modes = true;
  return out;
}

double SeparatingSlope(const std::vector<double>& u, const std::vector<double>& y, double lo,
                       double hi, const AlignOptions& opt) {
  // A long recording is searched on a random sample of kSearchPoints differences (fixed seed:
  // the merge is reproducible; random, not every m-th, which a periodic pattern of who is last
  // could alias into one mode); the centre is taken from all of them afterwards.
  constexpr size_t kSearchPoints = 4096;
  std::vector<size_t> picked(u.size());
  std::iota(picked.begin(), picked.end(), size_t{0});
  if (picked.size() > kSearchPoints) {
    std::vector<size_t> sample;
    std::mt19937_64 rng(0x5eed);
    std::sample(picked.begin(), picked.end(), std::back_inserter(sample), kSearchPoints, rng);
    picked = std::move(sample);
  }
  std::vector<double> su, sy;
  for (size_t i : picked) {
    su.push_back(u[i]);
    sy.push_back(y[i]);
  }
  std::vector<double> r(su.size());
  auto gap = [&](double slope) {
    for (size_t i = 0; i < su.size(); ++i) r[i] = sy[i] - slope * su[i];
    std::sort(r.begin(), r.end());
    return SparsestWindow(r, opt, opt.mode_slope_window_fraction, false).width;
  };
  // The gap narrows about linearly as the slope moves away from the best one, with a flat top
  // of a fraction of a ppm: steps of 0.25 ppm (40 to 400 of them), then finer ones around the
  // best.
  int steps = static_cast<int>(std::clamp((hi - lo) / 0.25e-6, 40.0, 400.0));
  double best = (lo + hi) / 2, best_gap = gap(best);
  for (double a = lo, b = hi; b - a > 1e-12; steps = 40) {
    const double step = (b - a) / steps;
    for (int i = 0; i <= steps; ++i) {
      const double slope = a + i * step;
      const double g = gap(slope);
      if (g > best_gap) {
        best_gap = g;
        best = slope;
      }
    }
    if (step < 1e-9) break;  // 0.001 ppm
    a = std::max(lo, best - step);
    b = std::min(hi, best + step);
  }
  return best;
}

const char* EvidenceName(Evidence e) {
  switch (e) {
    case Evidence::kDevice:
      return "device";
    case Evidence::kBlockingCall:
      return "blocking_call";
    case Evidence::kSyncAfter:
      return "sync_after";
    case Evidence::kCommInit:
      return "comm_init";
  }
  return "?";
}

std::string EvidenceSummary(const std::array<int64_t, kEvidenceKinds>& by_evidence) {
  std::string out;
  for (int k = 0; k < kEvidenceKinds; ++k) {
    if (by_evidence[k] == 0) continue;
    out += (out.empty() ? "" : ", ") + std::string(EvidenceName(static_cast<Evidence>(k))) + " " +
           std::to_string(by_evidence[k]);
  }
  return out;
}

std::vector<PairConstraint> PairConstraints(const std::vector<Rendezvous>& rendezvous, int a,
                                            int b) {
  std::vector<PairConstraint> out;
  for (const Rendezvous& r : rendezvous) {
    const NodeObservation *oa = nullptr, *ob = nullptr;
    for (const NodeObservation& o : r.nodes) {
      if (o.node == a) oa = &o;
      if (o.node == b) ob = &o;
    }
    if (!oa || !ob) continue;
    PairConstraint c;
    c.x_ns = oa->mid_exit_ns;
    c.lo_ns = oa->max_entry_ns - ob->min_exit_ns;
    c.hi_ns = oa->min_exit_ns - ob->max_entry_ns;
    c.point_ns = oa->mid_exit_ns - ob->mid_exit_ns;
    c.has_point = oa->evidence == ob->evidence;
    c.evidence = std::max(oa->evidence, ob->evidence);  // the weaker (Evidence is strongest first)
    c.device_clock_unbounded = oa->device_clock_unbounded || ob->device_clock_unbounded;
    out.push_back(c);
  }
  return out;
}

namespace {

// The constraints of one pair as numbers on the anchor's time axis: each one's bounds on the
// offset d at its time u, and the exit differences (pu, pt) of those whose two sides rest on one
// kind of evidence, the only ones that estimate d.
struct PairSamples {
  std::vector<double> u, lo, hi, width, pu, pt;
  double lo_max = -std::numeric_limits<double>::infinity();
  double hi_min = std::numeric_limits<double>::infinity();
  double u_min = std::numeric_limits<double>::infinity(), u_max = -u_min;
  double pu_min = u_min, pu_max = u_max;
  bool points() const { return !pt.empty(); }
};

PairSamples Samples(const std::vector<PairConstraint>& cs, int64_t anchor_ns, PairEstimate& est) {
  PairSamples s;
  for (const PairConstraint& c : cs) {
    ++est.by_evidence[static_cast<size_t>(c.evidence)];
    est.device_clock_unbounded += c.device_clock_unbounded ? 1 : 0;
    s.u.push_back(static_cast<double>(c.x_ns - anchor_ns));
    s.lo.push_back(static_cast<double>(c.lo_ns));
    s.hi.push_back(static_cast<double>(c.hi_ns));
    s.width.push_back(static_cast<double>(c.hi_ns - c.lo_ns));
    s.lo_max = std::max(s.lo_max, s.lo.back());
    s.hi_min = std::min(s.hi_min, s.hi.back());
    s.u_min = std::min(s.u_min, s.u.back());
    s.u_max = std::max(s.u_max, s.u.back());
    if (c.has_point) {
      s.pu.push_back(s.u.back());
      s.pt.push_back(static_cast<double>(c.point_ns));
      s.pu_min = std::min(s.pu_min, s.pu.back());
      s.pu_max = std::max(s.pu_max, s.pu.back());
    }
  }
  return s;
}

// Whether the offset drifts (a slope fitted to the exit differences that is significant, matters
// and is possible; or a constant offset that cannot meet the constraints), and the slope: the
// fitted one clamped to what the constraints allow, 0 without drift. nullopt, with the reason in
// est.note, where the constraints contradict each other.
std::optional<Line> ChooseSlope(const PairSamples& s, const LineFeasibility& lines, size_t count,
                                const AlignOptions& opt, PairEstimate& est, bool& drift) {
  const auto [k_lo, k_hi] = lines.SlopeRange();
  Line line = FitLine(s.pu, s.pt);
  const double pspan = s.points() ? s.pu_max - s.pu_min : 0;
  drift = static_cast<int>(s.pt.size()) >= opt.min_drift_points && pspan > 0 &&
          std::fabs(line.slope) > opt.drift_sigmas * line.slope_se &&
          std::fabs(line.slope) * pspan >= opt.min_drift_effect_ns &&
          std::fabs(line.slope) <= opt.max_drift_ppm * 1e-6;
  if (!drift && s.lo_max > s.hi_min) {
    // A constant offset cannot satisfy the constraints; a drifting one can.
    if (static_cast<int>(count) < opt.min_drift_points || s.u_max <= s.u_min) {
      est.note = "rendezvous constraints contradict each other (empty interval, " +
                 Us(s.lo_max - s.hi_min) + " apart)";
      return std::nullopt;
    }
    drift = true;
    if (!s.points()) line.slope = (k_lo + k_hi) / 2;
  }
  line.intercept = 0;
  line.slope = drift ? std::clamp(line.slope, k_lo, k_hi) : 0;
  return line;
}

std::vector<double> Residuals(const PairSamples& s, const Line& line) {
  std::vector<double> r;
  for (size_t i = 0; i < s.pt.size(); ++i) r.push_back(s.pt[i] - line.slope * s.pu[i]);
  return r;
}

// The intercept: the centre of the exit differences at the chosen slope (CentreOfExits). With
// two exit modes, a fitted slope is the one that separates them best: least squares weighs how
// often each rank was last, which varies along a recording, and can be pulled so far off that
// the gap is smeared across the recording and the modes show only at the better slope. Sets
// line.intercept (and line.slope where the separating one wins); returns the residuals about it.
std::vector<double> CentreExits(const PairSamples& s, bool drift, double k_lo, double k_hi,
                                const AlignOptions& opt, Line& line, ExitCentre& centre) {
  std::vector<double> resid = Residuals(s, line);
  centre = CentreOfExits(resid, opt);
  if (drift && static_cast<int>(s.pt.size()) >= opt.min_mode_points) {
    const double half = std::max(opt.mode_slope_search_ppm * 1e-6, 4 * line.slope_se);
    const double separating = SeparatingSlope(s.pu, s.pt, std::max(k_lo, line.slope - half),
                                              std::min(k_hi, line.slope + half), opt);
    const double fitted = line.slope;
    line.slope = separating;
    std::vector<double> at_separating = Residuals(s, line);
    ExitCentre c = CentreOfExits(at_separating, opt);
    if (c.between_modes) {
      resid = std::move(at_separating);
      centre = c;
    } else {
      line.slope = fitted;
    }
  }
  line.intercept = centre.value;
  for (double& r : resid) r -= centre.value;
  return resid;
}

}  // namespace

PairEstimate EstimatePair(std::vector<PairConstraint> cs, int64_t anchor_ns,
                          const AlignOptions& opt) {
  PairEstimate est;
  est.anchor_ns = anchor_ns;
  est.count = static_cast<int64_t>(cs.size());
  if (cs.empty()) {
    est.note = "no shared rendezvous";
    return est;
  }
  const PairSamples s = Samples(cs, anchor_ns, est);
  if (Median(s.width) < 0) {
    est.note =
        "rendezvous constraints contradict the data (on one node an exit precedes an entry: "
        "the calls were no rendezvous)";
    return est;
  }
  LineFeasibility lines(s.u, s.lo, s.hi, opt.max_drift_ppm * 1e-6);
  if (!lines.Solve()) {
    est.note = "rendezvous constraints contradict each other (no offset line fits them all)";
    return est;
  }
  bool drift = false;
  std::optional<Line> chosen = ChooseSlope(s, lines, cs.size(), opt, est, drift);
  if (!chosen) return est;
  Line line = *chosen;
  const auto [k_lo, k_hi] = lines.SlopeRange();
  ExitCentre centre;
  const std::vector<double> resid = CentreExits(s, drift, k_lo, k_hi, opt, line, centre);
  const bool points = s.points();
  const double spread = points ? Mad(resid) : std::numeric_limits<double>::infinity();
  // The offset at the chosen slope (0 without drift): the exit-cluster estimate when the exits
  // agree closely and the estimate lies inside what the constraints allow; otherwise the centre
  // of that interval, the estimate whose worst-case error is smallest. Exit differences are
  // biased wherever ranks leave a collective in an order set by their place in the algorithm
  // (around a ring, for example): an estimate outside the interval proves such a bias, and
  // widely spread exits hide it.
  const double lo_i = drift ? lines.F(line.slope) : s.lo_max;
  const double hi_i = drift ? lines.G(line.slope) : s.hi_min;
  std::string how = centre.between_modes ? "exit modes' centre" : "exit cluster";
  const bool inside = line.intercept > lo_i && line.intercept < hi_i;
  // Standard error of a median of normal residuals: 1.25 sigma / sqrt(n), sigma = 1.4826 MAD.
  const double exit_se =
      points ? 1.25 * 1.4826 * spread / std::sqrt(static_cast<double>(s.pt.size())) : 0;
  if (!points || !inside || exit_se > opt.exit_estimate_spread_ratio * (hi_i - lo_i)) {
    line.intercept = (lo_i + hi_i) / 2;
    how = "interval centre";
  }
  how += " (" +
         (points ? "exit spread " + Us(spread) + ", " : std::string("no exits of one kind, ")) +
         "interval " + Us(hi_i - lo_i) + ")";
  // The bound holds for every clock pair whose drift the constraints (and max_drift_ppm)
  // allow, also when the point estimate assumes none: the distance from the estimate to the
  // farthest feasible line, largest at either end of the recording.
  double bound = 0;
  for (double at : {s.u_min, s.u_max}) {
    auto [l, h] = lines.RangeAt(at);
    double p = line.intercept + line.slope * at;
    bound = std::max({bound, p - l, h - p});
  }
  est.usable = true;
  est.offset_ns = line.intercept;
  est.drift_ppm = line.slope * 1e6;
  est.error_bound_ns = bound;
  est.note =
      (drift ? "linear drift fitted; " : "constant offset (bound allows undetected drift); ") + how;
  if (est.device_clock_unbounded > 0) {
    est.note += "; " + std::to_string(est.device_clock_unbounded) +
                " rendezvous rest on device times without a conversion bound (their ends only: a"
                " converted start may be late by any amount)";
  }
  return est;
}

}  // namespace rs::merge
