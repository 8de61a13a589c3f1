#pragma once
// Approximate k nearest neighbours with a bounded double-ended priority
// queue (Wehr & Radkowski 2018, section III-E; priority search after Arya et
// al. 1998, min-max heap after Atkinson et al. 1986): the kernels around the
// priority-search walk (walks/priority.hpp). Results have the shape of
// knn's: rows of k (index, squared distance), ascending, ties by index,
// missing slots (-1, +inf). With a queue at least as large as the number of
// branches ever pending (Q >= N always suffices) the result is exact.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/query/order.hpp>
#include <kdforge/kernels/query/rows.hpp>
#include <kdforge/kernels/query/walks/priority.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>

namespace kdforge::detail {

template <class Tree, class QV, class OV, class Result, int CAP, int QCAP, class QueueView>
struct ApproxKnnFunctor {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using B = kernels::PendingBranch<T, Index>;
  Tree tree;
  QV queries;
  OV order;
  Result res;
  int k;
  T sq_cutoff;
  int queue_capacity;
  std::int64_t max_leaves;
  T scale; ///< (1 + eps)^2
  QueueView queue; ///< used when QCAP == 0
  std::int64_t first; ///< batch offset

  template <class Cand>
  KOKKOS_FORCEINLINE_FUNCTION void search(std::int64_t i, std::int64_t qi, Cand& cand) const {
    if constexpr (QCAP > 0) {
      kernels::MinMaxHeap<B, kernels::LocalStorage<B, QCAP>> heap(kernels::LocalStorage<B, QCAP>{}, queue_capacity);
      kernels::priority_search(tree, queries(qi), cand, heap, max_leaves, scale);
    } else {
      kernels::MinMaxHeap<B, kernels::QueueRow<QueueView>> heap(kernels::QueueRow<QueueView>{queue, i - first}, queue_capacity);
      kernels::priority_search(tree, queries(qi), cand, heap, max_leaves, scale);
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
  using QueueView = Kokkos::View<kernels::PendingBranch<T, Index>**, Kokkos::LayoutLeft, typename Exec::memory_space>;
  using F = ApproxKnnFunctor<Tree, QV, OV, Result, CAP, QCAP, QueueView>;
  std::int64_t const m = std::int64_t(q.extent(0));
  T const scale = T((1.0 + o.eps) * (1.0 + o.eps));
  if constexpr (QCAP > 0) {
    Kokkos::parallel_for("kdforge::knn_approximate", QueryPolicy<Exec>(exec, 0, m),
                         F{tree, q, order, res, k, sq_cutoff, o.queue_capacity, o.max_leaves, scale, {}, 0});
  } else {
    // At most ~256 MiB of queues at a time. LayoutLeft: on GPUs neighbouring
    // threads touch neighbouring addresses for the same heap slot.
    std::int64_t const per_query = std::int64_t(o.queue_capacity) * std::int64_t(sizeof(kernels::PendingBranch<T, Index>));
    std::int64_t const batch = std::max<std::int64_t>(1, std::min<std::int64_t>(m, (std::int64_t(256) << 20) / per_query));
    auto queue = backend::allocate<QueueView>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::knn_approximate::queues"), batch, o.queue_capacity);
    for (std::int64_t b = 0; b < m; b += batch) {
      std::int64_t const e = std::min(m, b + batch);
      Kokkos::parallel_for("kdforge::knn_approximate", QueryPolicy<Exec>(exec, b, e),
                           F{tree, q, order, res, k, sq_cutoff, o.queue_capacity, o.max_leaves, scale, queue, b});
    }
  }
}

} // namespace kdforge::detail
