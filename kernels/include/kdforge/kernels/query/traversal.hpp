#pragma once
// Depth-first traversals of a k-d tree stored as a complete binary tree
// (LeftBalancedTree, MedianTree), close child first. A tree provides
// node_count() slots, has_node(s) for slots that may be empty (only leaves
// may be), load(s) (point and caller's index of node s, one record: see
// node.hpp) and split_dim(s, level).
//
// stack:      far children wait on a small fixed stack with the distance to
//             their cell; popped ones farther than the current bound are
//             skipped (see traverse_stack).
// stack_free: Wald's stack-free traversal (cudaKDTree, "stack-free kd-tree
//             traversal"): the previous node alone tells whether we came down
//             from the parent or up from the close/far child; parent/child
//             arithmetic replaces the stack (no local memory on GPUs).
// trail:      pending far children as one bit per level in a register;
//             a finished path jumps straight to the deepest pending one
//             (traverse_trail below).
//
// Bucket levels (all traversals): the bottom `bucket_levels` levels are
// not traversed but scanned. A node on level L - bucket_levels (L levels in
// all) is a bucket: reaching it visits its whole sub-tree (at most
// 2^bucket_levels - 1 nodes) in level order, without plane tests, and goes
// back up. The pruning a traversal does down there saves few distance
// evaluations but costs most of its steps: 7/8 of the nodes of a tree are on
// its bottom 3 levels, every step is a dependent load plus a dozen branches
// (the GPU kernels are issue-bound), and a leaf costs a step down and one
// up. Exactness is untouched: a bucket is only skipped when its plane test
// at the parent says nothing in it can matter, as before. bucket_levels = 0
// is the plain traversal. Measured with 1M points and queries (perf/NOTES.md,
// session 4): kNN k = 8 2.22 -> 1.52 ms on an H100 (with the one-node loop
// below); 226 ms with bucket_levels = 0 -> 130 ms on 16 Xeon cores (with
// Morton-ordered queries).
//
// All traversals visit nodes in the same order (given the same
// bucket_levels), except that the stack walk's tighter test leaves out some
// that the others visit for nothing; every node that matters (within the
// bound when visited) is visited by all, in the same order, so unsorted
// radius results are the same whichever is used. (kNN walks, whose bound
// shrinks, may defer visits, see trail_descend: their results do not depend
// on the order.) They never step into a
// child that does not exist. A visitor provides
//   T bound() const            squared radius beyond which nothing matters
//   void visit(Index i, T d2)  the point of caller's index i at squared
//                              distance d2 (may be > bound)
//   bool done() const          stop early (radius count with a cap)
#include <kdforge/kernels/left_balanced_math.hpp>
#include <kdforge/kernels/query/node.hpp>
#include <kdforge/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kdforge::kernels {

/// The most bucket levels a query may ask for (buckets of up to 63 nodes).
inline constexpr int max_bucket_levels = 6;

/// The bottom levels scanned as buckets: how many, and the nodes of a full
/// bucket, (1 << levels) - 1. The walks take this pair rather than the
/// level count: made on the host (as the query functions do, in their Walk),
/// the size reaches a GPU kernel as a parameter, while from the level count
/// nvcc recomputed it in every iteration of the loops (4 of the 80
/// instructions of the closest-point loop, SASS of the H100 build).
struct Buckets {
  int levels = 0;
  int size = 0;
  KOKKOS_FUNCTION constexpr Buckets(int bucket_levels) // NOLINT: implicit, a level count is a Buckets
      : levels(bucket_levels), size((1 << bucket_levels) - 1) {}
};

/// Level whose nodes are buckets: L - bucket_levels (L: levels of a tree of
/// n node slots), at least 0. bucket_levels = 0 gives L: no node is a bucket.
KOKKOS_FORCEINLINE_FUNCTION int bucket_level(std::int64_t n, int bucket_levels) {
  int const L = lb::num_levels(n);
  return L > bucket_levels ? L - bucket_levels : 0;
}

template <class Tree>
KOKKOS_FORCEINLINE_FUNCTION bool node_exists(Tree const& tree, typename Tree::index_type s) {
  return s < tree.node_count() && tree.has_node(s);
}

/// Visits the sub-tree of bucket s (its top `levels` levels: all of it),
/// level by level, left to right. Returns true when the visitor is done.
/// The top 3 levels (7 nodes) are unrolled with the depth a uniform
/// predicate: their loads are independent and issue together; deeper
/// levels (bucket_levels 4 and up) are a plain loop, so the visitor's code
/// (a kNN insertion is dozens of instructions) is not copied 2^levels times.
/// Unrolled (run 1 on the H100, bucket_levels 3) vs a rolled loop: closest
/// point 0.97 vs 1.03 ms, kNN k = 1 0.98 vs 1.03 ms, k = 8 equal within noise.
template <class Tree, class Visitor>
KOKKOS_FORCEINLINE_FUNCTION bool scan_bucket(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                             typename Tree::index_type s, int levels) {
  using Index = typename Tree::index_type;
  constexpr int unrolled = 3;
  KDFORGE_UNROLL
  for (int j = 0; j < unrolled; ++j) {
    if (j >= levels) return false;
    Index const first = ((s + 1) << j) - 1; // leftmost descendant j levels down
    KDFORGE_UNROLL
    for (int t = 0; t < (1 << j); ++t) {
      Index const u = first + t;
      if (node_exists(tree, u)) {
        auto const p = tree.load(u);
        visitor.visit(p.index, sq_distance(q, p));
        if (visitor.done()) return true;
      }
    }
  }
  Index const n = tree.node_count();
  for (int j = unrolled; j < levels; ++j) {
    Index const first = ((s + 1) << j) - 1;
    if (first >= n) break;
    Index const last = first + (Index(1) << j) < n ? first + (Index(1) << j) : n;
    for (Index u = first; u < last; ++u) {
      if (!tree.has_node(u)) continue;
      auto const p = tree.load(u);
      visitor.visit(p.index, sq_distance(q, p));
      if (visitor.done()) return true;
    }
  }
  return false;
}

/// Squared distance from q to a cell given q's distance to the cell's slab in
/// each dimension (off), with dimension dim's replaced by diff: the far
/// child's cell when off is its parent's. Summed afresh in dimension order
/// with the rounding of sq_distance (never updated by subtraction), so it
/// never exceeds the computed distance of a point in the cell, and pruning
/// by it stays exact. Taken from the parent's distances (registers) rather
/// than from the stack entry just written: summing the entry measured 5-7%
/// slower on 2 EPYC cores (kNN k = 8 470 vs 438 ms, closest 262 vs 249).
template <int D, class T>
KOKKOS_FORCEINLINE_FUNCTION T cell_distance(T const (&off)[D], int dim, T diff) {
  T const o0 = dim == 0 ? diff : off[0];
  T rd = kdforge::detail::mul_rn(o0, o0); // = 0 + o0 * o0: squares are >= +0 (see sq_norm)
  KDFORGE_UNROLL
  for (int d = 1; d < D; ++d) {
    T const o = d == dim ? diff : off[d];
    rd = kdforge::detail::add_rn(rd, kdforge::detail::mul_rn(o, o));
  }
  return rd;
}

/// Whether a visitor's bound() never changes during a traversal (radius
/// visitors declare `static constexpr bool fixed_bound = true`); kNN-like
/// visitors, whose bound shrinks, leave it out.
template <class Visitor, class = void>
struct has_fixed_bound : std::false_type {};
template <class Visitor>
struct has_fixed_bound<Visitor, std::enable_if_t<Visitor::fixed_bound>> : std::true_type {};

/// Close child first; a far child is kept only if its cell, not just its
/// plane, is within the bound: the cell's squared distance from q is the
/// sum over dimensions of q's distance to the cell's slab in each (the
/// far child's plane distance replaces its dimension's term: Arya & Mount,
/// "Algorithms for fast vector quantization", 1993, as in nanoflann; see
/// cell_distance). Each stack entry keeps its cell's per-dimension
/// distances. 2 EPYC cores, 1M x 1M (session 7): kNN k = 8 545 -> 458 ms,
/// k = 16 968 -> 744, closest 291 -> 238, radius 512 -> 393, k = 1 equal.
///
/// kNN (a bound that shrinks): a node with a far child is shown to the
/// visitor when that child is popped, not on the way down, and not at all
/// when the child is dropped: the node's point lies on the far cell's
/// boundary, so its distance is at least the cell's (same rounding, see
/// cell_distance), and a dropped cell drops nothing that could matter. Most
/// of a path's points are far from the query, and offered early, while the
/// list is still filling, they were inserted only to be evicted again
/// (host simulation, 1M uniform points, k = 8: 32 -> 18 insertions per
/// query; perf/NOTES.md, session 13). Radius visitors (fixed bound) see the
/// nodes on the way down, in the order every walk shares, and so do GPU
/// kNN kernels (see below).
template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_stack(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                    Buckets buckets) {
  int const bucket_levels = buckets.levels;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr int D = Tree::dimension;
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  // GPUs walk with traverse_trail unless asked otherwise, and a kNN kernel
  // holds every walk (the walk is picked at run time): the longer entries
  // and the distance kept across a step took registers from all of them
  // (ptxas, sm_90: CAP 16 kernel 62 -> 87 registers, lower occupancy).
  constexpr bool defer = false;
#else
  constexpr bool defer = !has_fixed_bound<Visitor>::value;
#endif
  Index const n = tree.node_count();
  if (n == 0) return;
  int const lb = bucket_level(n, bucket_levels);
  struct Entry {
    Index node;
    int level;
    T rd;     // squared distance from q to the far child's cell
    T off[D]; // per dimension, q's distance to that cell
    Index parent_index; // kNN: the caller's index of the far child's parent
    T parent_d2;        // and its squared distance, shown to the visitor at the pop
  } stack[33]; // levels of a tree of < 2^32 points
  int top = 0;
  Index node = 0;
  int level = 0;
  T off[D] = {};
  while (true) {
    while (true) { // down the close side, pushing the far children
      if (level == lb) {
        if (scan_bucket(tree, q, visitor, node, bucket_levels)) return;
        break;
      }
      auto const p = tree.load(node);
      auto const o = offsets(q, p);
      T const d2 = sq_norm(o);
      if constexpr (!defer) {
        visitor.visit(p.index, d2);
        if (visitor.done()) return;
      }
      int const dim = tree.split_dim(node, level);
      T const diff = component<Tree::dimension>(o, dim);
      Index const right = diff < 0 ? 0 : 1; // arithmetic, not a branch, on CPUs
      Index const close = 2 * node + 1 + right;
      Index const far = 2 * node + 2 - right;
      ++level;
      if (node_exists(tree, far)) {
        Entry& e = stack[top];
        for (int d = 0; d < D; ++d) e.off[d] = d == dim ? diff : off[d];
        e.node = far;
        e.level = level;
        e.rd = cell_distance(off, dim, diff);
        if constexpr (defer) {
          e.parent_index = p.index;
          e.parent_d2 = d2;
        }
        top += e.rd <= visitor.bound() ? 1 : 0;
      } else if constexpr (defer) {
        visitor.visit(p.index, d2); // no far child to wait for
      }
      if (!node_exists(tree, close)) break;
      node = close;
    }
    do {
      if (top == 0) return;
      --top;
    } while (stack[top].rd > visitor.bound());
    if constexpr (defer) visitor.visit(stack[top].parent_index, stack[top].parent_d2);
    node = stack[top].node;
    level = stack[top].level;
    for (int d = 0; d < D; ++d) off[d] = stack[top].off[d];
  }
}

/// Where a one-node-per-iteration walk is inside a bucket: the visited
/// node's position j in the bucket's level order (0 is the bucket's root).
/// Position j lies highest_bit(j + 1) levels below the root, and its node is
/// (root << depth) + j: one counter instead of a (depth, place) pair, which
/// saved instructions in every iteration of the GPU loops (all lanes
/// compute the next bucket node, scanning or not).
template <class Index>
struct BucketCursor {
  int j = 0;
  /// Moves u to the bucket's next node in level order and returns true, or
  /// returns false (and resets) when the node just visited was its last.
  /// A node past the tree's end ends the bucket: every later node in level
  /// order is past it too.
  /// `size`: nodes of a full bucket, (1 << bucket_levels) - 1 (computed
  /// once per walk by the caller: in the GPU loops nvcc recomputed it in
  /// every iteration otherwise).
  KOKKOS_FORCEINLINE_FUNCTION bool next(Index root, int size, Index n, Index& u) {
    int const k = j + 1;
    u = (root << lb::highest_bit(std::uint32_t(k + 1))) + k;
    if (k < size && u < n) {
      j = k;
      return true;
    }
    j = 0;
    return false;
  }
};

/// One loop, one node per iteration. An iteration loads a node, computes
/// its distance, shows it to the visitor, and moves on: in the tree part,
/// into a child or back to the parent (the previous node tells which way we
/// came, so no stack); in a bucket (reached from its parent), to the next
/// node of the bucket in level order, and after its last node back to the
/// bucket's parent. Scanning and stepping lanes of a GPU warp thus share the
/// load, the distance and the visitor's code (a kNN insertion is dozens of
/// instructions) in every iteration instead of taking turns: with a scan of
/// the whole bucket per iteration, a warp ran the visitor once for its
/// stepping lanes and seven times for its scanning ones, ~11 of 32 lanes
/// active (ncu, kNN k = 8 on the H100). A "while-while" form (Aila & Laine
/// 2009: step until a bucket, then scan) measured slower still.
template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_stack_free(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                         Buckets buckets) {
  int const bucket_levels = buckets.levels;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Index const n = tree.node_count();
  if (n == 0) return;
  int const lb = bucket_level(n, bucket_levels);
  Index prev = -1;
  Index curr = 0;  // the tree node we are at; in a bucket, the bucket's root
  int level = 0;   // curr's level
  Index u = 0;     // the node this iteration visits: curr, or in a bucket its node
  BucketCursor<Index> bucket;
  int const bucket_size = buckets.size;
  while (true) {
    bool const scanning = level == lb;
    bool const exists = !scanning || tree.has_node(u);
    typename Tree::node_type p{};
    if (exists) p = tree.load(u);
    bool const from_parent = prev < curr; // always true while scanning
    auto const o = offsets(q, p);
    if (exists && from_parent) {
      visitor.visit(p.index, sq_norm(o));
      if (visitor.done()) return;
    }
    Index const parent = (curr + 1) / 2 - 1;
    Index next = parent;
    if (scanning) {
      if (bucket.next(curr, bucket_size, n, u)) continue; // the bucket's next node
    } else {
      int const dim = tree.split_dim(curr, level);
      T const diff = component<Tree::dimension>(o, dim);
      Index const close = diff < 0 ? 2 * curr + 1 : 2 * curr + 2;
      Index const far = diff < 0 ? 2 * curr + 2 : 2 * curr + 1;
      // the far side is entered after the close one (or right away when
      // there is no close child), if its plane is within the bound
      bool const close_exists = node_exists(tree, close);
      bool const enter_far = (prev == close || (from_parent && !close_exists)) && diff * diff <= visitor.bound() &&
                             node_exists(tree, far);
      if (from_parent && close_exists) next = close;
      else if (enter_far) next = far;
    }
    if (next < 0) return;
    level += next == parent ? -1 : 1;
    prev = curr;
    curr = next;
    u = next;
  }
}

/// Whether a tree's split dimension is its level mod D at compile time
/// (`static constexpr bool round_robin_splits = true`: MedianTree, and a
/// LeftBalancedTree seen through detail::FixedSplitTree on GPUs).
template <class Tree, class = void>
struct is_round_robin : std::false_type {};
template <class Tree>
struct is_round_robin<Tree, std::enable_if_t<Tree::round_robin_splits>> : std::true_type {};

/// Bit l set for the levels l whose round-robin split dimension is e.
template <class Mask, int D>
KOKKOS_FORCEINLINE_FUNCTION constexpr Mask level_mask(int e) {
  Mask m = 0;
  for (int l = e; l < int(sizeof(Mask) * 8); l += D) m |= Mask(1) << l;
  return m;
}

/// x replaced by o[e] for the e in [E, D) whose levels include vbit's.
/// Each mask is a constexpr variable: evaluated by the compiler. (Called
/// with e a loop counter, even an unrolled one, nvcc built the masks with a
/// loop in every iteration of the walk: closest point 0.42 -> 0.53 ms.)
template <class Mask, int D, int E = 1, class O, class X>
KOKKOS_FORCEINLINE_FUNCTION X pick_by_level(O const& o, Mask vbit, X x) {
  if constexpr (E >= D) {
    return x;
  } else {
    constexpr Mask m = level_mask<Mask, D>(E);
    return pick_by_level<Mask, D, E + 1>(o, vbit, (vbit & m) != 0 ? o[E] : x);
  }
}

/// o's component in the split dimension of node v on level vl, given
/// vbit = 1 << vl (the trail walks have it for their pending masks). For
/// round-robin trees the dimension is never computed: vbit tested against
/// constant masks picks the component (for D = 3 on GPUs, two LOP3 against
/// a modulo by 3 and two compares).
template <class Tree, class O, class Mask>
KOKKOS_FORCEINLINE_FUNCTION auto split_offset(Tree const& tree, O const& o, typename Tree::index_type v, int vl,
                                              Mask vbit) {
  constexpr int D = Tree::dimension;
  if constexpr (is_round_robin<Tree>::value) {
    return pick_by_level<Mask, D>(o, vbit, o[0]);
  } else {
    return component<D>(o, tree.split_dim(v, vl));
  }
}

/// Pending-plane mask of the trail walks: < 2^31 node slots have at most 31
/// levels; 64-bit indices, 63.
template <class Index>
using TrailMask = std::conditional_t<sizeof(Index) <= 4, std::uint32_t, std::uint64_t>;

/// Where a kNN trail walk stands between two iterations (see
/// trail_shrinking_run): enough to stop it and resume it later, in another
/// thread, with the visitor's candidates.
template <class Index>
struct TrailState {
  TrailMask<Index> pending = 0;
  Index curr = 0;       // the tree node we are at; in a bucket, the bucket's root
  Index u = 0;          // the node a visiting iteration visits: curr, or in a bucket its node
  int level = 0;        // curr's level
  bool popping = false; // the next iteration re-tests the deepest pending plane instead
  BucketCursor<Index> bucket;
};

/// The first descent of a kNN trail walk, from the root to the query's
/// bucket, testing planes only; returns the state trail_shrinking_run
/// starts from. In the kNN trail walk a node on a path (not in a bucket) is
/// shown to the visitor when its level is popped, not on the way down, and
/// only if the pop's plane test passes: a node's point lies on its own
/// plane, so its squared distance is at least its plane's (same rounding:
/// sq_norm's sum includes the plane's square, and adding squares never
/// makes a sum smaller), and a failed pop drops nothing that could matter.
/// Its pending bit therefore stands for its point as well as its far child.
/// The final candidates are those of an eager walk: the k smallest
/// (distance, index) pairs do not depend on the order they are offered in.
///
/// Why a loop of its own: every query takes exactly its first lb steps
/// down (the tree is complete), so a warp's lanes run this loop in
/// lockstep, ~20 instructions per level instead of a full iteration of the
/// main loop (~80 for k = 1, ~125 for k = 8 with most lanes inserting: the
/// upper path's points are far, but early on they are all a list has).
/// Host simulation (1M uniform points and Morton-ordered queries, warps of
/// 32, bucket_levels 2; perf/NOTES.md, session 13): main-loop iterations
/// per warp k = 1 115.5 -> 101.1, k = 8 216.8 -> 199.8, plus 18 of these
/// steps; insertions per query k = 1 11.2 -> 2.7, k = 8 32.1 -> 18.1.
template <class Tree>
KOKKOS_FUNCTION TrailState<typename Tree::index_type> trail_descend(Tree const& tree,
                                                                   typename Tree::point_type const& q,
                                                                   typename Tree::coordinate_type bound,
                                                                   Buckets buckets) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using Mask = TrailMask<Index>;
  TrailState<Index> s;
  Index const n = tree.node_count();
  if (n == 0) return s;
  int const lb = bucket_level(n, buckets.levels);
  while (s.level < lb) {
    auto const p = tree.load(s.curr);
    auto const o = offsets(q, p);
    Mask const bit = Mask(1) << s.level;
    T const diff = split_offset(tree, o, s.curr, s.level, bit);
    // pending: its point or its far side may matter (with no cutoff the
    // bound is +inf and every level is)
    if (diff * diff <= bound) s.pending |= bit;
    Index const close = diff < 0 ? 2 * s.curr + 1 : 2 * s.curr + 2;
    if (!node_exists(tree, close)) { // the path ends above the buckets: pop this node first
      s.popping = true;
      break;
    }
    s.curr = close;
    ++s.level;
  }
  s.u = s.curr;
  return s;
}

/// traverse_trail's loop for visitors whose bound shrinks (kNN): the same
/// steps, pops and bucket scans at the same moments, written so that every
/// iteration runs one straight sequence. The lanes of a GPU warp are in
/// different kinds of iteration at once (a step, a bucket node, a pop), and
/// with a branch per kind the warp ran every kind's code one after the
/// other in almost every iteration: in a simulation of 1M x 1M kNN k = 8
/// (warps of 32 Morton-adjacent queries in lockstep by iteration), pops
/// were present in 78% of a warp's iterations, bucket steps in 81%, plane
/// tests in 93%, each with 6-18 of 32 lanes (ncu: 11 active lanes on
/// average, ~150 SASS instructions per warp iteration). Here the node
/// loaded, its plane test, the bucket's next node and the next state are
/// computed by all lanes and chosen by selects; only the visit (a candidate
/// insertion) stays a branch. H100, 1M x 1M, same run (perf/NOTES.md,
/// session 8): kNN k = 8 1.36 -> 1.23 ms, k = 16 2.45 -> 2.33, k = 1 0.59 ->
/// 0.56, closest point equal; ncu k = 8: 933M -> 749M warp instructions,
/// 11 -> 18.5 active lanes. Radius visitors (fixed bound) keep the loop
/// below, whose path ends jump without pops; this form is not measured for
/// them yet.
///
/// Runs at most max_iterations iterations (all, when negative) of this loop
/// from `state` (trail_descend's, or one this function left). Returns true
/// when the walk is finished; otherwise `state` says where to resume.
/// Steps only test planes; a pop shows its node to the visitor (same
/// iteration, same load: see trail_descend) and enters its far child if
/// the plane is within the bound and the child exists.
template <class Tree, class Visitor>
KOKKOS_FUNCTION bool trail_shrinking_run(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                         Buckets buckets, TrailState<typename Tree::index_type>& state,
                                         int max_iterations) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using Mask = TrailMask<Index>;
  Index const n = tree.node_count();
  if (n == 0) return true;
  int const lb = bucket_level(n, buckets.levels);
  Mask pending = state.pending;
  Index curr = state.curr;
  int level = state.level;
  Index u = state.u;
  bool popping = state.popping;
  BucketCursor<Index> bucket = state.bucket;
  int const bucket_size = buckets.size;
  int left = max_iterations;
  while (true) {
    // Every exit writes the state back. Returning without it (a finished
    // walk's state is never read) made nvcc keep a zeroed copy of the state
    // for that exit and re-zero it in every iteration: 5 of the capped
    // k = 1 loop's 95 instructions (SASS, H100 build).
    if (left-- == 0) { // never when negative
      state = {pending, curr, u, level, popping, bucket};
      return false;
    }
    int const top = lb::highest_bit(pending); // -1 when nothing is pending
    if (popping && top < 0) {
      state = {pending, curr, u, level, popping, bucket};
      return true;
    }
    int const vl = popping ? top : level; // the loaded node's level
    Mask const vbit = Mask(1) << vl;
    Index const v = popping ? ((curr + 1) >> (level - top)) - 1 : u;
    bool const scanning = !popping && level == lb;
    bool const exists = !scanning || tree.has_node(v);
    typename Tree::node_type p{};
    if (exists) p = tree.load(v);
    auto const o = offsets(q, p);
    if (exists && (popping || scanning)) { // a step's node waits for its pop
      visitor.visit(p.index, sq_norm(o));
      if (visitor.done()) {
        state = {popping ? pending & ~vbit : pending, curr, u, level, popping, bucket};
        return true;
      }
    }
    // v's plane (used by steps and pops)
    T const diff = split_offset(tree, o, v, vl, vbit);
    bool const within = diff * diff <= visitor.bound();
    Index const close = diff < 0 ? 2 * v + 1 : 2 * v + 2;
    Index const far = diff < 0 ? 2 * v + 2 : 2 * v + 1;
    // the bucket's next node in level order (used by scanning iterations;
    // the cursor resets itself after the bucket's last node)
    BucketCursor<Index> next_bucket = bucket;
    Index next_u = 0;
    bool const scan_on = next_bucket.next(curr, bucket_size, n, next_u) && scanning;
    bool const step = !popping && !scanning;
    bool const descend = step && node_exists(tree, close);
    bool const enter = popping && within && node_exists(tree, far); // a pop into its far child
    // A pop clears its level's bit (the highest one set); a step within
    // the bound sets its own level's bit (pending for its node, and its far
    // child if any), which is clear: no bit at or deeper than a step's
    // level is ever set (trail_descend hands over a bucket scan or a pop, a
    // pop leaves none deeper than its level, whose bit it clears, steps go
    // down one level at a time, and a saved state is one taken at the top
    // of an iteration). One flip instead of a clear and a set: 3 fewer
    // SASS instructions per iteration of the kNN k = 8 loop, one of them on
    // the integer pipe that bounds it (ncu, H100: 80% busy). H100, 1M x
    // 1M, same run (perf/NOTES.md, session 15): kNN k = 8 0.99-1.00 ->
    // 0.95-0.97 ms, k = 16 1.78 -> 1.73.
    pending ^= popping || (step && within) ? vbit : Mask(0);
    bucket = scan_on ? next_bucket : BucketCursor<Index>{};
    Index const next = scan_on ? next_u : descend ? close : far;
    bool const moves = scan_on || descend || enter;
    u = moves ? next : u;
    curr = descend || enter ? next : curr;
    level = descend ? level + 1 : enter ? vl + 1 : level;
    // a path ends (bucket done, or no close child): pop; a failed pop: pop again
    popping = !moves;
  }
}

/// Depth-first like the others, with the pending far children kept as one
/// bit per level in a register instead of on a stack, and no climbing back
/// up. Bit l set: the far child of the current path's level-l node may still
/// matter (its plane was within the bound when the node was visited). When a
/// path ends (a bucket scanned, or no close child), the deepest pending bit
/// names the next node: the path's level-l node is the ancestor
/// ((curr + 1) >> (level - l)) - 1 of the current one.
///
/// With a bound that shrinks (kNN; trail_shrinking_run runs that loop,
/// branch-free), the ancestor's plane must be tested again
/// before its far child is entered: a "pop" iteration reloads the ancestor
/// (usually an L1 hit: the queries of a warp share their upper ancestors),
/// tests its plane, and either moves to its far child or leaves the next
/// pop to the next iteration. Pops are iterations of the one loop, like
/// steps and bucket nodes, so the lanes of a GPU warp that pop share the
/// load and plane test with the lanes that step, instead of waiting while
/// a few lanes run an inner pop loop (ncu, kNN k = 8, H100: 8.7 of 32 lanes
/// active with an inner loop, 11-13 with pops as iterations). With a fixed
/// bound (radius visitors) the test would pass again, so a path's end goes
/// straight to the far child (one more bit per level says which side it is
/// on) without loading anything.
///
/// Far children are tested by their plane, as in the stack-free walk. Cell
/// distances like the stack walk's, with the current cell's per-dimension
/// slab distances in registers (zeroed, i.e. underestimated, for the levels
/// a jump back up leaves), measured no better on the H100 (session 7, 1M x
/// 1M: kNN k = 16 2.30 vs 2.44 ms, k = 8 equal, closest 0.60 vs 0.58,
/// radius count 0.63 vs 0.59, radius CSR 1.46-1.51 vs 1.41-1.45; 51
/// registers instead of 46, the same instruction count).
///
/// The stack-free walk spends one iteration per level on the way back up,
/// including the final climb to the root that every query makes; here a
/// level with nothing pending costs nothing. With a fixed bound, the same
/// visiting order and the same pruning tests at the same moments as the
/// stack-free walk, hence the same visited nodes and the same unsorted
/// radius rows (kNN: a path's nodes are visited when popped, see
/// trail_descend). A related bit-trail
/// restart scheme for BVHs: Laine, "Restart trail for stackless BVH
/// traversal", HPG 2010.
template <class Tree, class Visitor>
KOKKOS_FUNCTION void traverse_trail(Tree const& tree, typename Tree::point_type const& q, Visitor& visitor,
                                    Buckets buckets) {
  int const bucket_levels = buckets.levels;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  // < 2^31 node slots have at most 31 levels; 64-bit indices, 63
  using Mask = TrailMask<Index>;
  constexpr bool fixed = has_fixed_bound<Visitor>::value;
  Index const n = tree.node_count();
  if (n == 0) return;
  int const lb = bucket_level(n, bucket_levels);
  if constexpr (!fixed) {
    auto state = trail_descend(tree, q, visitor.bound(), buckets);
    trail_shrinking_run(tree, q, visitor, buckets, state, -1);
  } else {
    Mask pending = 0;
    Mask far_right = 0; // bit l set when level l's pending far child is a right child
    Index curr = 0;     // the tree node we are at; in a bucket, the bucket's root
    int level = 0;      // curr's level
    Index u = 0;        // the node this iteration visits: curr, or in a bucket its node
    BucketCursor<Index> bucket;
    int const bucket_size = buckets.size;
    while (true) {
      bool const scanning = level == lb;
      bool const exists = !scanning || tree.has_node(u);
      typename Tree::node_type p{};
      if (exists) p = tree.load(u);
      auto const o = offsets(q, p);
      if (exists) {
        visitor.visit(p.index, sq_norm(o));
        if (visitor.done()) return;
      }
      if (scanning) {
        if (bucket.next(curr, bucket_size, n, u)) continue; // the bucket's next node
      } else {
        Mask const lbit = Mask(1) << level;
        T const diff = split_offset(tree, o, u, level, lbit);
        Index const close = diff < 0 ? 2 * u + 1 : 2 * u + 2;
        Index const far = diff < 0 ? 2 * u + 2 : 2 * u + 1;
        if (diff * diff <= visitor.bound() && node_exists(tree, far)) {
          pending |= lbit;
          if (diff < 0) far_right |= lbit;
        }
        if (node_exists(tree, close)) {
          curr = close;
          u = close;
          ++level;
          continue;
        }
      }
      // the path ends: the deepest pending far child is next, untested
      if (pending == 0) return;
      int const l = lb::highest_bit(pending);
      Mask const bit = Mask(1) << l;
      Index const a = ((curr + 1) >> (level - l)) - 1; // the path's level-l node
      curr = 2 * a + ((far_right & bit) ? 2 : 1);
      pending &= ~bit;
      far_right &= ~bit;
      u = curr;
      level = l + 1;
    }
  }
}

} // namespace kdforge::kernels
