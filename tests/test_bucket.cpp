// Bucket k-d trees (Hu, Nooshabadi & Ahmadi 2015) with run-time dimension:
// the breadth-first builder's tree checked node by node (ranges nest,
// buckets hold at most B points, boxes are the exact boxes of their points,
// split planes separate the children, the height stays bounded), every
// query equal to brute force for D from 1 to 1000, float and double, both
// layouts, 32- and 64-bit indices, by the tree walk and by brute force,
// identical trees and answers on every backend, and bad input refused with
// a clear error. Approximate searches (leaf budget, (1 + eps), bounded
// queue), self-queries and the brute force on its own.
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace kdforge;
using test::to_host;

namespace {

enum class Data { uniform, clustered, duplicates, identical, one_axis, manifold };

char const* name(Data d) {
  switch (d) {
  case Data::uniform: return "uniform";
  case Data::clustered: return "clustered";
  case Data::duplicates: return "duplicates";
  case Data::identical: return "identical";
  case Data::one_axis: return "one_axis";
  case Data::manifold: return "manifold";
  }
  return "?";
}

// n x dim, row-major
template <class T>
std::vector<T> make_rows(std::size_t n, int dim, Data data, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<T> x(n * std::size_t(dim));
  std::vector<double> centers(8 * std::size_t(dim));
  for (auto& c : centers) c = u(rng);
  std::vector<double> basis(4 * std::size_t(dim)); // a 4-D subspace, for `manifold`
  for (auto& b : basis) b = g(rng) / std::sqrt(double(dim));
  for (std::size_t i = 0; i < n; ++i) {
    double t[4] = {u(rng), u(rng), u(rng), u(rng)};
    std::size_t const c = rng() % 8;
    for (int d = 0; d < dim; ++d) {
      double v = 0;
      switch (data) {
      case Data::uniform: v = u(rng); break;
      case Data::clustered: v = centers[c * dim + d] + 0.01 * g(rng); break;
      case Data::duplicates: v = double(rng() % 5) / 5.0; break;
      case Data::identical: v = 0.25; break;
      case Data::one_axis: v = d == 0 ? u(rng) : 0.5; break;
      case Data::manifold:
        for (int j = 0; j < 4; ++j) v += t[j] * basis[std::size_t(j) * dim + d];
        v += 1e-3 * g(rng);
        break;
      }
      x[i * std::size_t(dim) + std::size_t(d)] = T(v);
    }
  }
  return x;
}

// x as an n x dim View of layout L in Exec's memory
template <class Exec, class L, class T>
Kokkos::View<T**, L, typename Exec::memory_space> to_view(std::vector<T> const& x, std::size_t n, int dim) {
  Kokkos::View<T**, L, typename Exec::memory_space> v("rows", n, dim);
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < n; ++i)
    for (int d = 0; d < dim; ++d) h(i, d) = x[i * std::size_t(dim) + std::size_t(d)];
  Kokkos::deep_copy(v, h);
  return v;
}

// the entries (index or squared distance) in which two kNN results differ
template <class R>
std::int64_t differing_entries(R const& a, R const& b) {
  auto const ai = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.indices);
  auto const bi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.indices);
  auto const ad = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.sq_distances);
  auto const bd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.sq_distances);
  REQUIRE(ai.extent(0) == bi.extent(0));
  REQUIRE(ai.extent(1) == bi.extent(1));
  std::int64_t differ = 0;
  for (std::size_t i = 0; i < ai.extent(0); ++i)
    for (std::size_t j = 0; j < ai.extent(1); ++j) differ += ai(i, j) != bi(i, j) || ad(i, j) != bd(i, j) ? 1 : 0;
  return differ;
}

// squared distance summed in dimension order, as the library does
template <class T>
T sq_dist(T const* a, T const* b, int dim) {
  T s = T(0);
  for (int d = 0; d < dim; ++d) {
    T const t = a[d] - b[d];
    T const sq = t * t;
    s = d == 0 ? sq : s + sq;
  }
  return s;
}

template <class T>
std::vector<std::pair<T, std::int64_t>> brute(std::vector<T> const& pts, std::size_t n, T const* q, int dim,
                                              std::size_t k, T sq_bound) {
  std::vector<std::pair<T, std::int64_t>> all;
  for (std::size_t i = 0; i < n; ++i) {
    T const d2 = sq_dist(q, &pts[i * std::size_t(dim)], dim);
    if (d2 <= sq_bound) all.push_back({d2, std::int64_t(i)});
  }
  std::sort(all.begin(), all.end());
  if (all.size() > k) all.resize(k);
  return all;
}

// The tree's invariants, node by node.
template <class Tree, class T>
void check_bucket_tree(Tree const& tree, std::vector<T> const& pts, std::size_t n, int dim, std::int64_t bucket) {
  using Index = typename Tree::index_type;
  REQUIRE(std::int64_t(tree.size()) == std::int64_t(n));
  REQUIRE(tree.dim() == dim);
  auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
  auto const boxes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.boxes());
  auto const tp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.points());
  auto const idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.original_indices());
  std::vector<int> seen(n, 0);
  for (std::size_t p = 0; p < n; ++p) {
    REQUIRE(idx(p) >= 0);
    REQUIRE(std::size_t(idx(p)) < n);
    ++seen[std::size_t(idx(p))];
    for (int d = 0; d < dim; ++d) REQUIRE(tp(p, d) == pts[std::size_t(idx(p)) * dim + d]);
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == std::int64_t(n)); // every point once
  if (n == 0) {
    CHECK(tree.node_count() == 0);
    return;
  }
  REQUIRE(nodes(0).begin == 0);
  REQUIRE(std::size_t(nodes(0).end) == n);
  std::int64_t leaves = 0;
  // depth-first over the links: every node reached once, at a bounded depth
  std::vector<std::pair<Index, int>> todo{{Index(0), 0}};
  std::int64_t reached = 0;
  int deepest = 0;
  while (!todo.empty()) {
    auto const [s, depth] = todo.back();
    todo.pop_back();
    ++reached;
    deepest = std::max(deepest, depth);
    auto const node = nodes(s);
    REQUIRE(node.begin < node.end);
    for (int d = 0; d < dim; ++d) { // the exact box of the node's points
      T lo = std::numeric_limits<T>::infinity(), hi = -std::numeric_limits<T>::infinity();
      for (Index p = node.begin; p < node.end; ++p) {
        lo = std::min(lo, tp(p, d));
        hi = std::max(hi, tp(p, d));
      }
      REQUIRE(boxes(s, d) == lo);
      REQUIRE(boxes(s, dim + d) == hi);
    }
    if (node.is_leaf()) {
      ++leaves;
      CHECK(node.end - node.begin <= bucket);
      continue;
    }
    CHECK(node.end - node.begin > bucket);
    REQUIRE(node.left > s); // every child after its parent: what saved trees are checked for
    REQUIRE(node.right > s);
    auto const l = nodes(node.left), r = nodes(node.right);
    REQUIRE(l.begin == node.begin);
    REQUIRE(l.end == r.begin);
    REQUIRE(r.end == node.end);
    int const sd = node.split_dim;
    REQUIRE(sd >= 0);
    REQUIRE(sd < dim);
    for (Index p = l.begin; p < l.end; ++p) REQUIRE(tp(p, sd) <= node.split_value);
    for (Index p = r.begin; p < r.end; ++p) REQUIRE(tp(p, sd) >= node.split_value);
    todo.push_back({node.left, depth + 1});
    todo.push_back({node.right, depth + 1});
  }
  CHECK(reached == std::int64_t(tree.node_count()));
  CHECK(deepest == tree.height());
  CHECK(tree.height() <= 32 + 33); // midpoint levels, then halving
  CHECK(leaves * 2 - 1 == std::int64_t(tree.node_count()));
}

template <class Exec, class T, class Index, class L>
void check_queries(std::size_t n, int dim, Data data, std::int64_t bucket, std::uint64_t seed) {
  Exec exec;
  CAPTURE(n);
  CAPTURE(dim);
  CAPTURE(name(data));
  CAPTURE(bucket);
  auto const pts = make_rows<T>(n, dim, data, seed);
  std::size_t const m = 60;
  auto qs = make_rows<T>(m, dim, data == Data::identical ? Data::uniform : data, seed + 1);
  for (std::size_t i = 0; i < 10 && n > 0; ++i) // queries on data points: zero distances, ties
    for (int d = 0; d < dim; ++d) qs[i * dim + d] = pts[(i * 7 % n) * dim + d];
  BucketOptions bo;
  bo.bucket_size = bucket;
  auto const tree = build_bucket_tree<Index>(exec, to_view<Exec, L>(pts, n, dim), bo);
  check_bucket_tree(tree, pts, n, dim, bucket);
  auto const q = to_view<Exec, L>(qs, m, dim);
  // the walks: a thread per query (stack) and a team per query (team),
  // and what automatic picks on this backend
  std::pair<KnnStrategy, Traversal> const ways[] = {{KnnStrategy::automatic, Traversal::automatic},
                                                    {KnnStrategy::tree, Traversal::automatic},
                                                    {KnnStrategy::tree, Traversal::stack},
                                                    {KnnStrategy::tree, Traversal::team},
                                                    {KnnStrategy::brute_force, Traversal::automatic}};
  for (int k : {1, 4, 9, 40})
  for (auto const& [strategy, traversal] : ways) {
    CAPTURE(k);
    CAPTURE(int(strategy));
    CAPTURE(int(traversal));
    QueryOptions so;
    so.strategy = strategy;
    so.traversal = traversal;
    auto const r = knn(exec, tree, q, k, so);
    auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
    auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
    for (std::size_t i = 0; i < m; ++i) {
      auto const ref = brute(pts, n, &qs[i * dim], dim, std::size_t(k), std::numeric_limits<T>::infinity());
      for (int j = 0; j < k; ++j) {
        if (std::size_t(j) < ref.size()) {
          CHECK(hd(i, j) == ref[j].first);
          CHECK(std::int64_t(hi(i, j)) == ref[j].second);
        } else {
          CHECK(hi(i, j) == Index(-1));
          CHECK(std::isinf(hd(i, j)));
        }
      }
    }
  }
  // closest point within a cutoff, and without
  for (double cutoff : {std::numeric_limits<double>::infinity(), 0.3})
  for (auto const& [strategy, traversal] : ways) {
    CAPTURE(cutoff);
    CAPTURE(int(strategy));
    CAPTURE(int(traversal));
    QueryOptions qo;
    qo.cutoff_radius = cutoff;
    qo.strategy = strategy;
    qo.traversal = traversal;
    auto const c = closest_point(exec, tree, q, qo);
    auto const ci = to_host(c.indices);
    auto const cd = to_host(c.sq_distances);
    for (std::size_t i = 0; i < m; ++i) {
      auto const ref = brute(pts, n, &qs[i * dim], dim, 1, T(cutoff) * T(cutoff));
      if (ref.empty()) {
        CHECK(ci[i] == Index(-1));
      } else {
        CHECK(cd[i] == ref[0].first);
        CHECK(std::int64_t(ci[i]) == ref[0].second);
      }
    }
  }
  // radius: counts, sorted rows, capped rows
  double const radius = dim <= 3 ? 0.2 : 0.2 * std::sqrt(double(dim) / 6.0);
  T const sq_r = T(radius) * T(radius);
  auto const counts = to_host(radius_count(exec, tree, q, radius));
  RadiusOptions ro;
  ro.sort = true;
  auto const rs = radius_search(exec, tree, q, radius, ro);
  auto const off = to_host(rs.offsets);
  auto const ri = to_host(rs.indices);
  auto const rd = to_host(rs.sq_distances);
  ro.max_neighbors = 3;
  auto const rc = radius_search(exec, tree, q, radius, ro);
  auto const coff = to_host(rc.offsets);
  auto const cidx = to_host(rc.indices);
  for (std::size_t i = 0; i < m; ++i) {
    auto const ref = brute(pts, n, &qs[i * dim], dim, n, sq_r);
    CHECK(counts[i] == std::int64_t(ref.size()));
    REQUIRE(off[i + 1] - off[i] == std::int64_t(ref.size()));
    for (std::size_t j = 0; j < ref.size(); ++j) {
      CHECK(rd[std::size_t(off[i]) + j] == ref[j].first);
      CHECK(std::int64_t(ri[std::size_t(off[i]) + j]) == ref[j].second);
    }
    std::size_t const capped = std::min<std::size_t>(3, ref.size());
    REQUIRE(coff[i + 1] - coff[i] == std::int64_t(capped));
    for (std::size_t j = 0; j < capped; ++j) CHECK(std::int64_t(cidx[std::size_t(coff[i]) + j]) == ref[j].second);
  }
}

} // namespace

namespace {
// Sums of squares as a device may compute them: `ftz` flushes every
// subnormal result to zero (flush-to-zero arithmetic), `fused` adds each
// square into its sum with one rounding (a multiply-add, which compilers
// may emit). The volatiles keep this compiler from fusing where the mode
// says not to.
template <class T>
struct Arithmetic {
  bool ftz, fused;
  T flush(T x) const { return ftz && std::fpclassify(x) == FP_SUBNORMAL ? T(0) : x; }
  T square(T x) const {
    volatile T const p = x * x;
    return flush(p);
  }
  T add(T a, T b) const {
    volatile T const s = a + b;
    return flush(s);
  }
  T add_square(T acc, T x) const { return fused ? flush(std::fma(x, x, acc)) : add(acc, square(x)); }
};
} // namespace

TEST_CASE_TEMPLATE("the team walk's margin bounds any order of summation by the dimension-order sum", T, float,
                   double) {
  // Sums of the same squares in another order (the lanes' of a team walk)
  // differ from the dimension-order sum in the last bits, either way; the
  // margin's lower bound of such a sum must never exceed the dimension-order
  // sum (what the walk sums again before it takes a point), or the walk
  // would skip a point that belongs in the answer. A device flushes
  // subnormals everywhere or nowhere; the dimension-order sum rounds every
  // square (box_stack.hpp), the lanes' may fuse multiply-adds. The terms
  // span wide magnitudes, all subnormal squares, and squares about the
  // smallest normal value, where a flushed and fused order differs by more
  // than the relative shrink covers.
  std::mt19937_64 rng(77);
  double const wide = sizeof(T) == 4 ? -70.0 : -520.0; // some squares subnormal
  double const tiny = std::log2(double(std::numeric_limits<T>::denorm_min())) / 2;
  double const edge = std::log2(double(std::numeric_limits<T>::min())) / 2;
  int above_unshrunk = 0, above_without_slack = 0;
  for (int dim : {2, 7, 64, 512, 1000}) {
    kernels::TeamBoundMargin<T> const margin(dim);
    std::vector<T> t(std::size_t(dim), T(0));
    std::vector<int> order(static_cast<std::size_t>(dim));
    for (int trial = 0; trial < 200; ++trial) {
      double lo = -8.0, hi = 3.0;
      if (trial % 4 == 1) lo = wide;
      if (trial % 4 == 2) lo = tiny - 0.5, hi = tiny + 1.0;
      if (trial % 4 == 3) lo = edge - 1.0, hi = edge + 1.0;
      std::uniform_real_distribution<double> mag(lo, hi);
      for (int d = 0; d < dim; ++d) {
        T const size = T(std::exp2(mag(rng)));
        t[std::size_t(d)] = rng() % 2 ? size : -size;
      }
      for (int mode = 0; mode < 4; ++mode) {
        Arithmetic<T> const seq_arithmetic{(mode & 1) != 0, false};
        Arithmetic<T> const lane{(mode & 1) != 0, (mode & 2) != 0};
        T seq = T(0);
        for (int d = 0; d < dim; ++d) seq = seq_arithmetic.add_square(seq, t[std::size_t(d)]);
        for (int d = 0; d < dim; ++d) order[std::size_t(d)] = d;
        for (int shuffle = 0; shuffle < 4; ++shuffle) {
          std::shuffle(order.begin(), order.end(), rng);
          // strided partial sums, then a tree: a warp's order, and a shuffled one
          T lanes[32] = {};
          for (int d = 0; d < dim; ++d)
            lanes[d % 32] = lane.add_square(lanes[d % 32], t[std::size_t(order[std::size_t(d)])]);
          for (int w = 16; w >= 1; w /= 2)
            for (int l = 0; l < w; ++l) lanes[l] = lane.add(lanes[l], lanes[l + w]);
          T const other = lanes[0];
          CAPTURE(dim);
          CAPTURE(trial);
          CAPTURE(mode);
          CHECK(margin.lower(other) <= seq);
          above_unshrunk += other > seq ? 1 : 0;
          above_without_slack += other * margin.shrink > seq ? 1 : 0;
        }
      }
    }
  }
  // the margin is needed: without it, other orders exceed the dimension-order
  // sum; and its absolute slack too, where flushed and fused sums differ
  CHECK(above_unshrunk > 0);
  CHECK(above_without_slack > 0);
}

TEST_CASE_TEMPLATE("bucket trees answer every query like brute force, D from 1 to 1000", Exec, KDFORGE_TEST_SPACES) {
  for (int dim : {1, 2, 3, 7, 16, 64, 128, 512, 1000}) {
    std::size_t const n = dim <= 16 ? 1500 : dim <= 128 ? 600 : 200;
    for (Data data : {Data::uniform, Data::clustered, Data::duplicates, Data::manifold}) {
      check_queries<Exec, float, std::int32_t, Kokkos::LayoutRight>(n, dim, data, 8, 100 + dim);
    }
  }
}

TEST_CASE_TEMPLATE("the automatic strategy measures how much of the tree a walk looks at", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  int const dim = 64;
  std::size_t const n = 20000;
  // points on a line (one intrinsic dimension) and uniform in the cube
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  std::vector<float> line(n * std::size_t(dim)), cube(n * std::size_t(dim));
  for (std::size_t i = 0; i < n; ++i) {
    float const t = u(rng);
    for (int d = 0; d < dim; ++d) {
      line[i * std::size_t(dim) + std::size_t(d)] = t * float(d + 1) + 1e-4f * u(rng);
      cube[i * std::size_t(dim) + std::size_t(d)] = u(rng);
    }
  }
  auto const lp = to_view<Exec, Kokkos::LayoutRight>(line, n, dim);
  auto const cp = to_view<Exec, Kokkos::LayoutRight>(cube, n, dim);
  auto const lt = build_bucket_tree(exec, lp);
  auto const ct = build_bucket_tree(exec, cp);
  double const line_share = detail::sampled_visit_share(exec, lt, lp, 4);
  double const cube_share = detail::sampled_visit_share(exec, ct, cp, 4);
  CAPTURE(line_share);
  CAPTURE(cube_share);
  CHECK(line_share > 0.0);
  CHECK(line_share < 0.005);
  CHECK(cube_share > 0.5);
  CHECK(cube_share <= 1.0);
  // a cap ends a walk early, and the walk then counts as looking at every
  // point: walks below it count as before
  CHECK(detail::sampled_visit_share(exec, ct, cp, 4, 0.02) == doctest::Approx(1.0));
  CHECK(detail::sampled_visit_share(exec, lt, lp, 4, 0.02) == line_share);
  if constexpr (detail::runs_on_gpu<Exec>()) {
    CHECK_FALSE(detail::choose_brute_force(exec, lt, lp, 4));
    CHECK(detail::choose_brute_force(exec, ct, cp, 4));
  }
}

TEST_CASE_TEMPLATE("bucket trees: batches large enough for the team walk's leaf order answer like brute force", Exec,
                   KDFORGE_TEST_SPACES) {
  // 2^13 queries of 128 coordinates: the GPU team walk sorts them by leaf
  // (bucket_leaf_order) before walking; CPUs take them as given
  Exec exec;
  int const dim = 128;
  std::size_t const n = 3000, m = 8192;
  auto const pts = make_rows<float>(n, dim, Data::manifold, 31);
  auto qs = make_rows<float>(m, dim, Data::manifold, 32);
  for (std::size_t i = 0; i < m; i += 5) // points among the queries: ties at distance 0
    for (int d = 0; d < dim; ++d) qs[i * std::size_t(dim) + std::size_t(d)] = pts[(i % n) * std::size_t(dim) + std::size_t(d)];
  auto const p = to_view<Exec, Kokkos::LayoutRight>(pts, n, dim);
  auto const q = to_view<Exec, Kokkos::LayoutRight>(qs, m, dim);
  auto const tree = build_bucket_tree(exec, p);
  auto const order = detail::bucket_leaf_order(exec, tree, q);
  CHECK(std::int64_t(order.extent(0)) == (detail::runs_on_gpu<Exec>() ? std::int64_t(m) : 0));
  CHECK(detail::bucket_leaf_order(exec, tree, q, QueryOrder::as_given).extent(0) == 0);
  QueryOptions walk, brute;
  walk.strategy = KnnStrategy::tree;
  walk.traversal = Traversal::team;
  brute.strategy = KnnStrategy::brute_force;
  brute.brute_force_method = BruteForceMethod::tiles;
  for (int k : {1, 5}) {
    CAPTURE(k);
    CHECK(differing_entries(knn(exec, tree, q, k, walk), knn(exec, tree, q, k, brute)) == 0);
  }
  // the order is a permutation of the queries
  if (order.extent(0)) {
    auto const h = to_host(order);
    std::vector<char> seen(m, 0);
    for (std::size_t i = 0; i < m; ++i) {
      REQUIRE(h[i] < m);
      CHECK(!seen[h[i]]);
      seen[h[i]] = 1;
    }
  }
}

namespace {
// kNN (k = 1, 5, 40: the sorted lists and the heap) and closest point on a
// batch of m queries against brute force, and the thread walk's query order
template <class Exec, class T, class L>
void check_query_order(int dim, Data data, std::size_t n, std::size_t m, std::uint64_t seed) {
  CAPTURE(dim);
  CAPTURE(name(data));
  CAPTURE(m);
  Exec exec;
  auto const pts = make_rows<T>(n, dim, data, seed);
  auto qs = make_rows<T>(m, dim, data, seed + 1);
  for (std::size_t i = 0; i < m; i += 7) // points among the queries: ties at distance 0
    for (int d = 0; d < dim; ++d) qs[i * std::size_t(dim) + std::size_t(d)] = pts[(i % n) * std::size_t(dim) + std::size_t(d)];
  for (std::size_t i = 3; i < m; i += 101) // far outside the root's box, below and above it: codes clamped
    for (int d = 0; d < dim; ++d) qs[i * std::size_t(dim) + std::size_t(d)] += T(i % 2 ? 50 : -50);
  auto const p = to_view<Exec, Kokkos::LayoutRight>(pts, n, dim);
  auto const q = to_view<Exec, L>(qs, m, dim);
  auto const tree = build_bucket_tree(exec, p);
  QueryWorkspace<typename Exec::memory_space> ws;
  auto const order = detail::bucket_query_order(exec, tree, q, QueryOrder::automatic, ws);
  bool const ordered = !detail::runs_on_gpu<Exec>() && m >= 4096;
  CHECK(std::int64_t(order.extent(0)) == (ordered ? std::int64_t(m) : 0));
  if (order.extent(0)) {
    Kokkos::View<std::uint32_t*, Kokkos::HostSpace> h("order", m);
    Kokkos::deep_copy(h, order);
    std::vector<char> seen(m, 0); // a permutation of the queries
    for (std::size_t i = 0; i < m; ++i) {
      REQUIRE(h(i) < m);
      CHECK(!seen[h(i)]);
      seen[h(i)] = 1;
    }
    // in up to 3 dimensions (10 or more bits each) a spatial one:
    // consecutive queries lie nearer each other than in the given order
    // (medians of the steps; the far queries clamp to corners)
    if (dim <= 3) {
      auto const median_step = [&](auto const& at) {
        std::vector<T> steps;
        for (std::size_t i = 1; i < m; ++i) steps.push_back(sq_dist(&qs[at(i - 1) * dim], &qs[at(i) * dim], dim));
        std::nth_element(steps.begin(), steps.begin() + steps.size() / 2, steps.end());
        return steps[steps.size() / 2];
      };
      T const given = median_step([](std::size_t i) { return i; });
      T const sorted = median_step([&](std::size_t i) { return std::size_t(h(i)); });
      CAPTURE(given);
      CAPTURE(sorted);
      CHECK(sorted < T(0.25) * given);
    }
  }
  // QueryOptions::order: morton is the automatic order, as_given none
  CHECK(detail::bucket_query_order(exec, tree, q, QueryOrder::morton, ws).extent(0) == order.extent(0));
  CHECK(detail::bucket_query_order(exec, tree, q, QueryOrder::as_given, ws).extent(0) == 0);
  QueryOptions walk, brute;
  walk.strategy = KnnStrategy::tree;
  walk.traversal = Traversal::stack;
  brute.strategy = KnnStrategy::brute_force;
  brute.brute_force_method = BruteForceMethod::tiles;
  for (auto const [k, query_order] : {std::pair{1, QueryOrder::automatic}, std::pair{5, QueryOrder::automatic},
                                      std::pair{40, QueryOrder::automatic}, std::pair{5, QueryOrder::as_given}}) {
    CAPTURE(k);
    CAPTURE(int(query_order));
    walk.order = query_order;
    CHECK(differing_entries(knn(exec, tree, q, k, walk), knn(exec, tree, q, k, brute)) == 0);
  }
  walk.order = QueryOrder::automatic;
  auto const c = closest_point(exec, tree, q, walk);
  auto const b = knn(exec, tree, q, 1, brute);
  auto const ci = to_host(c.indices);
  auto const cd = to_host(c.sq_distances);
  auto const bi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.indices);
  auto const bd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.sq_distances);
  std::int64_t differ = 0;
  for (std::size_t i = 0; i < m; ++i) differ += ci[i] != bi(i, 0) || cd[i] != bd(i, 0) ? 1 : 0;
  CHECK(differ == 0);
  if (n >= 4096) { // self-queries in Morton order leave each point out of its own row
    walk.exclude_self = brute.exclude_self = true;
    auto const a = knn(exec, tree, p, 3, walk);
    CHECK(differing_entries(a, knn(exec, tree, p, 3, brute)) == 0);
    auto const ai = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.indices);
    std::int64_t own = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (int j = 0; j < 3; ++j) own += std::size_t(ai(i, j)) == i ? 1 : 0;
    CHECK(own == 0);
  }
}
} // namespace

TEST_CASE_TEMPLATE("bucket trees: batches the thread walk takes in Morton order answer like brute force", Exec,
                   KDFORGE_TEST_SPACES) {
  // from 4,096 queries on CPUs the thread-per-query walk sorts them by
  // Morton code in the root's box (bucket_query_order); 3 dimensions, 40
  // (the code's first 32), a lone dimension, double and column-major
  // queries, and a batch just below the threshold
  check_query_order<Exec, float, Kokkos::LayoutRight>(3, Data::uniform, 5000, 6000, 41);
  check_query_order<Exec, float, Kokkos::LayoutLeft>(40, Data::manifold, 1500, 4096, 43);
  check_query_order<Exec, double, Kokkos::LayoutLeft>(1, Data::duplicates, 5000, 5000, 45);
  check_query_order<Exec, float, Kokkos::LayoutRight>(2, Data::clustered, 2000, 4095, 47);
}

TEST_CASE_TEMPLATE("bucket trees: buckets of one, double, 64-bit indices, column-major input", Exec, KDFORGE_TEST_SPACES) {
  check_queries<Exec, float, std::int32_t, Kokkos::LayoutRight>(700, 3, Data::uniform, 1, 7);
  check_queries<Exec, double, std::int64_t, Kokkos::LayoutLeft>(700, 5, Data::clustered, 4, 8);
  check_queries<Exec, double, std::int32_t, Kokkos::LayoutLeft>(300, 64, Data::manifold, 16, 9);
}

TEST_CASE_TEMPLATE("bucket trees in many dimensions: copies in buckets of one tie with their boxes", Exec,
                   KDFORGE_TEST_SPACES) {
  // A bucket of one point is its own box. CPU walks sum box distances in
  // another order than point distances (host_box_distances) and stop sums
  // part way (abandon_block): a box's bound above its point's distance by
  // one rounding would skip a copy of a k-th neighbour that wins the tie by
  // its smaller index. Half the points here are copies.
  for (int dim : {17, 64, 512})
    check_queries<Exec, float, std::int32_t, Kokkos::LayoutRight>(400, dim, Data::duplicates, 1, 40 + std::uint64_t(dim));
  check_queries<Exec, double, std::int64_t, Kokkos::LayoutRight>(400, 100, Data::duplicates, 1, 41);
}

TEST_CASE_TEMPLATE("bucket trees on degenerate input: copies of one point, one axis, tiny sets", Exec,
                   KDFORGE_TEST_SPACES) {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(9), std::size_t(1000)}) {
    check_queries<Exec, float, std::int32_t, Kokkos::LayoutRight>(n, 3, Data::identical, 2, 11);
    check_queries<Exec, float, std::int32_t, Kokkos::LayoutRight>(n, 4, Data::one_axis, 1, 12);
  }
  // exponentially spaced values: midpoints peel one point per level; the
  // median levels must keep the height bounded
  Exec exec;
  std::size_t const n = 3000;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::ldexp(1.0f, -int(i % 120)) * (1.0f + float(i / 120) * 1e-3f);
  auto const tree = build_bucket_tree(exec, to_view<Exec, Kokkos::LayoutRight>(x, n, 1));
  check_bucket_tree(tree, x, n, 1, 8);
}

// The builder's rules (section II, and the fallbacks the builder's header
// states) replayed on the host, node by node along the built tree: the
// first widest side of the node's box, its midpoint, the median of the
// sorted range where the midpoint splits nothing off or from level 32 on,
// buckets of at most B points, children's lists as stable partitions of
// their parent's, equal coordinates in input order. Checks the split of
// every inner node and the order of every leaf's points.
template <class Tree, class T>
void check_bucket_rules(Tree const& tree, std::vector<T> const& pts, std::size_t n, int dim, std::int64_t bucket) {
  using Index = typename Tree::index_type;
  auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
  auto const idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.original_indices());
  auto const x = [&](std::int64_t i, int d) { return pts[std::size_t(i) * std::size_t(dim) + std::size_t(d)]; };
  // every dimension's list, sorted by (coordinate, input index)
  std::vector<std::vector<std::int64_t>> root(static_cast<std::size_t>(dim), std::vector<std::int64_t>(n));
  for (int d = 0; d < dim; ++d) {
    auto& l = root[std::size_t(d)];
    for (std::size_t i = 0; i < n; ++i) l[i] = std::int64_t(i);
    std::stable_sort(l.begin(), l.end(), [&](std::int64_t a, std::int64_t b) { return x(a, d) < x(b, d); });
  }
  struct Job {
    Index node;
    int level;
    std::vector<std::vector<std::int64_t>> lists;
  };
  std::vector<Job> todo;
  std::vector<char> goes_left(n, 0);
  if (n > 0) todo.push_back({Index(0), 0, root});
  std::int64_t checked = 0;
  while (!todo.empty()) {
    Job job = std::move(todo.back());
    todo.pop_back();
    ++checked;
    auto const node = nodes(job.node);
    auto const& l0 = job.lists[0];
    std::int64_t const count = std::int64_t(l0.size());
    REQUIRE(std::int64_t(node.end) - std::int64_t(node.begin) == count);
    if (count <= bucket) {
      REQUIRE(node.is_leaf());
      for (std::int64_t j = 0; j < count; ++j) CHECK(std::int64_t(idx(node.begin + Index(j))) == l0[std::size_t(j)]);
      continue;
    }
    REQUIRE(!node.is_leaf());
    int best = 0;
    T width = T(-1);
    for (int d = 0; d < dim; ++d) {
      auto const& l = job.lists[std::size_t(d)];
      T const w = x(l.back(), d) - x(l.front(), d);
      if (w > width) {
        width = w;
        best = d;
      }
    }
    auto const& lb = job.lists[std::size_t(best)];
    T const lo = x(lb.front(), best), hi = x(lb.back(), best);
    T value = T(0.5 * (double(lo) + double(hi)));
    std::int64_t left = 0;
    while (left < count && x(lb[std::size_t(left)], best) <= value) ++left;
    if (job.level >= kernels::bfs::midpoint_levels || left == 0 || left == count) {
      left = count / 2;
      value = x(lb[std::size_t(left - 1)], best);
    }
    CAPTURE(job.node);
    CAPTURE(job.level);
    REQUIRE(node.split_dim == best);
    REQUIRE(node.split_value == value);
    REQUIRE(std::int64_t(nodes(node.left).end) - std::int64_t(nodes(node.left).begin) == left);
    for (std::int64_t j = 0; j < left; ++j) goes_left[std::size_t(lb[std::size_t(j)])] = 1;
    Job l{node.left, job.level + 1, {}}, r{node.right, job.level + 1, {}};
    for (auto const& list : job.lists) {
      l.lists.emplace_back();
      r.lists.emplace_back();
      for (std::int64_t i : list) (goes_left[std::size_t(i)] ? l.lists.back() : r.lists.back()).push_back(i);
    }
    for (std::int64_t j = 0; j < left; ++j) goes_left[std::size_t(lb[std::size_t(j)])] = 0; // one buffer for all nodes
    todo.push_back(std::move(r));
    todo.push_back(std::move(l));
  }
  CHECK(checked == std::int64_t(tree.node_count()));
}

TEST_CASE_TEMPLATE("bucket trees follow the builder's rules node by node (a host replay)", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  struct Case {
    std::size_t n;
    int dim;
    Data data;
    std::int64_t bucket;
  };
  // buckets of one (2N - 1 nodes), ties, one axis, copies of one point,
  // many dimensions, tiny sets
  for (Case c : {Case{5000, 3, Data::uniform, 1}, Case{3000, 3, Data::uniform, 8}, Case{2000, 5, Data::clustered, 4},
                 Case{2500, 2, Data::duplicates, 3}, Case{1500, 4, Data::one_axis, 1}, Case{600, 3, Data::identical, 2},
                 Case{700, 40, Data::manifold, 16}, Case{1, 3, Data::uniform, 1}, Case{2, 2, Data::uniform, 1},
                 // levels of more than 2^16 children: compacted by a vendor scan, not by one
                 // team (in more than finish_max_dim dimensions: no node leaves the loop)
                 Case{150000, kernels::bfs::finish_max_dim + 1, Data::uniform, 1}}) {
    CAPTURE(c.n);
    CAPTURE(c.dim);
    CAPTURE(name(c.data));
    CAPTURE(c.bucket);
    auto const x = make_rows<float>(c.n, c.dim, c.data, 77);
    BucketOptions o;
    o.bucket_size = c.bucket;
    check_bucket_rules(build_bucket_tree(exec, to_view<Exec, Kokkos::LayoutRight>(x, c.n, c.dim), o), x, c.n, c.dim,
                       c.bucket);
  }
  // 100 groups of 40 exponentially spaced values: inside a group midpoints
  // peel one point per level until level 32 (then medians), so the tree has
  // far more nodes than midpoint trees of spread points (about 2.9 N / B)
  // and outgrows the builder's first allocation of nodes (3 N / B + 1024):
  // its growth is replayed too. In one dimension the team finish builds
  // the groups (the growth after the finish); in nine (the same values
  // along the first axis, zeros along the others) the breadth-first loop
  // does (the growth between levels).
  std::size_t const n = 4000;
  std::int64_t const b = 8;
  REQUIRE(kernels::bfs::finish_limit >= 40);
  REQUIRE(kernels::bfs::finish_max_dim < 9);
  for (int const dim : {1, 9}) {
    CAPTURE(dim);
    std::vector<double> x(n * std::size_t(dim), 0.0);
    for (std::size_t i = 0; i < n; ++i) x[i * std::size_t(dim)] = double(i / 40) + std::ldexp(0.5, -int(i % 40));
    BucketOptions o;
    o.bucket_size = b;
    auto const tree = build_bucket_tree(exec, to_view<Exec, Kokkos::LayoutLeft>(x, n, dim), o);
    REQUIRE(std::int64_t(tree.node_count()) > 3 * (std::int64_t(n) / b) + 1024);
    check_bucket_rules(tree, x, n, dim, b);
  }
}

TEST_CASE_TEMPLATE("bucket trees are identical on every backend", Exec, KDFORGE_TEST_SPACES) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  // 24-D: the loop alone; 3-D: the loop, then the team finish (teams of one
  // thread on hosts, of many on GPUs)
  for (auto const& c : {std::pair<int, std::size_t>{24, 2000}, std::pair<int, std::size_t>{3, 20000}}) {
    int const dim = c.first;
    std::size_t const n = c.second;
    CAPTURE(dim);
    auto const pts = make_rows<float>(n, dim, Data::clustered, 31);
    auto const qs = make_rows<float>(100, dim, Data::clustered, 32);
    auto const a = build_bucket_tree(Exec{}, to_view<Exec, Kokkos::LayoutRight>(pts, n, dim));
    auto const b = build_bucket_tree(Host{}, to_view<Host, Kokkos::LayoutRight>(pts, n, dim));
    CHECK(to_host(a.original_indices()) == to_host(b.original_indices()));
    REQUIRE(a.node_count() == b.node_count());
    CHECK(a.height() == b.height());
    auto const na = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.nodes());
    auto const nb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.nodes());
    std::int64_t same = 0;
    for (std::int64_t s = 0; s < std::int64_t(a.node_count()); ++s)
      same += na(s).left == nb(s).left && na(s).right == nb(s).right && na(s).begin == nb(s).begin &&
              na(s).end == nb(s).end && na(s).split_dim == nb(s).split_dim && na(s).split_value == nb(s).split_value;
    CHECK(same == std::int64_t(a.node_count()));
    auto const ra = knn(Exec{}, a, to_view<Exec, Kokkos::LayoutRight>(qs, 100, dim), 6);
    auto const rb = knn(Host{}, b, to_view<Host, Kokkos::LayoutRight>(qs, 100, dim), 6);
    auto const ia = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ra.indices);
    auto const ib = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, rb.indices);
    for (std::size_t i = 0; i < 100; ++i)
      for (int j = 0; j < 6; ++j) CHECK(ia(i, j) == ib(i, j));
  }
}

TEST_CASE_TEMPLATE("bucket trees refuse bad input with a clear error", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  Kokkos::View<float**, Kokkos::LayoutRight, MS> none("none", 10, 0);
  CHECK_THROWS_WITH_AS(build_bucket_tree(exec, none), doctest::Contains("D = 0"), Error);
  auto pts = make_rows<float>(100, 6, Data::uniform, 41);
  pts[37 * 6 + 2] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(build_bucket_tree(exec, to_view<Exec, Kokkos::LayoutRight>(pts, 100, 6)),
                       doctest::Contains("point 37"), Error);
  pts[37 * 6 + 2] = 0.5f;
  auto const good = to_view<Exec, Kokkos::LayoutRight>(pts, 100, 6);
  BucketOptions bo;
  bo.bucket_size = 0;
  CHECK_THROWS_WITH_AS(build_bucket_tree(exec, good, bo), doctest::Contains("bucket_size"), Error);
  auto const tree = build_bucket_tree(exec, good);
  auto qs = make_rows<float>(20, 6, Data::uniform, 42);
  qs[5 * 6 + 4] = std::numeric_limits<float>::infinity();
  auto const bad_q = to_view<Exec, Kokkos::LayoutRight>(qs, 20, 6);
  CHECK_THROWS_WITH_AS(knn(exec, tree, bad_q, 3), doctest::Contains("query 5"), Error);
  CHECK_THROWS_WITH_AS(radius_search(exec, tree, bad_q, 0.1), doctest::Contains("query 5"), Error);
  auto const wrong_dim = to_view<Exec, Kokkos::LayoutRight>(make_rows<float>(20, 5, Data::uniform, 43), 20, 5);
  CHECK_THROWS_WITH_AS(knn(exec, tree, wrong_dim, 3), doctest::Contains("5 coordinates"), Error);
  CHECK_THROWS_AS(knn(exec, tree, good, 0), Error);
  // more than the memory has, or may use: refused before it starts
  bo.bucket_size = 8;
  bo.memory_limit = 1000;
  CHECK_THROWS_WITH_AS(build_bucket_tree(exec, good, bo), doctest::Contains("1000 bytes available"), OutOfMemoryError);
}

// Neighbours reported must be real: distinct indices, the distance the
// index has, ascending.
template <class T, class HI, class HD>
void check_rows_are_real(std::vector<T> const& pts, std::vector<T> const& qs, int dim, std::size_t m, int k, HI const& hi,
                         HD const& hd) {
  for (std::size_t i = 0; i < m; ++i) {
    std::vector<std::int64_t> row;
    for (int j = 0; j < k; ++j) {
      if (hi(i, j) < 0) {
        CHECK(std::isinf(hd(i, j)));
        continue;
      }
      row.push_back(std::int64_t(hi(i, j)));
      CHECK(hd(i, j) == sq_dist(&qs[i * dim], &pts[std::size_t(hi(i, j)) * dim], dim));
      if (j > 0) CHECK(hd(i, j - 1) <= hd(i, j));
    }
    std::sort(row.begin(), row.end());
    CHECK(std::adjacent_find(row.begin(), row.end()) == row.end());
  }
}

TEST_CASE_TEMPLATE("bucket trees: approximate kNN by best-first search, exact without limits", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (int dim : {3, 16, 128}) {
    CAPTURE(dim);
    std::size_t const n = dim <= 16 ? 3000 : 800, m = 50;
    auto const pts = make_rows<float>(n, dim, Data::manifold, 200 + dim);
    auto const qs = make_rows<float>(m, dim, Data::manifold, 300 + dim);
    auto const tree = build_bucket_tree(exec, to_view<Exec, Kokkos::LayoutRight>(pts, n, dim));
    auto const q = to_view<Exec, Kokkos::LayoutRight>(qs, m, dim);
    for (int k : {1, 5, 12, 40}) {
      CAPTURE(k);
      // unlimited: no budget, eps 0, a queue that cannot fill (>= the nodes)
      ApproximateOptions unlimited;
      unlimited.queue_capacity = int(tree.node_count()) + 1;
      auto const r = knn_approximate(exec, tree, q, k, unlimited);
      auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
      auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
      // eps: the j-th distance within (1 + eps) of the true j-th
      ApproximateOptions loose = unlimited;
      loose.eps = 0.5;
      auto const e = knn_approximate(exec, tree, q, k, loose);
      auto const ei = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, e.indices);
      auto const ed = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, e.sq_distances);
      // a budget of two buckets and a small queue: fewer exact answers, but
      // every one reported is a real neighbour, no index twice
      ApproximateOptions tight;
      tight.max_leaves = 2;
      tight.queue_capacity = 4;
      auto const t = knn_approximate(exec, tree, q, k, tight);
      auto const ti = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, t.indices);
      auto const td = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, t.sq_distances);
      for (std::size_t i = 0; i < m; ++i) {
        auto const ref = brute(pts, n, &qs[i * dim], dim, std::size_t(k), std::numeric_limits<float>::infinity());
        for (int j = 0; j < k; ++j) {
          CHECK(hd(i, j) == ref[std::size_t(j)].first);
          CHECK(std::int64_t(hi(i, j)) == ref[std::size_t(j)].second);
          CHECK(ei(i, j) >= 0);
          CHECK(double(ed(i, j)) <= 2.25 * double(ref[std::size_t(j)].first) * (1 + 1e-6) + 1e-30);
        }
      }
      check_rows_are_real(pts, qs, dim, m, k, ei, ed);
      check_rows_are_real(pts, qs, dim, m, k, ti, td);
    }
  }
  // bad options
  auto const pts = make_rows<float>(100, 4, Data::uniform, 5);
  auto const tree = build_bucket_tree(exec, to_view<Exec, Kokkos::LayoutRight>(pts, 100, 4));
  ApproximateOptions bad;
  bad.eps = -0.1;
  CHECK_THROWS_WITH_AS(knn_approximate(exec, tree, to_view<Exec, Kokkos::LayoutRight>(pts, 100, 4), 3, bad),
                       doctest::Contains("eps"), Error);
}

TEST_CASE_TEMPLATE("bucket trees and brute force: self-queries leave each point out of its own row", Exec,
                   KDFORGE_TEST_SPACES) {
  Exec exec;
  // 3-D: GPUs walk with the dimension fixed (kernels/query/bucket.hpp, fixed_walk_dim)
  for (int dim : {3, 10}) {
    CAPTURE(dim);
    std::size_t const n = 900;
    auto pts = make_rows<double>(n, dim, Data::clustered, 61);
    for (int d = 0; d < dim; ++d) pts[7 * dim + d] = pts[3 * dim + d]; // a duplicate stays a neighbour of its twin
    auto const p = to_view<Exec, Kokkos::LayoutLeft>(pts, n, dim);
    auto const tree = build_bucket_tree(exec, p);
    int const k = 5;
    QueryOptions qo;
    qo.exclude_self = true;
    ApproximateOptions ao;
    ao.exclude_self = true;
    ao.queue_capacity = 10000;
    BruteForceOptions bo;
    bo.exclude_self = true;
    for (auto const& [strategy, traversal] : {std::pair{KnnStrategy::tree, Traversal::stack},
                                              std::pair{KnnStrategy::tree, Traversal::team},
                                              std::pair{KnnStrategy::brute_force, Traversal::automatic}}) {
      CAPTURE(int(traversal));
      qo.strategy = strategy;
      qo.traversal = traversal;
      auto const r = knn(exec, tree, p, k, qo);
      auto const c = closest_point(exec, tree, p, qo);
      auto const a = knn_approximate(exec, tree, p, k, ao);
      auto const b = knn_brute_force(exec, p, p, k, bo);
      auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
      auto const ai = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.indices);
      auto const bi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.indices);
      auto const ci = to_host(c.indices);
      for (std::size_t i = 0; i < n; ++i) {
        // the reference: all points but i
        std::vector<std::pair<double, std::int64_t>> all;
        for (std::size_t j = 0; j < n; ++j)
          if (j != i) all.push_back({sq_dist(&pts[i * dim], &pts[j * dim], dim), std::int64_t(j)});
        std::sort(all.begin(), all.end());
        for (int j = 0; j < k; ++j) {
          CHECK(std::int64_t(hi(i, j)) == all[std::size_t(j)].second);
          CHECK(std::int64_t(ai(i, j)) == all[std::size_t(j)].second);
          CHECK(std::int64_t(bi(i, j)) == all[std::size_t(j)].second);
        }
        CHECK(std::int64_t(ci[i]) == all[0].second);
      }
      CHECK(hi(3, 0) == 7);
      CHECK(hi(7, 0) == 3);
    }
    // the queries must be the points
    auto const fewer = to_view<Exec, Kokkos::LayoutLeft>(pts, n - 1, dim);
    CHECK_THROWS_WITH_AS(knn(exec, tree, fewer, k, qo), doctest::Contains("exclude_self"), Error);
    CHECK_THROWS_WITH_AS(knn_brute_force(exec, p, fewer, k, bo), doctest::Contains("exclude_self"), Error);
  }
}

TEST_CASE_TEMPLATE("knn_brute_force equals the reference for any dimension, layout and k", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (int dim : {1, 3, 31, 33, 100, 513}) { // around the kernel's chunks of 16 and 32 dimensions
    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(63), std::size_t(130)}) {
      CAPTURE(dim);
      CAPTURE(n);
      std::size_t const m = 70; // more than one team of queries, a partial last one
      auto const pts = make_rows<float>(n, dim, Data::duplicates, 500 + dim);
      auto const qs = make_rows<float>(m, dim, Data::uniform, 600 + dim);
      auto const p = to_view<Exec, Kokkos::LayoutLeft>(pts, n, dim);
      auto const q = to_view<Exec, Kokkos::LayoutRight>(qs, m, dim);
      for (int k : {1, 7, 64, 200}) {
        CAPTURE(k);
        auto const r = knn_brute_force<std::int64_t>(exec, p, q, k);
        auto const hi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.indices);
        auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
        for (std::size_t i = 0; i < m; ++i) {
          auto const ref = brute(pts, n, &qs[i * dim], dim, std::size_t(k), std::numeric_limits<float>::infinity());
          for (int j = 0; j < k; ++j) {
            if (std::size_t(j) < ref.size()) {
              CHECK(hd(i, j) == ref[std::size_t(j)].first);
              CHECK(hi(i, j) == ref[std::size_t(j)].second);
            } else {
              CHECK(hi(i, j) == -1);
              CHECK(std::isinf(hd(i, j)));
            }
          }
        }
      }
    }
  }
  // a cutoff, and bad input
  auto pts = make_rows<double>(50, 8, Data::uniform, 7);
  BruteForceOptions bo;
  bo.cutoff_radius = 0.5;
  auto const p = to_view<Exec, Kokkos::LayoutRight>(pts, 50, 8);
  auto const r = knn_brute_force(exec, p, p, 50, bo);
  auto const hd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, r.sq_distances);
  for (int i = 0; i < 50; ++i)
    for (int j = 0; j < 50; ++j) CHECK((std::isinf(hd(i, j)) || hd(i, j) <= 0.25));
  CHECK_THROWS_AS(knn_brute_force(exec, p, p, 0), Error);
  auto const other = to_view<Exec, Kokkos::LayoutRight>(make_rows<double>(5, 7, Data::uniform, 8), 5, 7);
  CHECK_THROWS_WITH_AS(knn_brute_force(exec, p, other, 2), doctest::Contains("7"), Error);
  pts[11 * 8 + 3] = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_WITH_AS(knn_brute_force(exec, to_view<Exec, Kokkos::LayoutRight>(pts, 50, 8), p, 2),
                       doctest::Contains("point 11"), Error);
}

// The GEMM selects candidates and the exact distances decide: its rows must
// equal the tiled kernel's bit for bit, ties included, across query blocks
// and point tiles, where near-ties send queries back to the tiled kernel,
// and where coordinates are too large for the product.
TEST_CASE_TEMPLATE("brute force by GEMM and by tiles return identical rows", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  if constexpr (!backend::has_gemm<Exec>) {
    BruteForceOptions bo;
    bo.method = BruteForceMethod::gemm;
    auto const p = to_view<Exec, Kokkos::LayoutRight>(make_rows<float>(20, 16, Data::uniform, 1), 20, 16);
    CHECK_THROWS_WITH_AS(knn_brute_force(exec, p, p, 2, bo), doctest::Contains("no GEMM"), Error);
  } else {
    auto same = [&](auto const& p, auto const& q, int k, BruteForceOptions bo) {
      bo.method = BruteForceMethod::tiles;
      auto const a = knn_brute_force<std::int64_t>(exec, p, q, k, bo);
      bo.method = BruteForceMethod::gemm;
      auto const b = knn_brute_force<std::int64_t>(exec, p, q, k, bo);
      auto const ai = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.indices);
      auto const bi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.indices);
      auto const ad = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.sq_distances);
      auto const bd = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.sq_distances);
      std::size_t bad = 0;
      for (std::size_t i = 0; i < ai.extent(0); ++i)
        for (std::size_t j = 0; j < ai.extent(1); ++j)
          bad += ai(i, j) != bi(i, j) || !(ad(i, j) == bd(i, j) || (std::isinf(ad(i, j)) && std::isinf(bd(i, j))));
      CHECK(bad == 0);
    };
    for (Data data : {Data::uniform, Data::clustered, Data::duplicates, Data::identical, Data::manifold}) {
      for (int dim : {16, 64, 300}) {
        CAPTURE(name(data));
        CAPTURE(dim);
        // more queries than a CPU block (1024) and more points than a tile
        // of it (8192 at 32 MiB), for float; fewer for double
        std::size_t const n = dim == 16 ? 9000 : 600, m = dim == 16 ? 1100 : 150;
        auto const pts = make_rows<float>(n, dim, data, 900 + dim);
        auto const qs = make_rows<float>(m, dim, Data::uniform, 901 + dim);
        auto const p = to_view<Exec, Kokkos::LayoutLeft>(pts, n, dim);
        auto const q = to_view<Exec, Kokkos::LayoutRight>(qs, m, dim);
        for (int k : {1, 4, 40}) same(p, q, k, {});
        BruteForceOptions cut;
        cut.cutoff_radius = data == Data::uniform ? 0.3 * std::sqrt(double(dim)) : 0.5;
        same(p, q, 8, cut);
        BruteForceOptions self;
        self.exclude_self = true;
        same(p, p, 5, self);
      }
    }
    // double, k above the point count, no points
    auto const pd = make_rows<double>(90, 20, Data::clustered, 31);
    auto const qd = make_rows<double>(40, 20, Data::uniform, 32);
    same(to_view<Exec, Kokkos::LayoutRight>(pd, 90, 20), to_view<Exec, Kokkos::LayoutLeft>(qd, 40, 20), 100, {});
    same(to_view<Exec, Kokkos::LayoutRight>(pd, 0, 20), to_view<Exec, Kokkos::LayoutLeft>(qd, 40, 20), 3, {});
    // squared norms beyond the GEMM's safe bound (float max / 64) while every
    // coordinate is within the accepted range (+-1.15e18 in 16-D float):
    // the tiled kernel answers
    auto big = make_rows<float>(200, 16, Data::uniform, 33);
    for (std::size_t i = 0; i < 16; ++i) big[i] = 1e18f;
    auto bq = make_rows<float>(30, 16, Data::uniform, 34);
    for (std::size_t i = 16; i < 32; ++i) bq[i] = -1e18f;
    REQUIRE(16.0 * 1e18 * 1e18 > detail::gemm_brute_safe_norm<float>());
    REQUIRE(1e18 * 1e18 <= double(detail::max_sq_coordinate<float>(16)));
    same(to_view<Exec, Kokkos::LayoutRight>(big, 200, 16), to_view<Exec, Kokkos::LayoutRight>(bq, 30, 16), 3, {});
    same(to_view<Exec, Kokkos::LayoutRight>(bq, 30, 16), to_view<Exec, Kokkos::LayoutRight>(make_rows<float>(30, 16, Data::uniform, 35), 30, 16), 3, {});
    // bucket trees answering by brute force take the method too
    auto const tp = to_view<Exec, Kokkos::LayoutRight>(make_rows<float>(500, 32, Data::manifold, 36), 500, 32);
    auto const tree = build_bucket_tree(exec, tp);
    QueryOptions qo;
    qo.strategy = KnnStrategy::brute_force;
    qo.brute_force_method = BruteForceMethod::tiles;
    auto const a = knn(exec, tree, tp, 6, qo);
    qo.brute_force_method = BruteForceMethod::gemm;
    auto const b = knn(exec, tree, tp, 6, qo);
    auto const ai = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.indices);
    auto const bi = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.indices);
    std::size_t bad = 0;
    for (std::size_t i = 0; i < 500; ++i)
      for (int j = 0; j < 6; ++j) bad += ai(i, j) != bi(i, j);
    CHECK(bad == 0);
    BruteForceOptions bo;
    bo.method = BruteForceMethod::gemm;
    CHECK_THROWS_WITH_AS(knn_brute_force(exec, tp, tp, 300, bo), doctest::Contains("limit"), Error);
  }
}

TEST_CASE_TEMPLATE("options only bucket trees have are refused on other trees", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  Kokkos::View<Point<float, 3>*, MS> pts("pts", 100);
  auto h = Kokkos::create_mirror_view(pts);
  for (int i = 0; i < 100; ++i) h(i) = Point<float, 3>{{float(i % 7), float(i % 11), float(i % 13)}};
  Kokkos::deep_copy(pts, h);
  auto const tree = build_left_balanced(exec, pts);
  QueryOptions qo;
  qo.strategy = KnnStrategy::brute_force;
  CHECK_THROWS_WITH_AS(knn(exec, tree, pts, 3, qo), doctest::Contains("knn_brute_force"), Error);
  qo.strategy = KnnStrategy::automatic;
  qo.exclude_self = true;
  CHECK_THROWS_WITH_AS(closest_point(exec, tree, pts, qo), doctest::Contains("bucket trees"), Error);
  ApproximateOptions ao;
  ao.exclude_self = true;
  CHECK_THROWS_WITH_AS(knn_approximate(exec, tree, pts, 3, ao), doctest::Contains("bucket trees"), Error);
  // the team walk is the bucket trees'; their walks are stack and team
  qo = QueryOptions{};
  qo.traversal = Traversal::team;
  CHECK_THROWS_WITH_AS(knn(exec, tree, pts, 3, qo), doctest::Contains("Traversal::team"), Error);
  CHECK_THROWS_WITH_AS(closest_point(exec, tree, pts, qo), doctest::Contains("Traversal::team"), Error);
  // the level-order trees' walks walk bucket trees with a thread per query
  auto const rows = make_rows<float>(100, 4, Data::uniform, 5);
  auto const rv = to_view<Exec, Kokkos::LayoutRight>(rows, 100, 4);
  auto const bucket = build_bucket_tree(exec, rv);
  QueryOptions so;
  so.strategy = KnnStrategy::tree;
  so.traversal = Traversal::stack;
  auto const ref = to_host(closest_point(exec, bucket, rv, so).indices);
  for (Traversal t : {Traversal::stack_free, Traversal::trail}) {
    so.traversal = t;
    CHECK(to_host(closest_point(exec, bucket, rv, so).indices) == ref);
  }
}
