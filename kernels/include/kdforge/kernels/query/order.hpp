#pragma once
// The processing order of a batch of queries (Morton order, so neighbouring
// GPU threads and a CPU thread's consecutive queries walk nearly the same
// nodes), and the check that every query is finite, fused into the same
// pass over the queries.
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/kernels/query/morton.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>

namespace kdforge::detail {

template <class QV, class Bad>
struct FirstNonFiniteQuery {
  QV queries;
  Bad bad;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    auto const q = queries(i);
    bool finite = true;
    for (int d = 0; d < int(sizeof(q.coords) / sizeof(q.coords[0])); ++d) finite = finite && is_finite(q[d]);
    if (!finite) Kokkos::atomic_fetch_min(&bad(), i);
  }
};

/// Checks that every query is finite (kdforge::Error naming the first one
/// that is not) and returns the order in which they are processed (empty:
/// as given), in `ws`, which must stay untouched until the kernels that read
/// it have run. The check reads one value back, so the call waits for the
/// Morton pass (microseconds) before it queues the walks.
template <class Exec, class Tree, class QV>
Kokkos::View<typename Tree::index_type*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
prepare_queries(Exec const& exec, Tree const& tree, QV const& q, QueryOrder order,
                QueryWorkspace<typename Exec::memory_space>& ws, char const* where) {
  using MS = typename Exec::memory_space;
  using Index = typename Tree::index_type;
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return {};
  if (!ws.first_bad.data()) ws.first_bad = Kokkos::View<std::int64_t, MS>("kdforge::query::first_bad");
  std::int64_t const none = std::numeric_limits<std::int64_t>::max();
  Kokkos::deep_copy(exec, ws.first_bad, none);
  // Morton order on every target (automatic): faster on GPUs and CPUs alike
  bool const sort = (order == QueryOrder::morton || order == QueryOrder::automatic) && m >= 2 && tree.size() > 0;
  Kokkos::View<Index*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> ord;
  {
    Region region("kdforge::query::morton_order");
    if (sort) {
      ord = kernels::morton_codes<Exec, typename Tree::coordinate_type, Tree::dimension, Index>(
          exec, q, tree.bounds(), ws.codes, ws.order_bytes, ws.first_bad);
    } else {
      Kokkos::parallel_for("kdforge::query::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, m),
                           FirstNonFiniteQuery<QV, Kokkos::View<std::int64_t, MS>>{q, ws.first_bad});
    }
  }
  std::int64_t bad = none;
  Kokkos::deep_copy(exec, Kokkos::View<std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&bad),
                    ws.first_bad);
  exec.fence();
  if (bad != none)
    fail(where, "query ", bad, " has a NaN or infinite coordinate; a query must be a finite point (remove it, "
                "or replace it by a finite one)");
  if (sort) {
    Region region("kdforge::query::morton_order");
    kernels::sort_morton_order<Exec, Tree::dimension>(exec, ws.codes, ord, ws.scratch);
  }
  return ord;
}

} // namespace kdforge::detail
