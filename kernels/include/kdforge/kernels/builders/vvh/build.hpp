#pragma once
// VVH photon k-d tree builder over 3-D points: Zhou, Hou, Wang & Guo 2008,
// "Real-time KD-tree construction on graphics hardware", section 5.1
// (Algorithm 1 adapted to points) and Appendix A (the query radius R).
//
// As the paper:
//  - Each axis is sorted once (one segmented sort of 3 lists of N point
//    ids); the three lists are kept through every split by a stable
//    partition (flags, one scan over the concatenated lists, a scatter), so
//    a node's points are contiguous and start at the same offset in all
//    three lists, and its tight box is read off the first and last entries
//    of its ranges in O(1).
//  - The tree grows breadth first, every node of a level at once.
//  - Large nodes (more than T = 32 points): a side of the cell with empty
//    space wider than Ce = 10% of the cell is cut off (an empty child), else
//    the node splits at the spatial median of its box's longest axis.
//  - Small nodes (at most T points): the exact VVH cost over every split
//    plane through a point position on each axis,
//      VVH(x) = C_ts + C_i (|L| V(d_L + R) + |R| V(d_R + R)) / V(d + R),
//    V(d + R) the volume of the node's cell grown by R on every side; the
//    cheapest plane is taken, or the node stays a leaf where C_i |S| is not
//    more. The counts |L|, |R| of a plane are positions in the sorted list,
//    so no bit masks are needed for them.
//  - Output in preorder (sizes of the sub-trees summed level by level
//    bottom up, addresses handed out top down); every node records its
//    point range, split plane, child links and tight box.
//
// What differs, and why:
//  - One empty-space cut per node and level (the paper cuts all sides
//    first); the cut is a node of its own either way.
//  - From level 32 on, large nodes split at the median position of the
//    widest axis (always splits) and small nodes become leaves: points whose
//    spacing halves at every level (exponentially spaced values) would
//    otherwise make a chain N deep; the bound keeps the height below 64, the
//    size of the walks' stacks (walks/box_stack.hpp).
//  - A node whose points are all one point (zero box) stays a leaf, whatever
//    its size: no plane separates copies of one point.
//  - R is VvhOptions::query_radius, or estimated from the points' box: the
//    radius that holds `expected_k` points at the set's mean density over
//    the dimensions in which the box has extent (Appendix A derives R from a
//    minimal photon density rho_eps; without a renderer's notion of it, the
//    mean density is what the data tells).
//  - Every VVH value is computed in double with each operation rounded on
//    its own (no fused multiply-add), ties between planes go to the first
//    (axis x, y, z, then position): the tree is the same on every backend.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/builders/bfs_buckets/build.hpp>
#include <kdforge/kernels/trees/vvh_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace kdforge::kernels::vvh {

using bfs::Splitting;

/// Levels below which the VVH rules apply; deeper ones split at the median
/// position (see the top).
inline constexpr int vvh_levels = 32;

/// The builder's parameters, resolved by the caller (core/build_vvh_tree.hpp).
struct Params {
  double traversal_cost; ///< C_ts
  double point_cost;     ///< C_i
  double empty_ratio;    ///< Ce
  double radius;         ///< R
  std::int64_t small;    ///< T
};

template <class T, class Index>
struct Decision {
  Index left_count;
};

/// V(c + R): the volume of cell c grown by R on every side, in double,
/// each operation rounded on its own.
template <class Cells>
KOKKOS_FUNCTION double grown_volume(Cells const& cells, std::int64_t s, int dim, double plane, bool right, double r2) {
  using backend::add_rn;
  using backend::mul_rn;
  double v = 1.0;
  for (int d = 0; d < 3; ++d) {
    double lo = double(cells(s, d)), hi = double(cells(s, 3 + d));
    if (d == dim) {
      if (right) lo = plane;
      else hi = plane;
    }
    v = mul_rn(v, add_rn(add_rn(hi, -lo), r2));
  }
  return v;
}

/// Team size of Decide: a warp a node on GPUs, where one thread's chain of
/// dependent loads (a binary search over a large node, 93 planes of a small
/// one) took 25-90 us a level whatever the level's size; one thread a node
/// on host backends, which loop as before.
template <class Exec>
constexpr int decide_team_size() {
  return Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible ? 1 : 32;
}

/// Per node of a new level (nodes first + c, a team each): its tight box
/// from its sorted ranges, then split or leaf, and where (see the top). An
/// empty node's box is empty (lo = +inf, hi = -inf), which every box
/// distance puts out of reach. flags(c) is 1 where the node splits. The
/// team's threads share the searches and the planes; the choice is the one
/// a single thread makes going through them in order.
template <class PV, class Order, class Boxes, class Cells, class Nodes, class Dec, class Flags>
struct Decide {
  using T = typename PV::non_const_value_type;
  using Index = typename Order::non_const_value_type;
  PV pts;
  Order order;
  Boxes boxes;
  Cells cells;
  Nodes nodes;
  Dec dec;
  Flags flags;
  std::int64_t n;
  std::int64_t first;
  int level;
  Params p;

  KOKKOS_FORCEINLINE_FUNCTION T coord(int d, std::int64_t pos) const { return pts(order(d * n + pos), d); }

  /// Positions of [b, e) with coordinate <= v on axis d (the list is
  /// sorted): a search of team-size-ary steps, each probing one position a
  /// thread; binary on one thread.
  template <class Member>
  KOKKOS_FUNCTION Index upper_bound(Member const& team, int d, Index b, Index e, T v) const {
    Index const probes = Index(team.team_size());
    if (probes == 1) {
      while (b < e) {
        Index const m = b + (e - b) / 2;
        if (coord(d, m) <= v) b = m + 1;
        else e = m;
      }
      return b;
    }
    while (e - b > probes) { // the answer lies in [b, e]
      Index const step = (e - b + probes - 1) / probes;
      Index below = 0; // probes b + i step with coordinate <= v: the first ones
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, probes),
          [&](Index i, Index& c) {
            Index const at = b + i * step;
            if (at < e && coord(d, at) <= v) c += 1;
          },
          below);
      if (below == 0) return b;
      Index const nb = b + (below - 1) * step + 1;
      e = b + below * step < e ? b + below * step : e;
      b = nb;
    }
    Index below = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, e - b), [&](Index i, Index& c) { c += coord(d, b + i) <= v ? 1 : 0; }, below);
    return b + below;
  }

  /// The VVH cost of the plane after position j on axis d (see the top).
  KOKKOS_FUNCTION double plane_cost(std::int64_t s, Index count, int d, double c, Index j, double r2, double v) const {
    using backend::add_rn;
    using backend::mul_rn;
    double const vl = grown_volume(cells, s, d, c, false, r2);
    double const vr = grown_volume(cells, s, d, c, true, r2);
    double const sum = add_rn(mul_rn(double(j + 1), vl), mul_rn(double(count - j - 1), vr));
    return add_rn(p.traversal_cost, mul_rn(p.point_cost, sum / v));
  }

  template <class Member>
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    using backend::add_rn;
    using backend::mul_rn;
    std::int64_t const a = team.league_rank();
    std::int64_t const v = first + a;
    auto const rec = nodes(v);
    Index const b = rec.begin, e = rec.end;
    Index const count = e - b;
    // the tight box (every thread reads it; one writes it)
    T lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      lo[d] = count ? coord(d, b) : kdforge::detail::infinity<T>();
      hi[d] = count ? coord(d, e - 1) : -kdforge::detail::infinity<T>();
    }
    Index left = 0;
    int dim = -1;
    T value = T(0);
    // the box's widest axis (the first of equal ones)
    int wide = 0;
    T width = T(-1);
    for (int d = 0; d < 3; ++d) {
      T const w = hi[d] - lo[d];
      if (w > width) {
        width = w;
        wide = d;
      }
    }
    if (width > T(0) && count > p.small) {
      if (level >= vvh_levels) { // the median position: always splits
        dim = wide;
        left = count / 2;
        value = coord(wide, b + left - 1);
      } else {
        // empty space: the widest gap, relative to the cell, above Ce
        double best_ratio = 0.0;
        int side = -1;
        for (int d = 0; d < 3; ++d) {
          double const clo = double(cells(v, d)), chi = double(cells(v, 3 + d));
          double const ext = add_rn(chi, -clo);
          if (!(ext > 0.0)) continue;
          double const gaps[2] = {add_rn(double(lo[d]), -clo), add_rn(chi, -double(hi[d]))};
          for (int h = 0; h < 2; ++h) {
            if (!(gaps[h] > mul_rn(p.empty_ratio, ext))) continue;
            double const ratio = gaps[h] / ext;
            if (ratio > best_ratio) {
              best_ratio = ratio;
              side = 2 * d + h;
            }
          }
        }
        if (side >= 0) {
          dim = side / 2;
          bool const low = side % 2 == 0;
          value = low ? lo[dim] : hi[dim];
          left = low ? Index(0) : count; // the empty child on the gap's side
        } else { // the spatial median of the longest axis
          dim = wide;
          value = T(0.5 * (double(lo[wide]) + double(hi[wide])));
          left = upper_bound(team, wide, b, e, value) - b;
          if (left == 0 || left == count) { // lo and hi one unit apart: split off lo
            value = lo[wide];
            left = upper_bound(team, wide, b, e, value) - b;
          }
        }
      }
    } else if (width > T(0) && count >= 2 && level < vvh_levels) {
      // exact VVH over the planes through point positions: the least cost,
      // then the first plane (axis, then position) that has it
      double const r2 = add_rn(p.radius, p.radius);
      double const vol = grown_volume(cells, v, -1, 0.0, false, r2);
      double const leaf = mul_rn(p.point_cost, double(count));
      Index const planes = 3 * (count - 1);
      // each thread: the least cost of its planes, and the first of them
      // that has it (its planes come in increasing order)
      double best = kdforge::detail::infinity<double>();
      Index at = planes;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, planes), [&](Index t) {
        int const d = int(t / (count - 1));
        Index const j = t % (count - 1);
        T const c = coord(d, b + j);
        if (!(c < coord(d, b + j + 1))) return; // no plane between equal coordinates
        double const cost = plane_cost(v, count, d, double(c), j, r2, vol);
        if (cost < best) {
          best = cost;
          at = t;
        }
      });
      double least = best;
      team.team_reduce(Kokkos::Min<double>(least));
      if (least < leaf) {
        Index first_at = best == least ? at : planes;
        team.team_reduce(Kokkos::Min<Index>(first_at));
        dim = int(first_at / (count - 1));
        left = first_at % (count - 1) + 1;
        value = coord(dim, b + left - 1);
      }
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      for (int d = 0; d < 3; ++d) {
        boxes(v, d) = lo[d];
        boxes(v, 3 + d) = hi[d];
      }
      dec(a) = Decision<T, Index>{left};
      flags(a) = dim >= 0 ? 1 : 0;
      if (dim >= 0) {
        auto node = rec;
        node.split_dim = dim;
        node.split_value = value;
        nodes(v) = node;
      }
    });
  }
};

/// The level's splitting nodes, in node order: their records with the left
/// part's size, and every node's place in that list (-1 where it does not
/// split; see bfs::AssignOwners).
template <class Nodes, class Dec, class Flags, class Split>
struct CompactSplits {
  Nodes nodes;
  Dec dec;
  Flags flags;
  Flags scan;
  Split split;
  Flags split_index;
  std::int64_t first;
  KOKKOS_FUNCTION void operator()(std::int64_t a) const {
    using Index = typename Flags::non_const_value_type;
    std::int64_t const v = first + a;
    split_index(v) = flags(a) ? scan(a) : Index(-1);
    if (!flags(a)) return;
    auto const node = nodes(v);
    split(scan(a)) = Splitting<Index>{Index(v), node.begin, node.end, dec(a).left_count};
  }
};

/// Links each splitting node to its children (first_child + 2a, + 1) and
/// writes the children's records and cells.
template <class Nodes, class Cells, class Split>
struct Commit {
  Nodes nodes;
  Cells cells;
  Split split;
  std::int64_t first_child;
  KOKKOS_FUNCTION void operator()(std::int64_t a) const {
    using Node = typename Nodes::non_const_value_type;
    using Index = decltype(Node{}.left);
    auto const s = split(a);
    auto node = nodes(s.node);
    Index const l = Index(first_child + 2 * a), r = Index(first_child + 2 * a + 1);
    node.left = l;
    node.right = r;
    nodes(s.node) = node;
    Index const mid = Index(s.begin + s.left_count);
    nodes(l) = Node{Index(-1), Index(-1), s.begin, mid, -1, decltype(node.split_value)(0)};
    nodes(r) = Node{Index(-1), Index(-1), mid, s.end, -1, decltype(node.split_value)(0)};
    for (int j = 0; j < 6; ++j) {
      cells(l, j) = cells(s.node, j);
      cells(r, j) = cells(s.node, j);
    }
    cells(l, 3 + node.split_dim) = node.split_value;
    cells(r, node.split_dim) = node.split_value;
  }
};

/// Bottom up, one level at a time: the nodes of each sub-tree.
template <class Nodes, class Sizes>
struct SubtreeSizes {
  Nodes nodes;
  Sizes sizes;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    auto const node = nodes(s);
    sizes(s) = node.is_leaf() ? 1 : 1 + sizes(node.left) + sizes(node.right);
  }
};

/// Top down, one level at a time: preorder addresses of the children.
template <class Nodes, class Sizes>
struct PreorderAddresses {
  Nodes nodes;
  Sizes sizes;
  Sizes pre;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    auto const node = nodes(s);
    if (node.is_leaf()) return;
    pre(node.left) = pre(s) + 1;
    pre(node.right) = pre(s) + 1 + sizes(node.left);
  }
};

template <class Nodes, class Boxes, class Sizes>
struct ToPreorder {
  Nodes nodes;
  Boxes boxes;
  Sizes pre;
  Nodes out_nodes;
  Boxes out_boxes;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const {
    auto node = nodes(s);
    auto const to = pre(s);
    if (!node.is_leaf()) {
      node.left = pre(node.left);
      node.right = pre(node.right);
    }
    out_nodes(to) = node;
    for (int j = 0; j < 6; ++j) out_boxes(to, j) = boxes(s, j);
  }
};

template <class Nodes>
struct MaxLeaf {
  Nodes nodes;
  KOKKOS_FUNCTION void operator()(std::int64_t s, std::int64_t& m) const {
    auto const node = nodes(s);
    std::int64_t const c = std::int64_t(node.end) - std::int64_t(node.begin);
    if (node.is_leaf() && c > m) m = c;
  }
};

/// R estimated from the tight box of the points (see the top): the radius
/// of a ball (disc, segment) of the box's non-degenerate dimensions that
/// holds k points at the mean density.
inline double estimate_radius(double const (&extent)[3], std::int64_t n, int k) {
  double largest = 0.0;
  for (double e : extent) largest = e > largest ? e : largest;
  if (!(largest > 0.0) || n == 0) return 0.0;
  double measure = 1.0;
  int dims = 0;
  for (double e : extent) {
    if (e > 1e-6 * largest) {
      measure *= e;
      ++dims;
    }
  }
  double const pi = 3.14159265358979323846;
  double const unit_ball = dims == 1 ? 2.0 : dims == 2 ? pi : 4.0 / 3.0 * pi;
  double const per_point = measure / double(n);
  return std::pow(double(k) * per_point / unit_ball, 1.0 / double(dims));
}

/// The builder: `pts` is N x 3, finite (checked by the caller). Params's
/// radius <= 0 asks for the estimate from `expected_k`. `decide_team` > 0
/// sets Decide's team size (at most the space's largest): the tests run the
/// GPU's shared searches and reductions on CPU threads with it.
template <class Index, class Exec, class T>
VvhTree<typename Exec::memory_space, T, Index> build(Exec const& exec,
                                                     Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space> pts,
                                                     Params p, int expected_k, int decide_team = 0) {
  using MS = typename Exec::memory_space;
  using Tree = VvhTree<MS, T, Index>;
  using Base = BucketTree<MS, T, Index>;
  using NodeT = BucketNode<T, Index>;
  using Boxes = Kokkos::View<T**, Kokkos::LayoutRight, MS>;
  kdforge::detail::Region region("kdforge::build_vvh_tree");
  std::int64_t const n = std::int64_t(pts.extent(0));
  constexpr int dim = 3;
  std::int64_t const peak = bfs::peak_bytes<T, Index>(n, dim) + 4 * n * std::int64_t(2 * dim * sizeof(T));
  auto tree_points = backend::allocate<Boxes>("kdforge::vvh_tree::points", n, dim);
  auto indices = backend::allocate<Kokkos::View<Index*, MS>>("kdforge::vvh_tree::indices", n);
  if (n == 0)
    return Tree(Base(tree_points, indices, backend::allocate<Kokkos::View<NodeT*, MS>>("kdforge::vvh_tree::nodes", 0),
                     backend::allocate<Boxes>("kdforge::vvh_tree::boxes", 0, 2 * dim), 0, 0, peak),
                p.radius > 0 ? p.radius : 0.0);
  std::int64_t const dn = n * dim;

  // one sorted list per axis, concatenated (section 5.1)
  auto order = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::order"), dn);
  {
    kdforge::detail::Region r("kdforge::build_vvh_tree::presort");
    auto keys = backend::allocate<Kokkos::View<bfs::Key<T>*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::keys"), dn);
    auto offsets = backend::allocate<Kokkos::View<std::int64_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::offsets"),
                                            dim + 1);
    Kokkos::parallel_for("kdforge::build_vvh_tree::keys", Kokkos::RangePolicy<Exec>(exec, 0, dn),
                         bfs::PresortKeys<decltype(pts), decltype(keys), decltype(order)>{pts, keys, order, n});
    Kokkos::parallel_for("kdforge::build_vvh_tree::offsets", Kokkos::RangePolicy<Exec>(exec, 0, dim + 1),
                         bfs::SegmentOffsets<decltype(offsets)>{offsets, n});
    backend::segmented_sort_by_key(exec, keys, order, offsets);
  }

  // about n / 4 nodes for photons (T = 32): one doubling at most, as a rule
  std::int64_t capacity = n < 512 ? 2 * n + 8 : n / 2;
  auto nodes = backend::allocate<Kokkos::View<NodeT*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::nodes"), capacity);
  auto boxes = backend::allocate<Boxes>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::boxes"), capacity, 2 * dim);
  auto cells = backend::allocate<Boxes>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::cells"), capacity, 2 * dim);
  Kokkos::deep_copy(exec, Kokkos::subview(nodes, 0), NodeT{Index(-1), Index(-1), Index(0), Index(n), -1, T(0)});
  Kokkos::parallel_for("kdforge::build_vvh_tree::root_box", Kokkos::RangePolicy<Exec>(exec, 0, dim),
                       bfs::RootBox<decltype(pts), decltype(order), Boxes>{pts, order, boxes, n, dim});
  // the root's cell is its box
  Kokkos::deep_copy(exec, Kokkos::subview(cells, 0, Kokkos::ALL), Kokkos::subview(boxes, 0, Kokkos::ALL));
  if (!(p.radius > 0)) {
    auto const root = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, Kokkos::subview(boxes, 0, Kokkos::ALL));
    double const extent[3] = {double(root(3)) - double(root(0)), double(root(4)) - double(root(1)),
                              double(root(5)) - double(root(2))};
    p.radius = estimate_radius(extent, n, expected_k);
  }

  using Split = Kokkos::View<Splitting<Index>*, MS>;
  using Dec = Kokkos::View<Decision<T, Index>*, MS>;
  using Flags = Kokkos::View<Index*, MS>;
  // A level's scratch is kept across levels and grows only when a level
  // needs more (backend::reserve): allocating CUDA memory waits for the
  // device, and ten allocations a level took more time than its kernels.
  Split split;
  Dec dec;
  Flags lflags, lscan; // per node of the level: does it split, and its place among those that do
  Kokkos::View<char*, MS> scan_space; // the vendor scans' temporary storage
  // sized for the widest levels of photon sets (about n / 32 splitting
  // nodes), so that few levels grow them
  std::int64_t const level_guess = n / 8 > 1024 ? n / 8 : 1024;
  backend::reserve(split, level_guess, "kdforge::vvh_tree::splitting");
  backend::reserve(dec, 2 * level_guess, "kdforge::vvh_tree::decisions");
  backend::reserve(lflags, 2 * level_guess, "kdforge::vvh_tree::level_flags");
  backend::reserve(lscan, 2 * level_guess, "kdforge::vvh_tree::level_scan");
  auto split_index = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::split_index"), capacity);
  // Each level ends by deciding its nodes (boxes, then split or leaf) and
  // listing the splitting ones; the count of that list is the level's one
  // wait for the device, and sizes the next level's launches.
  int const team = decide_team > 0 ? decide_team : decide_team_size<Exec>();
  auto decide = [&](std::int64_t first, std::int64_t count, int at_level) {
    backend::reserve(dec, count, "kdforge::vvh_tree::decisions");
    backend::reserve(lflags, count, "kdforge::vvh_tree::level_flags");
    backend::reserve(lscan, count, "kdforge::vvh_tree::level_scan");
    Kokkos::parallel_for("kdforge::build_vvh_tree::decide", Kokkos::TeamPolicy<Exec>(exec, count, team),
                         Decide<decltype(pts), decltype(order), Boxes, Boxes, decltype(nodes), Dec, Flags>{
                             pts, order, boxes, cells, nodes, dec, lflags, n, first, at_level, p});
    std::int64_t const splitting = std::int64_t(backend::exclusive_scan(
        exec, Kokkos::subview(lflags, std::make_pair(std::int64_t(0), count)),
        Kokkos::subview(lscan, std::make_pair(std::int64_t(0), count)), scan_space));
    backend::reserve(split, splitting, "kdforge::vvh_tree::splitting");
    Kokkos::parallel_for("kdforge::build_vvh_tree::compact_splits", Kokkos::RangePolicy<Exec>(exec, 0, count),
                         CompactSplits<decltype(nodes), Dec, Flags, Split>{nodes, dec, lflags, lscan, split, split_index, first});
    return splitting;
  };
  std::int64_t splitting = decide(0, 1, 0);
  std::int64_t node_count = 1;
  std::vector<std::int64_t> level_begin = {0, 1}; // level L: nodes [level_begin[L], level_begin[L + 1])
  int level = 0;
  Flags order_out, flags, scan, owners, holder;
  Kokkos::View<std::uint8_t*, MS> side;
  if (splitting) {
    owners = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::owners"), n);
    holder = backend::allocate<Flags>("kdforge::vvh_tree::holder", n); // all in the root
    order_out = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::order_out"), dn);
    flags = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::flags"), dn);
    scan = backend::allocate<Flags>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::scan"), dn);
    side = backend::allocate<Kokkos::View<std::uint8_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::side"), n);
  }
  while (splitting > 0) {
    kdforge::detail::Region r("kdforge::build_vvh_tree::level");
    std::int64_t const first_child = node_count;
    std::int64_t const children = 2 * splitting;
    if (first_child + children > capacity) {
      while (first_child + children > capacity) capacity *= 2;
      backend::resize_keeping(nodes, std::size_t(node_count), capacity);
      backend::resize_keeping(boxes, std::size_t(node_count), capacity, 2 * dim);
      backend::resize_keeping(cells, std::size_t(node_count), capacity, 2 * dim);
      backend::resize_keeping(split_index, std::size_t(node_count), capacity);
    }
    Kokkos::parallel_for("kdforge::build_vvh_tree::commit", Kokkos::RangePolicy<Exec>(exec, 0, splitting),
                         Commit<decltype(nodes), Boxes, Split>{nodes, cells, split, first_child});
    // the stable partition of the three lists (bucket builder's kernels)
    Kokkos::parallel_for("kdforge::build_vvh_tree::owners", Kokkos::RangePolicy<Exec>(exec, 0, n),
                         bfs::AssignOwners<Flags, Flags, Split, decltype(nodes), decltype(side)>{
                             owners, holder, split_index, split, nodes, order, side, n, first_child});
    Kokkos::parallel_for("kdforge::build_vvh_tree::flags", Kokkos::RangePolicy<Exec>(exec, 0, dn),
                         bfs::LeftFlags<Flags, decltype(side), Flags>{order, owners, side, flags, n});
    backend::exclusive_scan_async(exec, flags, scan, scan_space); // its total is not needed
    Kokkos::parallel_for("kdforge::build_vvh_tree::scatter", Kokkos::RangePolicy<Exec>(exec, 0, dn),
                         bfs::Scatter<Flags, Split, Flags>{order, order_out, split, flags, scan, owners, n});
    std::swap(order, order_out);
    node_count += children;
    level_begin.push_back(node_count);
    ++level;
    splitting = decide(first_child, children, level);
  }
  int const height = int(level_begin.size()) - 2;

  // preorder (section 3.3): sub-tree sizes bottom up, addresses top down
  auto sizes = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::sizes"), node_count);
  auto pre = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::preorder"), node_count);
  for (int l = height; l >= 0; --l)
    Kokkos::parallel_for("kdforge::build_vvh_tree::sizes", Kokkos::RangePolicy<Exec>(exec, level_begin[l], level_begin[l + 1]),
                         SubtreeSizes<decltype(nodes), decltype(sizes)>{nodes, sizes});
  Kokkos::deep_copy(exec, Kokkos::subview(pre, 0), Index(0));
  for (int l = 0; l <= height; ++l)
    Kokkos::parallel_for("kdforge::build_vvh_tree::addresses",
                         Kokkos::RangePolicy<Exec>(exec, level_begin[l], level_begin[l + 1]),
                         PreorderAddresses<decltype(nodes), decltype(sizes)>{nodes, sizes, pre});
  auto out_nodes = backend::allocate<Kokkos::View<NodeT*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::nodes"), node_count);
  auto out_boxes = backend::allocate<Boxes>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::vvh_tree::boxes"), node_count, 2 * dim);
  Kokkos::parallel_for("kdforge::build_vvh_tree::preorder", Kokkos::RangePolicy<Exec>(exec, 0, node_count),
                       ToPreorder<decltype(nodes), Boxes, decltype(pre)>{nodes, boxes, pre, out_nodes, out_boxes});
  std::int64_t max_leaf = 0;
  Kokkos::parallel_reduce("kdforge::build_vvh_tree::max_leaf", Kokkos::RangePolicy<Exec>(exec, 0, node_count),
                          MaxLeaf<decltype(out_nodes)>{out_nodes}, Kokkos::Max<std::int64_t>(max_leaf));
  Kokkos::parallel_for("kdforge::build_vvh_tree::gather", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       bfs::GatherPoints<decltype(pts), decltype(order), Boxes, decltype(indices)>{pts, order, tree_points,
                                                                                                   indices, dim});
  exec.fence();
  return Tree(Base(tree_points, indices, out_nodes, out_boxes, height, max_leaf, peak), p.radius);
}

} // namespace kdforge::kernels::vvh
