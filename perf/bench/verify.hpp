#pragma once
// kdforge-bench: brute-force references for a sample of queries, and the
// checks every measured row passes before its time is reported.
//
// Tie tolerant: a kNN row is right when its squared distances equal the
// brute-force ones rank by rank and each reported index really lies at the
// reported distance (any of several equidistant points is accepted). kdforge
// computes squared distances bit-identically on every backend (types.hpp), so
// its tolerance is 0; nanoflann sums in its own way and gets a few ulps.
#include "options.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace kdforge_bench {

template <class T, int D>
using HostPoint = std::array<T, D>;

/// Same operation order as kdforge::sq_distance: ((0 + d0^2) + d1^2) + ...
template <class T, int D>
inline T host_sq_distance(HostPoint<T, D> const& a, HostPoint<T, D> const& b) {
  T s = 0;
  for (int d = 0; d < D; ++d) {
    T const diff = a[d] - b[d];
    s = s + diff * diff;
  }
  return s;
}

template <class T, int D>
std::vector<HostPoint<T, D>> to_host_points(PointSet const& ps, std::int64_t count) {
  std::vector<HostPoint<T, D>> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    for (int d = 0; d < D; ++d) out[i][d] = T(ps.coords[std::size_t(i) * ps.dim + d]);
  return out;
}

/// Runs f(begin, end) over [0, n) on all hardware threads.
template <class F>
void parallel_chunks(std::int64_t n, F const& f) {
  unsigned const hw = std::max(1u, std::thread::hardware_concurrency());
  std::int64_t const parts = std::min<std::int64_t>(hw, std::max<std::int64_t>(1, n));
  std::vector<std::thread> pool;
  for (std::int64_t p = 0; p < parts; ++p)
    pool.emplace_back([&, p] { f(n * p / parts, n * (p + 1) / parts); });
  for (auto& t : pool) t.join();
}

/// Brute-force answers for the sampled queries: the kmax smallest squared
/// distances (as the dtype's values, widened to double) and radius counts.
struct Reference {
  std::vector<std::int64_t> queries; ///< sampled query indices, evenly spread
  int kmax = 0;
  std::vector<double> knn;           ///< sample x kmax ascending, +inf past n
  double sq_r = NAN;                 ///< T(r) * T(r), as the library squares it
  double tol = 0;                    ///< relative tolerance of the lo/hi counts (for nanoflann)
  std::vector<std::int64_t> count, count_lo, count_hi; ///< d <= sq_r, d < sq_r(1-tol), d <= sq_r(1+tol)
  std::int64_t n = 0;
  double at(std::size_t s, int j) const { return knn[s * std::size_t(kmax) + std::size_t(j)]; }
};

template <class T, int D>
Reference compute_reference(std::vector<HostPoint<T, D>> const& pts, std::vector<HostPoint<T, D>> const& qs,
                            int sample, int kmax, double radius, double tol) {
  Reference ref;
  std::int64_t const m = std::int64_t(qs.size()), n = std::int64_t(pts.size());
  ref.n = n;
  sample = int(std::min<std::int64_t>(sample, m));
  for (int s = 0; s < sample; ++s) ref.queries.push_back(std::int64_t(s) * m / sample);
  ref.kmax = std::max(1, kmax);
  ref.knn.assign(std::size_t(sample) * ref.kmax, std::numeric_limits<double>::infinity());
  bool const with_radius = radius >= 0 && std::isfinite(radius);
  T const sq_r = with_radius ? T(radius) * T(radius) : T(0);
  ref.sq_r = with_radius ? double(sq_r) : NAN;
  ref.tol = tol;
  ref.count.assign(sample, 0);
  ref.count_lo.assign(sample, 0);
  ref.count_hi.assign(sample, 0);
  double const lo = double(sq_r) * (1 - tol), hi = double(sq_r) * (1 + tol);
  parallel_chunks(sample, [&](std::int64_t b, std::int64_t e) {
    std::vector<T> best(ref.kmax);
    for (std::int64_t s = b; s < e; ++s) {
      auto const& q = qs[std::size_t(ref.queries[s])];
      int filled = 0;
      std::int64_t c = 0, c_lo = 0, c_hi = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        T const d2 = host_sq_distance<T, D>(q, pts[std::size_t(i)]);
        if (with_radius) {
          c += d2 <= sq_r;
          c_lo += double(d2) < lo; // strict: nanoflann's radius is exclusive
          c_hi += double(d2) <= hi;
        }
        if (filled < ref.kmax || d2 < best[filled - 1]) { // sorted insertion into the kmax best
          int j = filled < ref.kmax ? filled++ : filled - 1;
          while (j > 0 && best[j - 1] > d2) best[j] = best[j - 1], --j;
          best[j] = d2;
        }
      }
      for (int j = 0; j < filled; ++j) ref.knn[std::size_t(s) * ref.kmax + j] = double(best[j]);
      ref.count[s] = c, ref.count_lo[s] = c_lo, ref.count_hi[s] = c_hi;
    }
  });
  return ref;
}

inline bool close_enough(double a, double b, double tol) {
  if (a == b) return true; // also +inf == +inf
  return std::fabs(a - b) <= tol * std::max(std::fabs(a), std::fabs(b));
}

/// Outcome of the checks of one row; the first few failures are kept verbatim.
struct CheckResult {
  int ok = 0, total = 0;
  std::vector<std::string> failures;
  std::int64_t failed_queries = 0;
  void add(bool good, std::string const& why) {
    ++total;
    if (good) ++ok;
    else if (failures.size() < 5) failures.push_back(why);
  }
};

/// kNN rows (k columns) of the sampled queries: idx(s, j), dist(s, j) read
/// the implementation's answer for sample s (query ref.queries[s]), rank j;
/// missing neighbours must be (-1 or anything, +inf).
template <class T, int D, class Idx, class Dist>
CheckResult check_knn(Reference const& ref, std::vector<HostPoint<T, D>> const& pts,
                      std::vector<HostPoint<T, D>> const& qs, int k, double tol, Idx const& idx, Dist const& dist) {
  CheckResult r;
  std::int64_t const n = std::int64_t(pts.size());
  for (std::size_t s = 0; s < ref.queries.size(); ++s) {
    std::int64_t const q = ref.queries[s];
    std::ostringstream why;
    bool good = true;
    std::vector<std::int64_t> seen;
    for (int j = 0; j < k && good; ++j) {
      double const want = j < ref.kmax ? ref.at(s, j) : NAN;
      double const got = double(dist(s, j));
      std::int64_t const i = std::int64_t(idx(s, j));
      if (j >= n) { // no such neighbour
        good = std::isinf(got) && got > 0;
        if (!good) why << "rank " << j << ": " << n << " points only, expected +inf, got distance " << got;
        continue;
      }
      if (!close_enough(got, want, tol)) {
        good = false;
        why << "rank " << j << ": squared distance " << got << ", brute force " << want;
      } else if (i < 0 || i >= n) {
        good = false;
        why << "rank " << j << ": index " << i << " out of range [0, " << n << ")";
      } else if (std::find(seen.begin(), seen.end(), i) != seen.end()) {
        good = false;
        why << "rank " << j << ": index " << i << " repeated";
      } else {
        double const actual = double(host_sq_distance<T, D>(qs[std::size_t(q)], pts[std::size_t(i)]));
        if (!close_enough(actual, got, tol)) {
          good = false;
          why << "rank " << j << ": index " << i << " lies at squared distance " << actual << ", reported " << got;
        }
      }
      seen.push_back(i);
    }
    r.add(good, "query " + std::to_string(q) + ": " + why.str());
  }
  return r;
}

/// Radius counts of the sampled queries: count(s) must equal the brute-force
/// count (tol = 0), or lie in [count_lo, count_hi] (tol > 0: points within
/// rounding of the sphere may go either way).
template <class Count>
CheckResult check_radius_count(Reference const& ref, double tol, Count const& count) {
  CheckResult r;
  for (std::size_t s = 0; s < ref.queries.size(); ++s) {
    std::int64_t const c = std::int64_t(count(s));
    bool const good = tol > 0 ? c >= ref.count_lo[s] && c <= ref.count_hi[s] : c == ref.count[s];
    std::ostringstream why;
    why << "query " << ref.queries[s] << ": " << c << " points within the radius, brute force " << ref.count[s];
    r.add(good, why.str());
  }
  return r;
}

/// Radius rows: row(s) gives (length, idx(p), dist(p)) for sample s.
template <class T, int D, class Len, class Idx, class Dist>
CheckResult check_radius_rows(Reference const& ref, std::vector<HostPoint<T, D>> const& pts,
                              std::vector<HostPoint<T, D>> const& qs, double tol, Len const& len, Idx const& idx,
                              Dist const& dist) {
  CheckResult r;
  std::int64_t const n = std::int64_t(pts.size());
  for (std::size_t s = 0; s < ref.queries.size(); ++s) {
    std::int64_t const q = ref.queries[s], l = std::int64_t(len(s));
    std::ostringstream why;
    bool good = tol > 0 ? l >= ref.count_lo[s] && l <= ref.count_hi[s] : l == ref.count[s];
    if (!good) why << l << " neighbours, brute force " << ref.count[s];
    std::vector<std::int64_t> seen;
    for (std::int64_t p = 0; p < l && good; ++p) {
      std::int64_t const i = std::int64_t(idx(s, p));
      double const got = double(dist(s, p));
      if (i < 0 || i >= n) {
        good = false;
        why << "entry " << p << ": index " << i << " out of range";
        break;
      }
      double const actual = double(host_sq_distance<T, D>(qs[std::size_t(q)], pts[std::size_t(i)]));
      if (!close_enough(actual, got, tol) || actual > ref.sq_r * (1 + tol)) {
        good = false;
        why << "entry " << p << ": index " << i << " at squared distance " << actual << " (reported " << got
            << "), squared radius " << ref.sq_r;
      }
      seen.push_back(i);
    }
    if (good) {
      std::sort(seen.begin(), seen.end());
      if (std::adjacent_find(seen.begin(), seen.end()) != seen.end()) good = false, why << "an index is repeated";
    }
    r.add(good, "query " + std::to_string(q) + ": " + why.str());
  }
  return r;
}

} // namespace kdforge_bench
