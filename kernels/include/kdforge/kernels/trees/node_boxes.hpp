#pragma once
// Node boxes of level-order trees: for every inner node, the tight box of the
// points of its sub-tree. A k-d tree's cells partition space, so where the
// points fill only a thin or clustered part of it (surfaces, planes, lines,
// blobs) a query's ball meets many cells that hold nothing near it; a walk
// that knows where the points really are prunes those sub-trees by the
// distance to their box instead (the BVH's advantage on such data, kept in
// a k-d tree).
//
// Built bottom-up, one level per launch: box(s) = point(s) + box(2s + 1) +
// box(2s + 2). Leaves have no box (a leaf's box is its point). Whether a
// tree keeps its boxes is the build option BuildOptions::node_boxes; its
// automatic choice (see box_fill) keeps them where the points leave most of
// the cells empty and drops them where they fill the cells (uniform data),
// whose walks would spend loads and arithmetic on boxes that prune nothing
// the split planes do not.
//
// In 2-D and 3-D every inner node also gets the box of its points along
// their principal axes (oriented_boxes.hpp), which the walks test where it
// is markedly thinner than the axis-aligned one: patches of tilted planes,
// spheres and scanned surfaces, and pieces of lines that do not run along
// an axis.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/trees/level_order.hpp>
#include <kdforge/kernels/trees/oriented_boxes.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace kdforge::kernels {

/// A sub-tree's box, the smallest input index of its points (for the kNN
/// walks' tie-aware pruning: walks/common.hpp), and whether the node's
/// principal-axes box is worth testing too (`framed`), aligned for
/// whole-vector loads on GPUs (two 16-byte loads for float, D = 3, index and
/// flag in what would be padding).
template <class T, int D, class Index>
struct alignas(16) NodeBox {
  T lo[D];
  T hi[D];
  Index min_index;
  std::int32_t framed;
};

/// What a tree keeps per inner node: its box and, in 2-D and 3-D, its
/// principal-axes box, side by side so that a walk that tests both reads
/// one contiguous record (96 bytes for float, D = 3).
template <class T, int D, class Index, bool Oriented = orientable<D>>
struct NodeRecord {
  NodeBox<T, D, Index> box;
  OrientedBox<T, D> frame;
};
template <class T, int D, class Index>
struct NodeRecord<T, D, Index, false> {
  NodeBox<T, D, Index> box;
};

/// The node boxes of a tree: box(s) for the inner nodes s < count, and in
/// 2-D and 3-D their principal-axes boxes frame(s).
template <class MemorySpace, class T, int D, class Index>
struct NodeBoxes {
  using coordinate_type = T;
  using index_type = Index;
  static constexpr int dimension = D;
  static constexpr bool always_empty = false;
  Kokkos::View<NodeRecord<T, D, Index> const*, MemorySpace, Kokkos::MemoryTraits<Kokkos::RandomAccess>> records;
  Index count = 0;
  KOKKOS_FORCEINLINE_FUNCTION bool empty() const { return count == 0; }
  KOKKOS_FORCEINLINE_FUNCTION bool has(Index s) const { return s < count; }
  KOKKOS_FORCEINLINE_FUNCTION NodeBox<T, D, Index> box(Index s) const { return records(s).box; }
  template <int E = D, class = std::enable_if_t<orientable<E>>>
  KOKKOS_FORCEINLINE_FUNCTION OrientedBox<T, D> frame(Index s) const {
    return records(s).frame;
  }
  /// Bytes the boxes take.
  std::size_t bytes() const { return records.extent(0) * sizeof(NodeRecord<T, D, Index>); }
};

/// The node boxes of a tree known to have none (see WithoutBoxes): the
/// walks' box code is compiled out.
template <class T, int D, class Index>
struct NoNodeBoxes {
  using coordinate_type = T;
  using index_type = Index;
  static constexpr int dimension = D;
  static constexpr bool always_empty = true;
  KOKKOS_FORCEINLINE_FUNCTION static constexpr bool empty() { return true; }
  KOKKOS_FORCEINLINE_FUNCTION static constexpr bool has(Index) { return false; }
  KOKKOS_FORCEINLINE_FUNCTION NodeBox<T, D, Index> box(Index) const { return {}; }
  KOKKOS_FORCEINLINE_FUNCTION OrientedBox<T, D> frame(Index) const { return {}; }
};

/// A tree seen without its node boxes: the GPU query kernels are compiled
/// for trees with boxes and for trees without (see
/// detail::with_fixed_split), so the box tests and the box-ordered steps,
/// which cost registers in every iteration, cost the walks of trees
/// without boxes (uniform data) nothing.
template <class Tree>
struct WithoutBoxes : Tree {
  static constexpr bool without_boxes = true;
  explicit WithoutBoxes(Tree const& t) : Tree(t) {}
};

/// Squared distance from q to box b (0 inside), summed in dimension order
/// with the rounding of sq_distance: each term is at most the computed term
/// of any point in the box (rounding is monotonic), so pruning by it is exact.
template <class P, class T, int D, class Index>
KOKKOS_FORCEINLINE_FUNCTION T box_distance(P const& q, NodeBox<T, D, Index> const& b) {
  T s = T(0);
  for (int d = 0; d < D; ++d) {
    T const x = q[d];
    T const t = x < b.lo[d] ? x - b.lo[d] : x > b.hi[d] ? x - b.hi[d] : T(0);
    s = d == 0 ? backend::mul_rn(t, t) : backend::add_rn(s, backend::mul_rn(t, t));
  }
  return s;
}

namespace detail {

/// One level of the bottom-up box build: node s's box from its point and
/// its children's boxes (or points, for leaf children); in 2-D and 3-D also
/// its points' moments and principal-axes box (see oriented_boxes.hpp),
/// and whether that box is worth a walk's test: where its thinnest side is
/// less than half the axis-aligned box's thinnest side.
template <class Tree, class Records, class Moments>
struct NodeBoxLevel {
  using T = typename Tree::coordinate_type;
  static constexpr int D = Tree::dimension;
  Tree tree;
  Records records; // writable
  Moments moments; // one per inner node while building, in 2-D and 3-D
  std::int64_t count;
  double origin[D]; // the tree's box centre: moments are taken about it
  double scale;     // the largest |coordinate| sum of the tree's box

  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    using Index = typename Tree::index_type;
    NodeBox<T, D, Index> b;
    auto const p = tree.load(Index(s));
    for (int d = 0; d < D; ++d) b.lo[d] = b.hi[d] = p.c[d];
    b.min_index = p.index;
    b.framed = 0;
    std::int64_t const n = std::int64_t(tree.node_count());
    for (std::int64_t c = 2 * s + 1; c <= 2 * s + 2; ++c) {
      if (c >= n || !tree.has_node(Index(c))) continue;
      if (c < count) {
        auto const cb = records(c).box;
        for (int d = 0; d < D; ++d) {
          b.lo[d] = cb.lo[d] < b.lo[d] ? cb.lo[d] : b.lo[d];
          b.hi[d] = cb.hi[d] > b.hi[d] ? cb.hi[d] : b.hi[d];
        }
        b.min_index = cb.min_index < b.min_index ? cb.min_index : b.min_index;
      } else {
        auto const cp = tree.load(Index(c));
        for (int d = 0; d < D; ++d) {
          b.lo[d] = cp.c[d] < b.lo[d] ? cp.c[d] : b.lo[d];
          b.hi[d] = cp.c[d] > b.hi[d] ? cp.c[d] : b.hi[d];
        }
        b.min_index = cp.index < b.min_index ? cp.index : b.min_index;
      }
    }
    if constexpr (orientable<D>) b.framed = orient(s, p, b) ? 1 : 0;
    records(s).box = b;
  }

  /// Node s's moments and principal-axes box; true when the box is
  /// markedly thinner than the axis-aligned one, aligned.
  template <class Node, class Box>
  KOKKOS_FUNCTION bool orient(std::int64_t s, Node const& p, Box const& aligned) const {
    using Index = typename Tree::index_type;
    using M = oriented_detail::Moments<D>;
    std::int64_t const n = std::int64_t(tree.node_count());
    M m = M::of_point(p.c, origin);
    for (std::int64_t c = 2 * s + 1; c <= 2 * s + 2; ++c) {
      if (c >= n || !tree.has_node(Index(c))) continue;
      m.add(c < count ? moments(c) : M::of_point(tree.load(Index(c)).c, origin));
    }
    moments(s) = m;
    double a[D][D], v[D][D];
    for (int i = 0; i < D; ++i)
      for (int j = 0; j < D; ++j) a[i][j] = m.m2[i][j];
    oriented_detail::symmetric_eigenvectors<D>(a, v);
    // The box is computed about the exact (double) axes; the stored ones
    // are their roundings to T, whose effect on a point's
    // projection is covered by a margin instead of by reading the rounded
    // values back (compilers have been seen to keep the unrounded value of
    // such a round trip: GCC 12's SLP vectorizer): an axis rounded by
    // eps/2 per component moves the projection of x - c by at most
    // eps/2 |x - c|_1 <= eps sum_j h_j.
    OrientedBox<T, D> f;
    double lo[D], hi[D], axes[D][D];
    for (int i = 0; i < D; ++i) {
      double norm = 0;
      for (int d = 0; d < D; ++d) norm += v[i][d] * v[i][d];
      norm = ::sqrt(norm);
      for (int d = 0; d < D; ++d) {
        axes[i][d] = v[i][d] / norm;
        f.axis[i][d] = T(axes[i][d]);
      }
      auto const& axis = axes[i];
      lo[i] = 0; // over the node's point and its children's boxes
      for (int d = 0; d < D; ++d) lo[i] += axis[d] * double(p.c[d]);
      hi[i] = lo[i];
      for (std::int64_t c = 2 * s + 1; c <= 2 * s + 2; ++c) {
        if (c >= n || !tree.has_node(Index(c))) continue;
        double clo, chi;
        if (c < count) {
          auto const cb = records(c).box;
          auto const cf = records(c).frame;
          double const a_hi = oriented_detail::aligned_support<T, D>(axis, cb.lo, cb.hi, 1.0);
          double const a_lo = -oriented_detail::aligned_support<T, D>(axis, cb.lo, cb.hi, -1.0);
          double const o_hi = oriented_detail::oriented_support<T, D>(axis, cf, 1.0);
          double const o_lo = -oriented_detail::oriented_support<T, D>(axis, cf, -1.0);
          chi = a_hi < o_hi ? a_hi : o_hi;
          clo = a_lo > o_lo ? a_lo : o_lo;
        } else {
          auto const cp = tree.load(Index(c));
          clo = 0;
          for (int d = 0; d < D; ++d) clo += axis[d] * double(cp.c[d]);
          chi = clo;
        }
        lo[i] = clo < lo[i] ? clo : lo[i];
        hi[i] = chi > hi[i] ? chi : hi[i];
      }
    }
    double centre[D]; // sum_i mid_i axis_i, made representable in T: stored exactly
    for (int d = 0; d < D; ++d) {
      double c = 0;
      for (int i = 0; i < D; ++i) c += 0.5 * (lo[i] + hi[i]) * axes[i][d];
      centre[d] = oriented_detail::representable<T>(c);
      f.center[d] = T(centre[d]);
    }
    double h[D], hsum = 0;
    for (int i = 0; i < D; ++i) {
      double ac = 0;
      for (int d = 0; d < D; ++d) ac += axes[i][d] * centre[d];
      h[i] = hi[i] - ac > ac - lo[i] ? hi[i] - ac : ac - lo[i];
      h[i] = h[i] > 0 ? h[i] : 0.0;
      hsum += h[i];
    }
    double const eps = oriented_detail::epsilon<T>();
    double const margin = 2 * eps * hsum;
    double obb_min = 0, aab_min = 0;
    for (int i = 0; i < D; ++i) {
      f.half[i] = oriented_detail::round_out<T>(h[i] + margin, scale, 1.0);
      double const ow = 2 * (h[i] + margin);
      double const aw = double(aligned.hi[i]) - double(aligned.lo[i]);
      obb_min = i == 0 || ow < obb_min ? ow : obb_min;
      aab_min = i == 0 || aw < aab_min ? aw : aab_min;
    }
    records(s).frame = f;
    return obb_min < 0.5 * aab_min;
  }
};

/// Per node of level `level` (one team each): its sub-tree's box, reduced
/// over the sub-tree's nodes (node t of the sub-tree in level order is
/// (s << highest_bit(t + 1)) + t), and its cell (the tree's box clipped by
/// the ancestors' planes): out(i, .) = box lo, box hi, cell lo, cell hi.
template <class Tree, class Out>
struct SampleBoxes {
  Tree tree;
  Out out; // nodes x 4D
  int level;
  template <class Team>
  KOKKOS_FUNCTION void operator()(Team const& team) const {
    using Index = typename Tree::index_type;
    using T = typename Tree::coordinate_type;
    constexpr int D = Tree::dimension;
    std::int64_t const i = team.league_rank();
    std::int64_t const s = (std::int64_t(1) << level) - 1 + i;
    std::int64_t const n = std::int64_t(tree.node_count());
    std::int64_t span = 0; // level-order positions of s's sub-tree below n
    for (int j = 0; (((s + 1) << j) - 1) < n; ++j) span = (std::int64_t(2) << j) - 1;
    for (int d = 0; d < D; ++d) {
      T l = kdforge::detail::infinity<T>(), h = -kdforge::detail::infinity<T>();
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, span),
          [&](std::int64_t t, T& v) {
            std::int64_t const u = (s << lb::highest_bit(std::uint64_t(t + 1))) + t;
            if (u < n && tree.has_node(Index(u))) {
              T const x = tree.load(Index(u)).c[d];
              v = x < v ? x : v;
            }
          },
          Kokkos::Min<T>(l));
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, span),
          [&](std::int64_t t, T& v) {
            std::int64_t const u = (s << lb::highest_bit(std::uint64_t(t + 1))) + t;
            if (u < n && tree.has_node(Index(u))) {
              T const x = tree.load(Index(u)).c[d];
              v = x > v ? x : v;
            }
          },
          Kokkos::Max<T>(h));
      Kokkos::single(Kokkos::PerTeam(team), [&]() {
        out(i, d) = double(l);
        out(i, D + d) = double(h);
      });
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      T clo[D], chi[D];
      auto const root = tree.bounds();
      for (int d = 0; d < D; ++d) {
        clo[d] = root.lo[d];
        chi[d] = root.hi[d];
      }
      std::int64_t c = s;
      for (int l = level; l > 0; --l) { // clip by the ancestors' planes, walking up
        std::int64_t const a = (c - 1) / 2;
        int const dim = tree.split_dim(Index(a), l - 1);
        T const v = tree.load(Index(a)).c[dim];
        if (c == 2 * a + 1) chi[dim] = v < chi[dim] ? v : chi[dim];
        else clo[dim] = v > clo[dim] ? v : clo[dim];
        c = a;
      }
      for (int d = 0; d < D; ++d) {
        out(i, 2 * D + d) = double(clo[d]);
        out(i, 3 * D + d) = double(chi[d]);
      }
    });
  }
};

/// log of the product over dimensions of a box's extent over its cell's,
/// over the dimensions where the cell has width, divided by D (so exp of
/// the mean over nodes is a geometric mean per dimension).
inline double log_fill(double const* box_lo, double const* box_hi, double const* cell_lo, double const* cell_hi, int dim) {
  double r = 0;
  for (int d = 0; d < dim; ++d) {
    double const cell = cell_hi[d] - cell_lo[d];
    if (!(cell > 0)) continue;
    double f = (box_hi[d] - box_lo[d]) / cell;
    f = f < 1e-3 ? 1e-3 : f > 1 ? 1 : f;
    r += std::log(f);
  }
  return r / dim;
}

} // namespace detail

/// The node boxes of a level-order tree (every inner node's), computed on
/// `exec` bottom-up, one level per launch.
template <class Exec, class Tree>
NodeBoxes<typename Exec::memory_space, typename Tree::coordinate_type, Tree::dimension, typename Tree::index_type>
build_node_boxes(Exec const& exec, Tree const& tree) {
  using MS = typename Exec::memory_space;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr int D = Tree::dimension;
  std::int64_t const n = std::int64_t(tree.node_count());
  std::int64_t const count = n / 2; // node s has a child slot iff 2s + 1 < n
  NodeBoxes<MS, T, D, Index> r;
  if (count == 0) return r;
  auto records = backend::allocate<Kokkos::View<NodeRecord<T, D, Index>*, MS>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::node_boxes"), count);
  Kokkos::View<oriented_detail::Moments<D>*, MS> moments;
  if constexpr (orientable<D>)
    moments = backend::allocate<decltype(moments)>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::build::node_moments"), count);
  detail::NodeBoxLevel<Tree, decltype(records), decltype(moments)> level{tree, records, moments, count, {}, 0};
  auto const bounds = tree.bounds();
  for (int d = 0; d < D; ++d) {
    level.origin[d] = 0.5 * (double(bounds.lo[d]) + double(bounds.hi[d]));
    level.scale += std::max(std::abs(double(bounds.lo[d])), std::abs(double(bounds.hi[d])));
  }
  int const top = lb::level(count - 1); // the deepest level with inner nodes
  for (int l = top; l >= 0; --l) {
    std::int64_t const b = lb::full(l), e = lb::min64(lb::full(l + 1), count);
    Kokkos::parallel_for("kdforge::build::node_boxes",
                         Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, b, e), level);
  }
  r.records = records;
  r.count = Index(count);
  return r;
}

/// How much of their cells the points of a level-order tree fill, without
/// building its boxes: the geometric mean, over the nodes of one level and
/// over dimensions, of a sub-tree box's extent over its cell's, at two
/// levels: one of <= 1024 sub-trees of >= ~256 points (with fewer, the
/// extent of a few points would under-fill even a uniform cell), measured in
/// one pass over the points, and one halfway up, where the space between
/// clusters shows, whose boxes and cells are the unions of those of their
/// descendants on the first (the few points on the levels between are left
/// out: a measure, not a bound). The smaller of the two. About 1 where the
/// points fill their cells (uniform data), far below where they leave most
/// of them empty; 0 when a sub-tree of the deeper level is copies of one
/// point (ties that only boxes prune).
template <class Exec, class Tree>
double box_fill(Exec const& exec, Tree const& tree) {
  using MS = typename Exec::memory_space;
  constexpr int D = Tree::dimension;
  std::int64_t const n = std::int64_t(tree.node_count());
  std::int64_t const count = n / 2;
  if (count == 0) return 1;
  int const top = lb::level(count - 1);
  int const deep = top - 6 < 10 ? (top - 6 > 0 ? top - 6 : 0) : 10;
  std::int64_t const nodes = lb::min64(lb::full(deep + 1), count) - lb::full(deep);
  auto out = backend::allocate<Kokkos::View<double**, Kokkos::LayoutRight, MS>>("kdforge::build::box_fill", nodes, 4 * D);
  Kokkos::parallel_for("kdforge::build::box_fill", Kokkos::TeamPolicy<Exec>(exec, nodes, Kokkos::AUTO),
                       detail::SampleBoxes<Tree, decltype(out)>{tree, out, deep});
  auto const h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, out);
  double sum = 0;
  for (std::int64_t i = 0; i < nodes; ++i) {
    bool point = true;
    for (int d = 0; d < D; ++d) point = point && h(i, d) == h(i, D + d);
    if (point) return 0;
    sum += detail::log_fill(&h(i, 0), &h(i, D), &h(i, 2 * D), &h(i, 3 * D), D);
  }
  double fill = std::exp(sum / double(nodes));
  int const up = deep / 2;
  if (up < deep) { // groups of the deep level's nodes that share an ancestor on level `up`
    std::int64_t const group = std::int64_t(1) << (deep - up);
    double upper = 0;
    std::int64_t groups = 0;
    for (std::int64_t g = 0; g < nodes; g += group) {
      double b[4 * D];
      for (int d = 0; d < D; ++d) {
        b[d] = b[2 * D + d] = kdforge::detail::infinity<double>();
        b[D + d] = b[3 * D + d] = -kdforge::detail::infinity<double>();
      }
      for (std::int64_t i = g; i < g + group && i < nodes; ++i)
        for (int d = 0; d < D; ++d) {
          b[d] = std::min(b[d], h(i, d));
          b[D + d] = std::max(b[D + d], h(i, D + d));
          b[2 * D + d] = std::min(b[2 * D + d], h(i, 2 * D + d));
          b[3 * D + d] = std::max(b[3 * D + d], h(i, 3 * D + d));
        }
      upper += detail::log_fill(b, b + D, b + 2 * D, b + 3 * D, D);
      ++groups;
    }
    fill = std::min(fill, std::exp(upper / double(groups)));
  }
  return fill;
}

/// NodeBoxPolicy::automatic keeps a tree's boxes when their fill is below
/// this: where the points fill their cells (uniform data, half of them
/// copies, a 1000 : 1 : 1 box: 0.978-1.0 from 10^3 to 10^7 points), the
/// boxes prune little beyond the split planes and cost memory and loads.
/// Clustered points (sqrt(N) Gaussian blobs: 0.86 at 10^6 points, 0.93 at
/// 10^7) are where the targets part: on GPUs their boxes make kNN k = 8
/// 1.2x (10^6) to 2.4x (10^7) and closest point 1.9-4x faster (an H200), on
/// CPUs the box tests cost more than the pruning saves (kNN 1.8x slower on
/// 2 cores); docs/performance.md, Geometry.
template <class Exec>
constexpr double automatic_box_fill() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible ? 0.8 : 0.95;
}

/// True where the points' box has no width in some dimension (points on
/// an axis-aligned plane or line): the cells have no width there either,
/// and only node boxes prune by the distance across it (the GPU walks of
/// trees without boxes test the split planes alone).
template <class Tree>
bool flat_bounds(Tree const& tree) {
  auto const bounds = tree.bounds();
  for (int d = 0; d < Tree::dimension; ++d)
    if (!(bounds.hi[d] > bounds.lo[d])) return true;
  return false;
}

/// Computes the node boxes of `tree` and keeps them as `policy` says.
template <class Exec, class Tree>
void attach_node_boxes(Exec const& exec, Tree& tree, NodeBoxPolicy policy) {
  if (policy == NodeBoxPolicy::never) return;
  kdforge::detail::Region region("kdforge::build::node_boxes");
  double const fill = box_fill(exec, tree);
  // flat bounds: the fill cannot see the zero width, but only boxes prune
  // by the distance across it
  bool const keep = policy == NodeBoxPolicy::always || fill < automatic_box_fill<Exec>() ||
                    (flat_bounds(tree) && tree.node_count() > 1);
  tree.set_node_boxes(keep ? build_node_boxes(exec, tree) : decltype(build_node_boxes(exec, tree)){}, fill);
}

} // namespace kdforge::kernels
