#pragma once
// Approximate k nearest neighbours with a bounded double-ended priority queue
// (Wehr & Radkowski 2018, section III-E; priority search after Arya et al.
// 1998, min-max heap after Atkinson et al. 1986).
//
// One thread per query descends the tree to a leaf, putting each branch not
// taken into a min-max heap of capacity Q keyed by a lower bound of its
// distance (the largest squared plane distance on the way down: Friedman et
// al.'s "bounds-overlap-ball" test). At a leaf the nearest pending branch is
// popped and the descent continues from there; a branch whose bound exceeds
// the current k-th distance is skipped, and the search ends when none is
// left. When the heap is full, a closer branch replaces the farthest pending
// one, which is dropped for good: that is where the answer becomes
// approximate. With Q at least the number of branches ever pending (Q >= N
// always suffices) the result is exact; max_leaves, when set, stops each
// query after that many leaves. A very small queue (or leaf limit) may reach
// fewer than k points; the rest of such a row is (-1, +inf).
//
// Works on any kdforge tree (MedianTree, LeftBalancedTree). Results have the
// shape of knn(): rows of k (index, squared distance), ascending, ties by
// index, missing slots (-1, +inf).
#include <kdforge/error.hpp>
#include <kdforge/kernels/query/minmax_heap.hpp>
#include <kdforge/query.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace kdforge {

struct ApproximateOptions {
  /// Q: capacity of the pending-branch queue, >= 1. Up to 32 it lives in
  /// registers/local memory; larger queues use a scratch View of
  /// (queries in flight) x Q entries, processed in batches of bounded memory.
  int queue_capacity = 32;
  /// Stop each query after this many leaves (0: no limit).
  std::int64_t max_leaves = 0;
  /// Only neighbours with distance <= cutoff_radius are reported (not squared).
  double cutoff_radius = std::numeric_limits<double>::infinity();
  QueryOrder order = QueryOrder::automatic;
};

namespace detail {

template <class T, class Index>
struct PendingBranch {
  T lb;       ///< lower bound of the squared distance to anything below node
  Index node;
  KOKKOS_FORCEINLINE_FUNCTION bool operator<(PendingBranch const& o) const {
    return lb < o.lb || (lb == o.lb && node < o.node);
  }
};

/// Row q of a View of pending branches, as min-max heap storage.
template <class View2D>
struct QueueRow {
  View2D v;
  std::int64_t row;
  KOKKOS_FORCEINLINE_FUNCTION typename View2D::reference_type operator()(int j) const { return v(row, j); }
};

template <class Tree, class Cand, class Heap>
KOKKOS_FUNCTION void priority_search(Tree const& tree, typename Tree::point_type const& q, Cand& cand, Heap& heap,
                                     std::int64_t max_leaves) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using B = PendingBranch<T, Index>;
  Index const n = tree.node_count();
  if (n == 0) return;
  Index node = 0;
  T lb = 0;
  std::int64_t leaves = 0;
  while (true) {
    // descend, closer child first, queueing the farther one
    while (lb <= cand.bound()) {
      auto const p = tree.load(node);
      cand.visit(p.index, sq_distance(q, p));
      int const level = lb::level(node);
      int const dim = tree.split_dim(node, level);
      T const diff = kernels::component<Tree::dimension>(q, dim) - kernels::component<Tree::dimension>(p, dim);
      Index const close = diff < 0 ? 2 * node + 1 : 2 * node + 2;
      Index const far = diff < 0 ? 2 * node + 2 : 2 * node + 1;
      T const far_lb = diff * diff > lb ? diff * diff : lb;
      if (far < n && tree.has_node(far) && far_lb <= cand.bound()) heap.push_bounded(B{far_lb, far});
      if (!(close < n && tree.has_node(close))) break;
      node = close;
    }
    ++leaves;
    if (max_leaves > 0 && leaves >= max_leaves) return;
    if (heap.empty()) return;
    B const b = heap.pop_min();
    if (b.lb > cand.bound()) return; // everything pending is farther still
    node = b.node;
    lb = b.lb;
  }
}

template <class Tree, class QV, class OV, class Result, int CAP, int QCAP, class QueueView>
struct ApproxKnnFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using B = PendingBranch<T, Index>;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  int k;
  T sq_cutoff;
  int queue_capacity;
  std::int64_t max_leaves;
  QueueView queue; ///< used when QCAP == 0
  std::int64_t first; ///< batch offset

  template <class Cand>
  KOKKOS_FORCEINLINE_FUNCTION void search(std::int64_t i, std::int64_t qi, Cand& cand) const {
    if constexpr (QCAP > 0) {
      kernels::MinMaxHeap<B, kernels::LocalStorage<B, QCAP>> heap(kernels::LocalStorage<B, QCAP>{}, queue_capacity);
      priority_search(tree, queries(qi), cand, heap, max_leaves);
    } else {
      kernels::MinMaxHeap<B, QueueRow<QueueView>> heap(QueueRow<QueueView>{queue, i - first}, queue_capacity);
      priority_search(tree, queries(qi), cand, heap, max_leaves);
    }
  }

  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    if constexpr (CAP > 0) {
      kernels::SortedCandidates<Tree, CAP> cand(tree, k, sq_cutoff);
      search(i, qi, cand);
      write_sorted_row(res, qi, cand, k);
    } else {
      using IR = Row<decltype(res.indices)>;
      using DR = Row<decltype(res.sq_distances)>;
      kernels::RowHeapCandidates<Tree, IR, DR> cand(tree, IR{res.indices, qi}, DR{res.sq_distances, qi}, k, sq_cutoff);
      search(i, qi, cand);
      finish_heap_row(res, qi, cand, k);
    }
  }
};

template <int CAP, int QCAP, class Exec, class Tree, class QV, class OV, class Result>
void run_approx_knn(Exec const& exec, Tree const& tree, QV const& q, OV const& order, Result const& res, int k, 
                    typename Tree::coordinate_type sq_cutoff, ApproximateOptions const& o) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using QueueView = Kokkos::View<PendingBranch<T, Index>**, Kokkos::LayoutLeft, typename Exec::memory_space>;
  using F = ApproxKnnFunctor<Tree, QV, OV, Result, CAP, QCAP, QueueView>;
  std::int64_t const m = std::int64_t(q.extent(0));
  if constexpr (QCAP > 0) {
    Kokkos::parallel_for("kdforge::knn_approximate", QueryPolicy<Exec>(exec, 0, m),
                         F{tree, q, order, res, k, sq_cutoff, o.queue_capacity, o.max_leaves, {}, 0});
  } else {
    // At most ~256 MiB of queues at a time. LayoutLeft: on GPUs neighbouring
    // threads touch neighbouring addresses for the same heap slot.
    std::int64_t const per_query = std::int64_t(o.queue_capacity) * std::int64_t(sizeof(PendingBranch<T, Index>));
    std::int64_t const batch = std::max<std::int64_t>(1, std::min<std::int64_t>(m, (std::int64_t(256) << 20) / per_query));
    QueueView queue(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn_approximate::queues"), batch, o.queue_capacity);
    for (std::int64_t b = 0; b < m; b += batch) {
      std::int64_t const e = std::min(m, b + batch);
      Kokkos::parallel_for("kdforge::knn_approximate", QueryPolicy<Exec>(exec, b, e),
                           F{tree, q, order, res, k, sq_cutoff, o.queue_capacity, o.max_leaves, queue, b});
    }
  }
}

} // namespace detail

/// Approximate k nearest neighbours of each query (see the top of this file).
template <class Exec, class Tree, class Queries>
auto knn_approximate(Exec const& exec, Tree const& tree, Queries const& queries, int k,
                     ApproximateOptions const& options = {}) {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using MS = typename Exec::memory_space;
  static_assert(std::is_same<MS, typename Tree::memory_space>::value,
                "kdforge::knn_approximate: the tree lives in another memory space than the execution space's");
  KDFORGE_REQUIRE(k >= 1, "knn_approximate", "k must be >= 1 (got ", k, ")");
  KDFORGE_REQUIRE(options.queue_capacity >= 1, "knn_approximate", "ApproximateOptions::queue_capacity must be >= 1 (got ",
                  options.queue_capacity, ")");
  KDFORGE_REQUIRE(options.max_leaves >= 0, "knn_approximate", "ApproximateOptions::max_leaves must be >= 0 (got ",
                  options.max_leaves, ")");
  T const sq_cutoff = detail::checked_sq_radius<T>(options.cutoff_radius, "knn_approximate", "ApproximateOptions::cutoff_radius");
  auto q = detail::query_points<Exec, Tree>(exec, queries);
  std::int64_t const m = std::int64_t(q.extent(0));
  using Result = KnnResult<MS, T, Index>;
  Result res{decltype(Result::indices)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::indices"), m, k),
             decltype(Result::sq_distances)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn::sq_distances"), m, k)};
  QueryWorkspace<MS> workspace; // the processing order, kept until the kernels are queued
  auto order = detail::processing_order(exec, tree, q, options.order, workspace);
  bool const local = options.queue_capacity <= 32;
  if (k <= 8) {
    if (local) detail::run_approx_knn<8, 32>(exec, tree, q, order, res, k, sq_cutoff, options);
    else detail::run_approx_knn<8, 0>(exec, tree, q, order, res, k, sq_cutoff, options);
  } else if (k <= 32) {
    if (local) detail::run_approx_knn<32, 32>(exec, tree, q, order, res, k, sq_cutoff, options);
    else detail::run_approx_knn<32, 0>(exec, tree, q, order, res, k, sq_cutoff, options);
  } else {
    if (local) detail::run_approx_knn<0, 32>(exec, tree, q, order, res, k, sq_cutoff, options);
    else detail::run_approx_knn<0, 0>(exec, tree, q, order, res, k, sq_cutoff, options);
  }
  return res;
}

} // namespace kdforge
