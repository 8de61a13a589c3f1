#pragma once
// Batched queries on left-balanced k-d trees: exact k nearest neighbours,
// closest point, radius count and radius search (CSR). Every entry point takes
// the execution space instance first; results live in its memory space.
// Distances are squared everywhere (named sq_*); radii are given unsquared.
// Missing neighbours are (index -1, squared distance +inf).
#include <kdforge/error.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/morton.hpp>
#include <kdforge/kernels/query/traversal.hpp>
#include <kdforge/memory.hpp>
#include <kdforge/options.hpp>
#include <kdforge/points.hpp>
#include <kdforge/profiling.hpp>
#include <kdforge/tree.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kdforge {

template <class MemorySpace, class T, class Index>
struct KnnResult {
  Kokkos::View<Index**, Kokkos::LayoutRight, MemorySpace> indices;   ///< M x k, input indices
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> sq_distances;  ///< M x k, ascending
};

template <class MemorySpace, class T, class Index>
struct ClosestResult {
  Kokkos::View<Index*, MemorySpace> indices;
  Kokkos::View<T*, MemorySpace> sq_distances;
};

template <class MemorySpace, class T, class Index>
struct RadiusResult {
  Kokkos::View<std::int64_t*, MemorySpace> offsets; ///< M + 1; row q is [offsets(q), offsets(q+1))
  Kokkos::View<Index*, MemorySpace> indices;
  Kokkos::View<T*, MemorySpace> sq_distances;
};

/// Scratch memory of batched queries: the processing order (Morton codes,
/// the order and its radix sort's buffers) and the radius search's scan.
/// Without one, every call allocates and frees these (on an H100, each
/// allocation and free of device memory costs tens of microseconds, and a
/// free waits for the device); a workspace passed to the calls of a loop
/// keeps them, grown to the largest call so far, so the loop allocates
/// nothing once the result Views are kept too. Use a workspace with one
/// execution space instance (calls on one instance run in order; calls on
/// two instances at once would share the scratch). Movable, not copyable.
template <class MemorySpace>
class QueryWorkspace {
 public:
  QueryWorkspace() = default;
  QueryWorkspace(QueryWorkspace const&) = delete;
  QueryWorkspace& operator=(QueryWorkspace const&) = delete;
  QueryWorkspace(QueryWorkspace&&) = default;
  QueryWorkspace& operator=(QueryWorkspace&&) = default;

  /// Bytes held now.
  std::size_t bytes() const {
    return codes.span() * sizeof(std::uint32_t) + order_bytes.span() + scratch.span() + regroup_bytes.span() +
           regroup_count.span() * sizeof(unsigned long long);
  }
  /// Frees everything (the next call allocates again).
  void release() { *this = QueryWorkspace(); }

  // kdforge's own: read and grown by the query functions
  Kokkos::View<std::uint32_t*, MemorySpace> codes;
  Kokkos::View<char*, MemorySpace> order_bytes;
  Kokkos::View<char*, MemorySpace> scratch;
  Kokkos::View<char*, MemorySpace> regroup_bytes;                 // saved walks (see automatic_regroup)
  // How many were saved: two counters taking turns (regroup_turn says
  // whose), the second pass zeroing the other one for the next call, so
  // no call needs a kernel of its own to reset its counter.
  Kokkos::View<unsigned long long*, MemorySpace> regroup_count;
  int regroup_turn = 0;
};

namespace detail {

template <class Exec>
constexpr bool runs_on_gpu() {
  return !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
}

/// The policy of the per-query kernels (kNN, closest point, radius,
/// approximate kNN). On CPUs, Kokkos' dynamic schedule: each thread starts
/// on its own contiguous share of the (Morton-ordered) queries, as with the
/// static one, and takes chunks from the others' shares when it runs out,
/// so one slower core no longer holds the whole call back. 16 cores of a
/// virtual Xeon host, 1M x 1M, same run (perf/NOTES.md, session 14): kNN
/// k = 8 111-116 -> 94-101 ms, k = 16 171-195 -> 155-164, closest point
/// 54-57 -> 44-49, and far less spread between repetitions. GPUs: the plain
/// policy (Kokkos ignores the schedule there).
template <class Exec>
using QueryPolicy = std::conditional_t<runs_on_gpu<Exec>(), Kokkos::RangePolicy<Exec>,
                                       Kokkos::RangePolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>>;

template <class Tree, class = void>
struct has_split_dim_as : std::false_type {};
template <class Tree>
struct has_split_dim_as<Tree, std::void_t<decltype(std::declval<Tree const&>().template split_dim_as<SplitPolicy::round_robin>(
                                  typename Tree::index_type(0), 0))>> : std::true_type {};

/// Calls f(tree), or on GPUs f(FixedSplitTree<Tree, P>(tree)) for the
/// tree's split policy P: the query kernels are compiled once per policy
/// there (see FixedSplitTree). CPUs predict the policy's branch, so their
/// kernels are not doubled.
template <class Exec, class Tree, class F>
void with_fixed_split(Tree const& tree, F const& f) {
  if constexpr (runs_on_gpu<Exec>() && has_split_dim_as<Tree>::value) {
    if (tree.split_policy() == SplitPolicy::round_robin) f(FixedSplitTree<Tree, SplitPolicy::round_robin>(tree));
    else f(FixedSplitTree<Tree, SplitPolicy::widest_dimension>(tree));
  } else {
    f(tree);
  }
}

/// How the queries of one call walk the tree.
struct Walk {
  Traversal traversal; // never automatic
  kernels::Buckets buckets;
};

/// Bucket levels when the options leave them to kdforge (-1): measured,
/// 1M uniform points and queries (perf/NOTES.md, session 4). H100 with the
/// one-node-per-iteration stack-free walk: 2 beats 3 by 5-9% (kNN k = 8
/// 1.52 vs 1.59 ms, closest 0.76 vs 0.84, radius 2.09 vs 2.20), 4 is
/// slower. 16 Xeon cores with the stack walk: 3 beats 2 by 7-25% (kNN k = 8
/// 130 vs 140 ms, closest 49 vs 57, radius 155 vs 195). With the trail walk
/// (session 6, H100) 2 is still the best or equal: kNN k = 8 1.58 / 1.49 /
/// 1.55 ms, closest 0.72 / 0.71 / 0.77, radius 1.63 / 1.61 / 1.70 for 1 / 2 / 3.
template <class Exec>
constexpr int default_bucket_levels() {
  return runs_on_gpu<Exec>() ? 2 : 3;
}

template <class Exec, class Options>
Walk make_walk(Options const& o, char const* where) {
  KDFORGE_REQUIRE(o.bucket_levels >= -1 && o.bucket_levels <= kernels::max_bucket_levels, where,
                  "bucket_levels must be -1 (automatic) or in [0, ", kernels::max_bucket_levels, "] (got ",
                  o.bucket_levels, ")");
  // Measured, 1M x 1M (perf/NOTES.md, session 6). H100, trail vs stack-free
  // in the same run: kNN k = 1 0.69-0.71 vs 0.76 ms, k = 8 1.50 vs 1.59,
  // k = 16 2.56 vs 2.89, closest 0.65-0.73 vs 0.76, radius count 0.67-0.74
  // vs 1.09, radius CSR 1.57-1.63 vs 2.24. 16 Xeon cores, kNN k = 8: stack
  // 119 ms, stack-free 165, trail 180.
  Traversal const t = o.traversal != Traversal::automatic ? o.traversal
                      : runs_on_gpu<Exec>()                 ? Traversal::trail
                                                            : Traversal::stack;
  return {t, kernels::Buckets(o.bucket_levels < 0 ? default_bucket_levels<Exec>() : o.bucket_levels)};
}

template <class Tree, class Visitor>
KOKKOS_FORCEINLINE_FUNCTION void traverse(Walk const& walk, Tree const& tree, typename Tree::point_type const& q,
                                          Visitor& v) {
  if (walk.traversal == Traversal::trail) kernels::traverse_trail(tree, q, v, walk.buckets);
  else if (walk.traversal == Traversal::stack_free) kernels::traverse_stack_free(tree, q, v, walk.buckets);
  else kernels::traverse_stack(tree, q, v, walk.buckets);
}

// Queries as a View<Point<T, D>*> in the execution space; copied only when
// they come in another form.
template <class Exec, class Tree, class Queries>
auto query_points(Exec const& exec, Queries const& queries) {
  static_assert(check_points_container<Queries, Exec>());
  using A = AccessTraits<Queries>;
  static_assert(std::is_same<typename A::coordinate_type, typename Tree::coordinate_type>::value,
                "kdforge: queries and tree must have the same coordinate type (float or double)");
  static_assert(A::dimension == Tree::dimension, "kdforge: queries and tree must have the same dimension");
  using PV = Kokkos::View<typename Tree::point_type*, typename Exec::memory_space>;
  if constexpr (std::is_convertible<Queries, PV>::value) return PV(queries);
  else return to_points(exec, queries, "kdforge::query::points");
}

/// The order in which the queries are processed (empty: as given), in
/// `ws`, which must stay untouched until the kernels that read it have run.
template <class Exec, class Tree, class QV>
Kokkos::View<typename Tree::index_type*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
processing_order(Exec const& exec, Tree const& tree, QV const& q, QueryOrder order,
                 QueryWorkspace<typename Exec::memory_space>& ws) {
  // Morton order on every target (automatic): on the 16-core host kNN k = 8
  // took 130 ms instead of 160 once the sort ran on all cores.
  bool const sort = order == QueryOrder::morton || order == QueryOrder::automatic;
  if (!sort || q.extent(0) < 2 || tree.size() == 0) return {};
  Region region("kdforge::query::morton_order");
  return kernels::morton_order<Exec, typename Tree::coordinate_type, Tree::dimension, typename Tree::index_type>(
      exec, q, tree.bounds(), ws.codes, ws.order_bytes, ws.scratch);
}

template <class T>
T checked_sq_radius(double r, char const* where, char const* what) {
  KDFORGE_REQUIRE(r >= 0, where, what, " must be >= 0 (got ", r, ")");
  if (std::isinf(r)) return detail::infinity<T>();
  return T(r) * T(r);
}

template <class View2D>
struct Row {
  View2D v;
  std::int64_t row;
  KOKKOS_FORCEINLINE_FUNCTION typename View2D::reference_type operator()(int j) const { return v(row, j); }
};
template <class View1D>
struct Segment {
  View1D v;
  std::int64_t begin;
  KOKKOS_FORCEINLINE_FUNCTION typename View1D::reference_type operator()(int j) const { return v(begin + j); }
};

/// Writes the k results of a sorted candidate list into row qi, empty slots
/// as (-1, +inf).
template <class Result>
struct WriteRow {
  Result const& res;
  std::int64_t qi;
  template <class N>
  KOKKOS_FORCEINLINE_FUNCTION void operator()(int j, N const& r) const {
    using Index = typename decltype(res.indices)::non_const_value_type;
    using T = typename decltype(res.sq_distances)::non_const_value_type;
    bool const missing = r.index == kernels::empty_slot_index<Index>();
    res.indices(qi, j) = missing ? invalid_index<Index>() : r.index;
    res.sq_distances(qi, j) = missing ? infinity<T>() : r.sq_dist;
  }
};
template <class Result, class Cand>
KOKKOS_FORCEINLINE_FUNCTION void write_sorted_row(Result const& res, std::int64_t qi, Cand const& cand, int k) {
  cand.for_each_result(k, WriteRow<Result>{res, qi});
}

/// Sorts CSR row [b, b + len) by (squared distance, index).
template <class Result>
KOKKOS_FORCEINLINE_FUNCTION void sort_csr_row(Result const& res, std::int64_t b, int len) {
  using T = typename decltype(res.sq_distances)::non_const_value_type;
  using Index = typename decltype(res.indices)::non_const_value_type;
  using IS = Segment<decltype(res.indices)>;
  using DS = Segment<decltype(res.sq_distances)>;
  kernels::RowHeapOps<T, Index, IS, DS> heap{IS{res.indices, b}, DS{res.sq_distances, b}, len};
  heap.make_heap();
  heap.sort_heap();
}

/// Sorts the heap kept in row qi and marks its empty slots (-1, +inf).
template <class Result, class Cand>
KOKKOS_FORCEINLINE_FUNCTION void finish_heap_row(Result const& res, std::int64_t qi, Cand& cand, int k) {
  using Index = typename decltype(res.indices)::non_const_value_type;
  using T = typename decltype(res.sq_distances)::non_const_value_type;
  cand.heap.sort_heap();
  for (int j = 0; j < k; ++j) {
    if (res.indices(qi, j) == kernels::empty_slot_index<Index>()) {
      res.indices(qi, j) = invalid_index<Index>();
      res.sq_distances(qi, j) = infinity<T>();
    }
  }
}

/// A kNN walk set aside by KnnSortedFunctor (see automatic_regroup).
template <class Tree, int CAP>
struct RegroupRecord {
  typename kernels::SortedCandidates<Tree, CAP>::Key c[CAP];
  kernels::TrailState<typename Tree::index_type> state;
  std::int64_t qi;
};

/// A slot of `counter`'s array for each calling thread. On CUDA one atomic
/// per warp (the set-aside queries of a warp leave their loops together):
/// ~half a million atomics on one address would serialize.
KOKKOS_INLINE_FUNCTION unsigned long long claim_slot(unsigned long long* counter) {
#if defined(__CUDA_ARCH__)
  unsigned const mask = __activemask();
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  int const leader = __ffs(mask) - 1;
  unsigned long long base = 0;
  if (int(lane) == leader) base = atomicAdd(counter, (unsigned long long)__popc(mask));
  base = __shfl_sync(mask, base, leader);
  return base + (unsigned long long)__popc(mask & ((1u << lane) - 1u));
#else
  return Kokkos::atomic_fetch_add(counter, 1ull);
#endif
}

template <class Tree, class QV, class OV, class Result, int CAP>
struct KnnSortedFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using Record = RegroupRecord<Tree, CAP>;
  using MS = typename Tree::memory_space;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  int k;
  T sq_cutoff;
  Walk walk;
  int regroup = 0; // > 0: set the walk aside after this many iterations (trail walk)
  Kokkos::View<Record*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> saved = {};
  Kokkos::View<unsigned long long*, MS> saved_count = {}; // two; this call's is saved_count(turn)
  int turn = 0;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    kernels::SortedCandidates<Tree, CAP> cand(tree, k, sq_cutoff);
    typename Tree::point_type const q(queries(qi));
    if (regroup > 0) {
      auto st = kernels::trail_descend(tree, q, cand.bound(), walk.buckets);
      if (!kernels::trail_shrinking_run(tree, q, cand, walk.buckets, st, regroup)) {
        // one slot per query at most: `saved` (M records) never overflows
        Record& r = saved(claim_slot(&saved_count(turn)));
        for (int j = 0; j < CAP; ++j) r.c[j] = cand.c[j];
        r.state = st;
        r.qi = qi;
        return;
      }
    } else {
      traverse(walk, tree, q, cand);
    }
    write_sorted_row(res, qi, cand, k);
  }
};

/// The second pass: finishes the walks KnnSortedFunctor set aside, packed
/// densely (in the order they were set aside) into warps.
template <class Tree, class QV, class Result, int CAP>
struct KnnResumeFunctor {
  using T = typename Tree::coordinate_type;
  using Record = RegroupRecord<Tree, CAP>;
  using MS = typename Tree::memory_space;
  Tree tree;
  QV queries;
  Result res;
  int k;
  T sq_cutoff;
  Walk walk;
  Kokkos::View<Record*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> saved;
  Kokkos::View<unsigned long long*, MS> saved_count;
  int turn;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    if (i == 0) saved_count(1 - turn) = 0; // the next call's counter (see QueryWorkspace::regroup_count)
    if (std::uint64_t(i) >= saved_count(turn)) return;
    Record const& r = saved(i);
    kernels::SortedCandidates<Tree, CAP> cand(tree, k, sq_cutoff);
    for (int j = 0; j < CAP; ++j) cand.c[j] = r.c[j];
    auto st = r.state;
    kernels::trail_shrinking_run(tree, typename Tree::point_type(queries(r.qi)), cand, walk.buckets, st, -1);
    write_sorted_row(res, r.qi, cand, k);
  }
};

template <class Tree, class QV, class OV, class Result>
struct KnnHeapFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  int k;
  T sq_cutoff;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    using IR = Row<decltype(res.indices)>;
    using DR = Row<decltype(res.sq_distances)>;
    kernels::RowHeapCandidates<Tree, IR, DR> cand(tree, IR{res.indices, qi}, DR{res.sq_distances, qi}, k, sq_cutoff);
    traverse(walk, tree, typename Tree::point_type(queries(qi)), cand);
    finish_heap_row(res, qi, cand, k);
  }
};

template <class Tree>
struct CountVisitor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  T sq_r;
  std::int64_t cap; // < 0: none
  std::int64_t count = 0;
  static constexpr bool fixed_bound = true; // see kernels::traverse_trail
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return cap >= 0 && count >= cap; }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index, T d2) { count += d2 <= sq_r ? 1 : 0; }
};

template <class Tree, class QV, class OV, class Counts>
struct RadiusCountFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  OV order;
  Counts counts;
  T sq_r;
  std::int64_t cap;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    CountVisitor<Tree> v{sq_r, cap};
    traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
    counts(qi) = v.count;
  }
};

template <class Tree, class Idx, class Dist>
struct FillVisitor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Idx idx;
  Dist dist;
  T sq_r;
  std::int64_t pos;
  static constexpr bool fixed_bound = true; // see kernels::traverse_trail
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index index, T d2) {
    if (d2 <= sq_r) {
      idx(pos) = index;
      dist(pos) = d2;
      ++pos;
    }
  }
};

template <class Tree, class QV, class OV, class Result>
struct RadiusFillFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  T sq_r;
  bool capped;
  bool sort;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    std::int64_t const b = res.offsets(qi);
    int const len = int(res.offsets(qi + 1) - b);
    using IS = Segment<decltype(res.indices)>;
    using DS = Segment<decltype(res.sq_distances)>;
    if (capped) {
      // the nearest `len` within the radius: a max-heap in the output row
      kernels::RowHeapCandidates<Tree, IS, DS> cand(tree, IS{res.indices, b}, DS{res.sq_distances, b}, len, sq_r);
      traverse(walk, tree, typename Tree::point_type(queries(qi)), cand);
      cand.heap.sort_heap();
    } else {
      FillVisitor<Tree, decltype(res.indices), decltype(res.sq_distances)> v{res.indices, res.sq_distances, sq_r, b};
      traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
      if (sort) sort_csr_row(res, b, len);
    }
  }
};

/// Counts every point within the radius and records the first `cap` of them,
/// in traversal order, in a scratch row.
template <class Tree, class Idx, class Dist>
struct BufferVisitor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Idx idx;
  Dist dist;
  T sq_r;
  std::int64_t row, cap;
  std::int64_t count = 0;
  static constexpr bool fixed_bound = true; // see kernels::traverse_trail
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index index, T d2) {
    if (d2 <= sq_r) {
      if (count < cap) {
        idx(row, count) = index;
        dist(row, count) = d2;
      }
      ++count;
    }
  }
};

template <class Tree, class QV, class OV, class Counts, class BI, class BD>
struct RadiusBufferFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  OV order;
  Counts counts;
  BI bidx;
  BD bdist;
  T sq_r;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    BufferVisitor<Tree, BI, BD> v{bidx, bdist, sq_r, i, std::int64_t(bidx.extent(1))};
    traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
    counts(qi) = v.count;
  }
};

/// Rows that fit the scratch are copied; the others are traversed again.
template <class Tree, class QV, class OV, class Result, class BI, class BD>
struct RadiusCopyFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  BI bidx;
  BD bdist;
  T sq_r;
  bool sort;
  Walk walk;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    std::int64_t const b = res.offsets(qi);
    int const len = int(res.offsets(qi + 1) - b);
    if (len <= int(bidx.extent(1))) {
      for (int j = 0; j < len; ++j) {
        res.indices(b + j) = bidx(i, j);
        res.sq_distances(b + j) = bdist(i, j);
      }
    } else {
      FillVisitor<Tree, decltype(res.indices), decltype(res.sq_distances)> v{res.indices, res.sq_distances, sq_r, b};
      traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
    }
    if (sort) sort_csr_row(res, b, len);
  }
};

/// Records every point within the radius, in traversal order, at the end
/// of a host buffer. Host execution spaces only; the device pass of a GPU
/// compiler sees an empty visit (the traversals are host-and-device code).
template <class Tree>
struct AppendVisitor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  std::vector<Neighbor<T, Index>>* out;
  T sq_r;
  static constexpr bool fixed_bound = true; // see kernels::traverse_trail
  KOKKOS_FORCEINLINE_FUNCTION T bound() const { return sq_r; }
  KOKKOS_FORCEINLINE_FUNCTION bool done() const { return false; }
  KOKKOS_FORCEINLINE_FUNCTION void visit(Index index, T d2) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    if (d2 <= sq_r) out->push_back({d2, index});
#else
    (void)index;
    (void)d2;
#endif
  }
};

/// CPUs: radius_search in one traversal. Chunk c of the processing order
/// appends its rows, one after the other, to its own buffer (*rows)[c] and
/// writes each query's count; after the scan of the counts, CopyRowsFunctor
/// moves every row to its CSR place. The GPU alternatives (count then fill,
/// or fixed per-query scratch) traverse twice or spend M x slots of memory;
/// here the extra memory is the results' size and each thread's appends stay
/// in its own cache. 2 cores, 1M x 1M, ~8 neighbours (perf/NOTES.md,
/// session 5): 451-490 ms appended, 694-794 count then fill, 488-521 with
/// 16 scratch slots per query (128 MB of scratch).
template <class Tree, class QV, class OV, class Counts>
struct RadiusAppendFunctor {
  using T = typename Tree::coordinate_type;
  Tree tree;
  QV queries;
  OV order;
  Counts counts;
  T sq_r;
  Walk walk;
  std::int64_t m, chunk;
  std::vector<std::vector<Neighbor<T, typename Tree::index_type>>>* rows;
  // An exception must not leave a parallel region (OpenMP would terminate
  // the program): a chunk whose buffer cannot grow raises the flag and gives
  // its memory back, the other chunks stop at their next query, and the
  // caller throws after the region.
  std::atomic<bool>* out_of_memory;
  void operator()(std::int64_t c) const {
    auto& out = (*rows)[c];
    std::int64_t const end = (c + 1) * chunk < m ? (c + 1) * chunk : m;
    try {
      for (std::int64_t i = c * chunk; i < end && !out_of_memory->load(std::memory_order_relaxed); ++i) {
        std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
        std::size_t const before = out.size();
        AppendVisitor<Tree> v{&out, sq_r};
        traverse(walk, tree, typename Tree::point_type(queries(qi)), v);
        counts(qi) = std::int64_t(out.size() - before);
      }
    } catch (std::bad_alloc const&) {
      out_of_memory->store(true, std::memory_order_relaxed);
      std::vector<Neighbor<T, typename Tree::index_type>>().swap(out);
    }
  }
};

template <class OV, class Result, class N>
struct CopyRowsFunctor {
  OV order;
  Result res;
  bool sort;
  std::int64_t m, chunk;
  std::vector<std::vector<N>>* rows;
  void operator()(std::int64_t c) const {
    auto& in = (*rows)[c];
    std::size_t pos = 0;
    std::int64_t const end = (c + 1) * chunk < m ? (c + 1) * chunk : m;
    for (std::int64_t i = c * chunk; i < end; ++i) {
      std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
      std::int64_t const b = res.offsets(qi);
      int const len = int(res.offsets(qi + 1) - b);
      for (int j = 0; j < len; ++j) {
        res.indices(b + j) = in[pos + j].index;
        res.sq_distances(b + j) = in[pos + j].sq_dist;
      }
      pos += std::size_t(len);
      if (sort) sort_csr_row(res, b, len);
    }
    std::vector<N>().swap(in); // give the memory back as soon as the chunk is copied
  }
};

} // namespace detail

namespace detail {

/// v keeps its allocation when it already has extent e0 (x e1); otherwise a
/// new one (contents undefined, huge pages asked for on hosts: every query
/// writes its row at its caller's position) replaces it.
template <class V>
void ensure_extents(V& v, char const* label, std::int64_t e0) {
  if (v.data() != nullptr && std::int64_t(v.extent(0)) == e0) return;
  v = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), e0);
  advise_huge_pages(v);
}
template <class V>
void ensure_extents(V& v, char const* label, std::int64_t e0, std::int64_t e1) {
  if (v.data() != nullptr && std::int64_t(v.extent(0)) == e0 && std::int64_t(v.extent(1)) == e1) return;
  v = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), e0, e1);
  advise_huge_pages(v);
}

/// A 1-D View read and written as the single column of an M x 1 result, so
/// closest point shares the kNN kernels.
template <class V>
struct Column {
  using non_const_value_type = typename V::non_const_value_type;
  V v;
  KOKKOS_FORCEINLINE_FUNCTION typename V::reference_type operator()(std::int64_t i, int) const { return v(i); }
};
template <class IV, class DV>
struct ColumnResult {
  Column<IV> indices;
  Column<DV> sq_distances;
};

template <class R>
struct is_column_result : std::false_type {};
template <class IV, class DV>
struct is_column_result<ColumnResult<IV, DV>> : std::true_type {};

/// QueryOptions::regroup_iterations checked and resolved for one call (0: off).
template <class Exec>
int regroup_iterations(QueryOptions const& o, Walk const& walk, std::int64_t n, std::int64_t m, int k,
                       char const* where) {
  KDFORGE_REQUIRE(o.regroup_iterations >= -1, where,
                  "QueryOptions::regroup_iterations must be -1 (automatic), 0 (off) or > 0 (got ",
                  o.regroup_iterations, ")");
  if (o.regroup_iterations > 0) {
    KDFORGE_REQUIRE(walk.traversal == Traversal::trail, where,
                    "QueryOptions::regroup_iterations > 0 needs Traversal::trail, the walk it sets aside");
    return k <= 32 ? o.regroup_iterations : 0;
  }
  if (o.regroup_iterations == 0 || !runs_on_gpu<Exec>() || walk.traversal != Traversal::trail || k != 1 ||
      m < 65536 || n == 0)
    return 0;
  // Host simulation of the GPU loop (uniform 3-D points and queries,
  // perf/NOTES.md session 10): a cap near the mean iterations of a query
  // cuts a warp's iterations the most (k = 1: mean 64 for 1M points, 71
  // for 10M; by 20%). Measured on an H100 (run32, 1M x 1M): closest point
  // 0.50-0.52 -> 0.46-0.48 ms with caps 50-70, 0.49 with 90, 0.55 with 110;
  // 10M points 0.57 -> 0.54. For k = 8 and 16 every cap tried (120-200)
  // was slower (k = 8 1.20 -> 1.25-1.30 ms): saving 8 candidates and the
  // second launch cost more than the warps gain, so they are not regrouped.
  // With the deferred first descent (session 13; see kernels::trail_descend)
  // the main loop's mean is 48 for 1M points; caps 40 / 50 / 60 measured
  // closest 0.391 / 0.374 / 0.373-0.393 ms, so the cap stays.
  return 3 * lb::num_levels(n);
}

template <int CAP, class Exec, class Tree, class QV, class OV, class Result>
void run_sorted(char const* name, char const* resume_name, Exec const& exec, Tree const& tree, QV const& q,
                OV const& order, Result const& res, int k, typename Tree::coordinate_type sq_cutoff, Walk const& walk,
                int regroup, QueryWorkspace<typename Exec::memory_space>& ws) {
  using MS = typename Exec::memory_space;
  std::int64_t const m = std::int64_t(q.extent(0));
  QueryPolicy<Exec> policy(exec, 0, m);
  KnnSortedFunctor<Tree, QV, OV, Result, CAP> f{tree, q, order, res, k, sq_cutoff, walk};
  if (regroup <= 0) {
    Kokkos::parallel_for(name, policy, f);
    return;
  }
  using Record = RegroupRecord<Tree, CAP>;
  std::size_t const bytes = std::size_t(m) * sizeof(Record);
  if (ws.regroup_bytes.extent(0) < bytes)
    ws.regroup_bytes = Kokkos::View<char*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::regroup"), bytes);
  if (!ws.regroup_count.data()) { // zeroed once, here; the second passes keep them so
    ws.regroup_count = Kokkos::View<unsigned long long*, MS>("kdforge::knn::regroup_count", 2);
    ws.regroup_turn = 0;
  }
  f.regroup = regroup;
  f.saved = decltype(f.saved)(reinterpret_cast<Record*>(ws.regroup_bytes.data()), m);
  f.saved_count = ws.regroup_count;
  f.turn = ws.regroup_turn;
  Kokkos::parallel_for(name, policy, f);
  Kokkos::parallel_for(resume_name, policy,
                       KnnResumeFunctor<Tree, QV, Result, CAP>{tree, q, res, k, sq_cutoff, walk, f.saved, f.saved_count, f.turn});
  ws.regroup_turn = 1 - ws.regroup_turn;
}

template <class Exec, class Tree, class QV, class Result>
void run_knn(Exec const& exec, Tree const& tree, QV const& q, int k, Result const& res,
             typename Tree::coordinate_type sq_cutoff, Walk const& walk, QueryOrder order_option, int regroup,
             QueryWorkspace<typename Exec::memory_space>& ws) {
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return;
  Region region("kdforge::knn");
  auto order = processing_order(exec, tree, q, order_option, ws);
  QueryPolicy<Exec> policy(exec, 0, m);
  using OV = decltype(order);
  constexpr bool column = is_column_result<Result>::value; // closest point: k = 1 only
  if (column || k <= 1) run_sorted<1>("kdforge::knn::k1", "kdforge::knn::k1::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws);
  else if constexpr (!column) {
    if (k <= 4) run_sorted<4>("kdforge::knn::k4", "kdforge::knn::k4::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws);
    else if (k <= 8) run_sorted<8>("kdforge::knn::k8", "kdforge::knn::k8::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws);
    else if (k <= 16) run_sorted<16>("kdforge::knn::k16", "kdforge::knn::k16::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws);
    else if (k <= 32) run_sorted<32>("kdforge::knn::k32", "kdforge::knn::k32::resume", exec, tree, q, order, res, k, sq_cutoff, walk, regroup, ws);
    else Kokkos::parallel_for("kdforge::knn::heap", policy, KnnHeapFunctor<Tree, QV, OV, Result>{tree, q, order, res, k, sq_cutoff, walk});
  }
}

template <class Exec, class Tree>
void check_tree_space(char const*) {
  static_assert(std::is_same<typename Exec::memory_space, typename Tree::memory_space>::value,
                "kdforge: the tree lives in another memory space than the execution space's");
}

} // namespace detail

template <class Exec, class Tree>
using KnnResultFor = KnnResult<typename Exec::memory_space, typename Tree::coordinate_type, typename Tree::index_type>;
template <class Exec, class Tree>
using ClosestResultFor = ClosestResult<typename Exec::memory_space, typename Tree::coordinate_type, typename Tree::index_type>;
template <class Exec, class Tree>
using RadiusResultFor = RadiusResult<typename Exec::memory_space, typename Tree::coordinate_type, typename Tree::index_type>;

/// The k nearest neighbours of each query (k >= 1), sorted by (squared
/// distance, index), written into `out`. Slots beyond the number of points,
/// or beyond options.cutoff_radius, are (-1, +inf). out's Views are kept
/// when they already are M x k and replaced otherwise; with the same
/// `workspace` too, a loop of same-sized queries allocates nothing.
/// Asynchronous: fence `exec` before reading the results on the host.
template <class Exec, class Tree, class Queries>
void knn(Exec const& exec, Tree const& tree, Queries const& queries, int k, KnnResultFor<Exec, Tree>& out,
         QueryOptions const& options, QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  detail::check_tree_space<Exec, Tree>("knn");
  KDFORGE_REQUIRE(k >= 1, "knn", "k must be >= 1 (got ", k, ")");
  T const sq_cutoff = detail::checked_sq_radius<T>(options.cutoff_radius, "knn", "QueryOptions::cutoff_radius");
  auto const walk = detail::make_walk<Exec>(options, "knn");
  auto q = detail::query_points<Exec, Tree>(exec, queries);
  std::int64_t const m = std::int64_t(q.extent(0));
  detail::ensure_extents(out.indices, "kdforge::knn::indices", m, k);
  detail::ensure_extents(out.sq_distances, "kdforge::knn::sq_distances", m, k);
  int const regroup = detail::regroup_iterations<Exec>(options, walk, std::int64_t(tree.node_count()), m, k, "knn");
  detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
    detail::run_knn(exec, t, q, k, out, sq_cutoff, walk, options.order, regroup, workspace);
  });
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class Queries>
void knn(Exec const& exec, Tree const& tree, Queries const& queries, int k, KnnResultFor<Exec, Tree>& out,
         QueryOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  knn(exec, tree, queries, k, out, options, workspace);
}

/// As above, into newly allocated results.
template <class Exec, class Tree, class Queries>
KnnResultFor<Exec, Tree> knn(Exec const& exec, Tree const& tree, Queries const& queries, int k,
                             QueryOptions const& options = {}) {
  KnnResultFor<Exec, Tree> res;
  knn(exec, tree, queries, k, res, options);
  return res;
}

/// The closest point of each query, or (-1, +inf) when the tree is empty or
/// nothing lies within options.cutoff_radius, written into `out` (kept when
/// its Views have extent M, replaced otherwise). `workspace`: as for knn.
template <class Exec, class Tree, class Queries>
void closest_point(Exec const& exec, Tree const& tree, Queries const& queries, ClosestResultFor<Exec, Tree>& out,
                   QueryOptions const& options, QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  detail::check_tree_space<Exec, Tree>("closest_point");
  T const sq_cutoff = detail::checked_sq_radius<T>(options.cutoff_radius, "closest_point", "QueryOptions::cutoff_radius");
  auto const walk = detail::make_walk<Exec>(options, "closest_point");
  auto q = detail::query_points<Exec, Tree>(exec, queries);
  std::int64_t const m = std::int64_t(q.extent(0));
  detail::ensure_extents(out.indices, "kdforge::closest::indices", m);
  detail::ensure_extents(out.sq_distances, "kdforge::closest::sq_distances", m);
  using R = detail::ColumnResult<decltype(out.indices), decltype(out.sq_distances)>;
  int const regroup = detail::regroup_iterations<Exec>(options, walk, std::int64_t(tree.node_count()), m, 1, "closest_point");
  detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
    detail::run_knn(exec, t, q, 1, R{{out.indices}, {out.sq_distances}}, sq_cutoff, walk, options.order, regroup, workspace);
  });
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class Queries>
void closest_point(Exec const& exec, Tree const& tree, Queries const& queries, ClosestResultFor<Exec, Tree>& out,
                   QueryOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  closest_point(exec, tree, queries, out, options, workspace);
}

/// As above, into newly allocated results.
template <class Exec, class Tree, class Queries>
ClosestResultFor<Exec, Tree> closest_point(Exec const& exec, Tree const& tree, Queries const& queries,
                                           QueryOptions const& options = {}) {
  ClosestResultFor<Exec, Tree> res;
  closest_point(exec, tree, queries, res, options);
  return res;
}

/// Number of points within `radius` (inclusive) of each query, capped at
/// options.max_neighbors when that is >= 0, written into `counts` (kept when
/// it has extent M, replaced otherwise). `workspace`: as for knn.
template <class Exec, class Tree, class Queries>
void radius_count(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                  Kokkos::View<std::int64_t*, typename Exec::memory_space>& counts, RadiusOptions const& options,
                  QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  detail::check_tree_space<Exec, Tree>("radius_count");
  T const sq_r = detail::checked_sq_radius<T>(radius, "radius_count", "radius");
  KDFORGE_REQUIRE(options.max_neighbors >= -1, "radius_count", "RadiusOptions::max_neighbors must be >= 0, or -1 for no limit");
  auto const walk = detail::make_walk<Exec>(options, "radius_count");
  auto q = detail::query_points<Exec, Tree>(exec, queries);
  std::int64_t const m = std::int64_t(q.extent(0));
  detail::ensure_extents(counts, "kdforge::radius::counts", m);
  if (m == 0) return;
  detail::Region region("kdforge::radius_count");
  auto order = detail::processing_order(exec, tree, q, options.order, workspace);
  detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
    using FT = std::decay_t<decltype(t)>;
    Kokkos::parallel_for("kdforge::radius::count", detail::QueryPolicy<Exec>(exec, 0, m),
                         detail::RadiusCountFunctor<FT, decltype(q), decltype(order), std::decay_t<decltype(counts)>>{
                             t, q, order, counts, sq_r, options.max_neighbors, walk});
  });
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class Queries>
void radius_count(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                  Kokkos::View<std::int64_t*, typename Exec::memory_space>& counts, RadiusOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  radius_count(exec, tree, queries, radius, counts, options, workspace);
}

/// As above, into a newly allocated View.
template <class Exec, class Tree, class Queries>
Kokkos::View<std::int64_t*, typename Exec::memory_space>
radius_count(Exec const& exec, Tree const& tree, Queries const& queries, double radius, RadiusOptions const& options = {}) {
  Kokkos::View<std::int64_t*, typename Exec::memory_space> counts;
  radius_count(exec, tree, queries, radius, counts, options);
  return counts;
}

/// All points within `radius` (inclusive) of each query, in CSR form, built
/// in two passes (count, then fill) so no buffer size is guessed. With
/// max_neighbors >= 0 each row keeps the nearest ones only (sorted). Written
/// into `out`: offsets is kept when it has extent M + 1, indices and
/// sq_distances when their extent is the number of neighbours found; each is
/// replaced otherwise. Returns with the results complete (the neighbour count
/// is read back on the way). `workspace`: as for knn. Running out of memory
/// for the rows throws kdforge::Error (`out` is then left with unspecified,
/// valid contents).
template <class Exec, class Tree, class Queries>
void radius_search(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                   RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options,
                   QueryWorkspace<typename Exec::memory_space>& workspace) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using MS = typename Exec::memory_space;
  detail::check_tree_space<Exec, Tree>("radius_search");
  T const sq_r = detail::checked_sq_radius<T>(radius, "radius_search", "radius");
  KDFORGE_REQUIRE(options.max_neighbors >= -1, "radius_search", "RadiusOptions::max_neighbors must be >= 0, or -1 for no limit");
  KDFORGE_REQUIRE(options.max_neighbors <= std::int64_t(1) << 30, "radius_search", "RadiusOptions::max_neighbors too large");
  KDFORGE_REQUIRE(options.buffer_size >= -1 && options.buffer_size <= std::int64_t(1) << 20, "radius_search",
                  "RadiusOptions::buffer_size must be -1 (automatic) or in [0, 2^20] (got ", options.buffer_size, ")");
  auto const walk = detail::make_walk<Exec>(options, "radius_search");
  detail::Region region("kdforge::radius_search");
  auto q = detail::query_points<Exec, Tree>(exec, queries);
  std::int64_t const m = std::int64_t(q.extent(0));
  auto order = detail::processing_order(exec, tree, q, options.order, workspace);

  using Result = RadiusResultFor<Exec, Tree>;
  Result& res = out;
  detail::ensure_extents(res.offsets, "kdforge::radius::offsets", m + 1);
  auto counts = Kokkos::subview(res.offsets, Kokkos::make_pair(std::int64_t(0), m));
  // The scan runs over all M + 1 offsets, the last one 0 before it: the
  // total lands in offsets(M) on the device, and one read of it is the only
  // wait (a scan that returns its total reads the input's last element first
  // and waits for the counts, then again for the sum).
  auto const last = Kokkos::subview(res.offsets, m);
  Kokkos::deep_copy(exec, last, std::int64_t(0));
  bool const buffered = options.buffer_size > 0 && options.max_neighbors < 0;
  bool const appended = !detail::runs_on_gpu<Exec>() && options.buffer_size < 0 && options.max_neighbors < 0;
  using N = Neighbor<T, Index>;
  std::vector<std::vector<N>> rows; // appended: one buffer per chunk of queries
  // chunks: ~16 per thread for balance, each large enough to amortise its buffer
  std::int64_t const chunk = std::max<std::int64_t>(256, m / (16 * std::int64_t(exec.concurrency())) + 1);
  std::int64_t const n_chunks = m > 0 ? (m + chunk - 1) / chunk : 0;
  using ChunkPolicy = detail::QueryPolicy<Exec>; // host only here: the dynamic schedule
  // Scratch rows are indexed by processing position and stored slot-major
  // (LayoutLeft): slot j of a warp's 32 queries is one contiguous run, so
  // their writes and reads coalesce (row-major scratch measured slower than
  // two traversals on the H100).
  Kokkos::View<Index**, Kokkos::LayoutLeft, MS> bidx;
  Kokkos::View<T**, Kokkos::LayoutLeft, MS> bdist;
  if constexpr (!detail::runs_on_gpu<Exec>()) {
    if (m > 0 && appended) {
      rows.resize(std::size_t(n_chunks));
      std::atomic<bool> out_of_memory{false};
      Kokkos::parallel_for("kdforge::radius::count_and_append", ChunkPolicy(exec, 0, n_chunks),
                           detail::RadiusAppendFunctor<Tree, decltype(q), decltype(order), decltype(counts)>{
                               tree, q, order, counts, sq_r, walk, m, chunk, &rows, &out_of_memory});
      exec.fence();
      if (out_of_memory.load()) {
        std::size_t found = 0;
        for (auto const& r : rows) found += r.size();
        std::vector<std::vector<N>>().swap(rows);
        detail::fail("radius_search", "out of memory while recording the neighbours (", found,
                     " recorded when it ran out, ", sizeof(N),
                     " bytes each); use a smaller radius, RadiusOptions::max_neighbors, or fewer queries per call");
      }
    }
  }
  if (appended) {
    // counted and recorded above
  } else if (m > 0 && buffered) {
    bidx = decltype(bidx)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::radius::buffer_indices"), m, options.buffer_size);
    bdist = decltype(bdist)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::radius::buffer_sq_distances"), m, options.buffer_size);
    detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
      using FT = std::decay_t<decltype(t)>;
      Kokkos::parallel_for("kdforge::radius::count_and_buffer", detail::QueryPolicy<Exec>(exec, 0, m),
                           detail::RadiusBufferFunctor<FT, decltype(q), decltype(order), decltype(counts), decltype(bidx),
                                                       decltype(bdist)>{t, q, order, counts, bidx, bdist, sq_r, walk});
    });
  } else if (m > 0) {
    detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
      using FT = std::decay_t<decltype(t)>;
      Kokkos::parallel_for("kdforge::radius::count", detail::QueryPolicy<Exec>(exec, 0, m),
                           detail::RadiusCountFunctor<FT, decltype(q), decltype(order), decltype(counts)>{
                               t, q, order, counts, sq_r, options.max_neighbors, walk});
    });
  }
  backend::exclusive_scan_async(exec, res.offsets, res.offsets, workspace.scratch);
  std::int64_t total = 0;
  Kokkos::deep_copy(exec, Kokkos::View<std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&total), last);
  exec.fence();
  detail::ensure_extents(res.indices, "kdforge::radius::indices", total);
  detail::ensure_extents(res.sq_distances, "kdforge::radius::sq_distances", total);
  if constexpr (!detail::runs_on_gpu<Exec>()) {
    if (m > 0 && appended) {
      Kokkos::parallel_for("kdforge::radius::copy_rows", ChunkPolicy(exec, 0, n_chunks),
                           detail::CopyRowsFunctor<decltype(order), Result, N>{order, res, options.sort, m, chunk, &rows});
    }
  }
  if (appended) {
    // copied above
  } else if (m > 0 && buffered) {
    detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
      using FT = std::decay_t<decltype(t)>;
      Kokkos::parallel_for("kdforge::radius::copy", Kokkos::RangePolicy<Exec>(exec, 0, m),
                           detail::RadiusCopyFunctor<FT, decltype(q), decltype(order), Result, decltype(bidx), decltype(bdist)>{
                               t, q, order, res, bidx, bdist, sq_r, options.sort, walk});
    });
  } else if (m > 0) {
    detail::with_fixed_split<Exec>(tree, [&](auto const& t) {
      using FT = std::decay_t<decltype(t)>;
      Kokkos::parallel_for("kdforge::radius::fill", detail::QueryPolicy<Exec>(exec, 0, m),
                           detail::RadiusFillFunctor<FT, decltype(q), decltype(order), Result>{
                               t, q, order, res, sq_r, options.max_neighbors >= 0, options.sort, walk});
    });
  }
  exec.fence();
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class Queries>
void radius_search(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                   RadiusResultFor<Exec, Tree>& out, RadiusOptions const& options = {}) {
  QueryWorkspace<typename Exec::memory_space> workspace;
  radius_search(exec, tree, queries, radius, out, options, workspace);
}

/// As above, into newly allocated results.
template <class Exec, class Tree, class Queries>
RadiusResultFor<Exec, Tree> radius_search(Exec const& exec, Tree const& tree, Queries const& queries, double radius,
                                          RadiusOptions const& options = {}) {
  RadiusResultFor<Exec, Tree> res;
  radius_search(exec, tree, queries, radius, res, options);
  return res;
}

} // namespace kdforge
