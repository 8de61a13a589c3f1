#pragma once
// kNN by iterative range search: Zhou, Hou, Wang & Guo 2008, section 5.2
// (Algorithm 6) and Appendix A (Algorithm 7, the initial radius r0).
//
// As the paper: each query starts from a conservative radius r0 and runs
// niter range searches; each fills a histogram of nhist bins over
// [rmin, rmax] with the distances of the points within rmax, and the bin
// holding the k-th nearest becomes the next [rmin, rmax]. The histograms
// live in per-team scratch memory (shared memory on CUDA), one column of
// nhist counters per thread, laid out bin-major so a warp's 32 threads
// touch 32 different banks. r0 comes from Algorithm 7: the kNN radius Ri
// of the centres Ci of the nodes whose box radius is below alpha R and of
// nlevel levels under them (each found by the same histogram search from
// R), and for a query p, min(R, |p - Ci| + Ri) over the nodes on its path
// from the root.
//
// What differs, and why:
//  - Bin edges are compared in squared distances, each edge squared with
//    the rounding of the final range search (mul_rn): a point counted below
//    an edge is within that edge's radius in the final search too, so the
//    last range search finds at least k points, exactly, on every backend.
//  - Where fewer than k points lie within rmax (an r0 that was not
//    conservative: R is an estimate), the search doubles rmax (up to the
//    farthest corner of the tree's box) before it counts iterations, so the
//    result is never short of k points (short only when the tree holds
//    fewer than k).
//  - |p - Ci| + Ri is rounded up (times 1 + 8 eps), so r0 stays conservative
//    despite rounding.
//  - Every product and sum that decides a radius is rounded on its own (no
//    fused multiply-add), so r_k and the rows are the same on every backend.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/query/walks/box_stack.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>

namespace kdforge::detail {

/// 1 + 8 eps of T: a factor that rounds a radius up past a few roundings.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION constexpr T round_up() {
  return sizeof(T) == 4 ? T(1.0 + 8 * 1.1920928955078125e-07) : T(1.0 + 8 * 2.220446049250313e-16);
}
/// A step above zero for radii that are 0.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION constexpr T tiny() {
  return sizeof(T) == 4 ? T(1e-37) : T(1e-300);
}

/// Edge i of the histogram over [rmin, rmax] with nhist bins: rmin + i w,
/// rmax itself for i = nhist.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T histogram_edge(T rmin, T rmax, T w, int i, int nhist) {
  return i >= nhist ? rmax : backend::add_rn(rmin, backend::mul_rn(T(i), w));
}

/// Counts the points within sqrt(sq_r) of a query into a histogram column
/// (`hist[b * stride]`, bin b).
template <class T, class Index>
struct HistogramVisitor {
  T sq_r;
  T rmin, rmax, w;
  int nhist;
  int* hist;
  int stride;
  std::int64_t count = 0;
  static constexpr bool fixed_bound = true;
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  KOKKOS_FORCEINLINE_FUNCTION T sq_edge(int i) const {
    T const e = histogram_edge(rmin, rmax, w, i, nhist);
    return backend::mul_rn(e, e);
  }
  KOKKOS_FUNCTION void visit(Index, T d2) {
    if (!(d2 <= sq_r)) return;
    ++count;
    // a first guess from the distance, then the edges decide: bin b holds
    // sq_edge(b) < d2 <= sq_edge(b + 1) (bin 0 everything up to edge 1)
    int b = 0;
    if (w > T(0)) {
      T const g = (T(::sqrt(d2)) - rmin) / w;
      b = g > T(0) ? (g < T(nhist) ? int(g) : nhist - 1) : 0;
    }
    while (b > 0 && d2 <= sq_edge(b)) --b;
    while (b < nhist - 1 && d2 > sq_edge(b + 1)) ++b;
    ++hist[b * stride];
  }
};

/// The smallest radius whose square reaches every point of the tree from
/// row q (the farthest corner of the tree's box), rounded up.
template <class Tree, class QV>
KOKKOS_FUNCTION typename Tree::coordinate_type farthest_reach(Tree const& tree, QV const& queries, std::int64_t q) {
  using T = typename Tree::coordinate_type;
  T s = T(0);
  for (int d = 0; d < 3; ++d) {
    T const x = T(queries(q, d));
    T const a = x - tree.lo(0, d), b = tree.hi(0, d) - x;
    T const t = a > b ? a : b;
    s = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(s, backend::mul_rn(t, t));
  }
  T r = T(::sqrt(s));
  while (backend::mul_rn(r, r) < s) r = backend::add_rn(backend::mul_rn(r, round_up<T>()), tiny<T>());
  return r;
}

/// Algorithm 6 for rows [first, first + m) of `queries`, a team of `team`
/// threads each with one query: r_k of each, written to radii(i). r0 from
/// r0(i) (or `r0_all` when r0 is empty).
template <class Tree, class QV, class R0, class Radii>
struct HistogramSearch {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Tree tree;
  QV queries;
  R0 r0;
  T r0_all;
  Radii radii;
  std::int64_t m;
  int k;
  int nhist;
  int iterations;
  int team;

  template <class Member>
  KOKKOS_FUNCTION void operator()(Member const& member) const {
    using Scratch = Kokkos::View<int*, typename Member::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Scratch hist(member.team_scratch(0), std::size_t(team) * std::size_t(nhist));
    Kokkos::parallel_for(Kokkos::TeamThreadRange(member, team), [&](int t) {
      std::int64_t const q = std::int64_t(member.league_rank()) * team + t;
      if (q >= m) return;
      int* column = hist.data() + t;
      search(q, column);
    });
  }

  KOKKOS_FUNCTION void search(std::int64_t q, int* column) const {
    std::int64_t const n = std::int64_t(tree.size());
    T rmin = T(0);
    T rmax = r0.extent(0) ? T(r0(q)) : r0_all;
    T const far = farthest_reach(tree, queries, q);
    if (!(rmax <= far)) rmax = far; // also a NaN or infinite r0
    int it = 0;
    bool enough = false; // a walk found k within rmax (narrowing keeps it so)
    while (it < iterations || !enough) {
      T const w = (rmax - rmin) / T(nhist);
      for (int b = 0; b < nhist; ++b) column[b * team] = 0;
      HistogramVisitor<T, Index> v{backend::mul_rn(rmax, rmax), rmin, rmax, w, nhist, column, team};
      kernels::traverse_box_stack(tree, queries, q, v);
      if (v.count < k) {
        // fewer than k within rmax: the k-th lies beyond; grow, or stop
        // where rmax reaches every point already
        if (v.count >= n || rmax >= far) break;
        rmin = rmax;
        rmax = rmax > T(0) ? rmax + rmax : far / T(1024);
        if (!(rmax < far)) rmax = far;
        continue;
      }
      enough = true;
      if (it >= iterations) break;
      // the bin of the k-th nearest: the first whose running count reaches k
      std::int64_t sum = 0;
      int j = 0;
      for (; j < nhist; ++j) {
        sum += column[j * team];
        if (sum >= k) break;
      }
      if (j >= nhist) j = nhist - 1;
      T const lo = histogram_edge(rmin, rmax, w, j, nhist);
      T const hi = histogram_edge(rmin, rmax, w, j + 1, nhist);
      rmin = lo;
      rmax = hi;
      ++it;
    }
    radii(q) = rmax;
  }
};

/// Runs HistogramSearch over all rows of `queries`: one thread per query,
/// teams of 64 on GPUs (one of 32 bins x 64 threads of 4 bytes: 8 KiB of
/// shared memory), of 1 on CPUs.
template <class Exec, class Tree, class QV, class R0, class Radii>
void run_histogram_search(Exec const& exec, Tree const& tree, QV const& queries, R0 const& r0,
                          typename Tree::coordinate_type r0_all, Radii const& radii, int k, int nhist, int iterations) {
  std::int64_t const m = std::int64_t(queries.extent(0));
  if (m == 0) return;
  int const team = runs_on_gpu<Exec>() ? 64 : 1;
  using Policy = Kokkos::TeamPolicy<Exec>;
  using Scratch = Kokkos::View<int*, typename Exec::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  std::int64_t const league = (m + team - 1) / team;
  Policy policy(exec, int(league), team);
  policy.set_scratch_size(0, Kokkos::PerTeam(Scratch::shmem_size(std::size_t(team) * std::size_t(nhist))));
  Kokkos::parallel_for("kdforge::range_knn::histograms", policy,
                       HistogramSearch<Tree, QV, R0, Radii>{tree, queries, r0, r0_all, radii, m, k, nhist, iterations,
                                                            team});
}

// ---- Appendix A: r0 per query ----

template <class Tree, class Parent>
struct Parents {
  Tree tree;
  Parent parent;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    auto const node = tree.node(typename Tree::index_type(s));
    if (s == 0) parent(0) = -1;
    if (node.is_leaf()) return;
    parent(node.left) = typename Parent::value_type(s);
    parent(node.right) = typename Parent::value_type(s);
  }
};

/// Half the diagonal of node s's box (-1 for an empty node).
template <class Tree>
KOKKOS_FUNCTION double node_radius(Tree const& tree, std::int64_t s) {
  auto const node = tree.node(typename Tree::index_type(s));
  if (node.begin == node.end) return -1.0;
  double r = 0.0;
  for (int d = 0; d < 3; ++d) {
    double const e = double(tree.hi(s, d)) - double(tree.lo(s, d));
    r = backend::add_rn(r, backend::mul_rn(e, e)); // no fused multiply-add: the same nodes on every backend
  }
  return 0.5 * ::sqrt(r);
}

/// PRECOMPUTERADIUS's node set: box radius below alpha R and at most
/// nlevel - 1 levels under the first such node on the path from the root
/// (box radii shrink down a path, so those nodes are a run at its end).
template <class Tree, class Parent, class Flags>
struct SelectNodes {
  Tree tree;
  Parent parent;
  Flags flags;
  double limit; // alpha R
  int levels;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    double const r = node_radius(tree, s);
    int under = 0; // ancestors with a radius below the limit
    if (r >= 0.0 && r < limit) {
      for (std::int64_t a = parent(s); a >= 0; a = parent(a)) {
        if (!(node_radius(tree, a) < limit)) break;
        ++under;
      }
    }
    flags(s) = r >= 0.0 && r < limit && under < levels ? 1 : 0;
  }
};

template <class Tree, class Flags, class Centres, class Ids>
struct GatherCentres {
  Tree tree;
  Flags flags;
  Flags scan;
  Centres centres;
  Ids ids;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    if (!flags(s)) return;
    auto const c = scan(s);
    ids(c) = typename Ids::value_type(s);
    for (int d = 0; d < 3; ++d)
      centres(c, d) = typename Centres::value_type(0.5 * (double(tree.lo(s, d)) + double(tree.hi(s, d))));
  }
};

template <class Ids, class Radii, class NodeRadii>
struct ScatterNodeRadii {
  Ids ids;
  Radii radii;
  NodeRadii node_r;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const { node_r(ids(c)) = radii(c); }
};

/// ESTIMATERADIUS: min(R, |p - Ci| + Ri) over the nodes from the root to
/// p's leaf that have an Ri.
template <class Tree, class QV, class NodeRadii, class Out>
struct EstimateRadius {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  NodeRadii node_r;
  T big_r;
  Out out;
  KOKKOS_FUNCTION void operator()(std::int64_t q) const {
    T r = big_r;
    std::int64_t s = 0;
    while (true) {
      T const ri = node_r(s);
      if (ri < infinity<T>()) {
        T d2 = T(0);
        for (int d = 0; d < 3; ++d) {
          T const c = T(0.5 * (double(tree.lo(s, d)) + double(tree.hi(s, d))));
          T const t = T(queries(q, d)) - c;
          d2 = backend::add_rn(d2, backend::mul_rn(t, t));
        }
        T const e = (T(::sqrt(d2)) + ri) * round_up<T>();
        if (e < r) r = e;
      }
      auto const node = tree.node(typename Tree::index_type(s));
      if (node.is_leaf()) break;
      s = T(queries(q, node.split_dim)) <= node.split_value ? node.left : node.right;
    }
    out(q) = r;
  }
};

} // namespace kdforge::detail
