#pragma once
// The processing order of a batch of queries (Morton order, so neighbouring
// GPU threads and a CPU thread's consecutive queries walk nearly the same
// nodes), and the check that every query is finite and within the range
// whose squared distances the coordinate type holds (base/types.hpp), fused
// into the same pass over the queries.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/kernels/common/finite.hpp>
#include <kdforge/kernels/query/morton.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <limits>

namespace kdforge::detail {

template <class QV, class Bad>
struct FirstUnusableQuery {
  QV queries;
  Bad bad;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    if (!is_usable(queries(i))) Kokkos::atomic_fetch_min(&bad(), i);
  }
};

/// The order in which the queries are processed (empty: as given), in `ws`,
/// which must stay untouched until the kernels that read it have run. With
/// `check`, the same pass over the queries records the first one with a NaN,
/// infinite or out-of-range coordinate, for throw_if_bad_query at the end of
/// the call: the walks handle such a query harmlessly (every comparison with
/// NaN fails and infinite distances prune, so the walk ends), and the call
/// reads the one value back
/// when its kernels are queued, instead of waiting in the middle for it.
template <class Exec, class Tree, class QV>
Kokkos::View<typename Tree::index_type*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
prepare_queries(Exec const& exec, Tree const& tree, QV const& q, QueryOrder order,
                QueryWorkspace<typename Exec::memory_space>& ws, bool check) {
  using MS = typename Exec::memory_space;
  using Index = typename Tree::index_type;
  std::int64_t const m = std::int64_t(q.extent(0));
  if (m == 0) return {};
  Kokkos::View<std::int64_t, MS> bad;
  if (check) {
    if (!ws.first_bad.data()) ws.first_bad = backend::allocate<Kokkos::View<std::int64_t, MS>>("kdforge::query::first_bad");
    Kokkos::deep_copy(exec, ws.first_bad, std::numeric_limits<std::int64_t>::max());
    bad = ws.first_bad;
  }
  // Morton order on every target (automatic): faster on GPUs and CPUs alike
  bool const sort = (order == QueryOrder::morton || order == QueryOrder::automatic) && m >= 2 && tree.size() > 0;
  Kokkos::View<Index*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> ord;
  Region region("kdforge::query::morton_order");
  if (sort) {
    ord = kernels::morton_codes<Exec, typename Tree::coordinate_type, Tree::dimension, Index>(
        exec, q, tree.bounds(), ws.codes, ws.order_bytes, bad);
    kernels::sort_morton_order<Exec, Tree::dimension>(exec, ws.codes, ord, ws.scratch);
  } else if (check) {
    Kokkos::parallel_for("kdforge::query::check_finite", Kokkos::RangePolicy<Exec>(exec, 0, m),
                         FirstUnusableQuery<QV, Kokkos::View<std::int64_t, MS>>{q, bad});
  }
  return ord;
}

/// Throws kdforge::Error naming the first query of `q` prepare_queries found
/// with a NaN, infinite or out-of-range coordinate. Waits for the call's
/// kernels.
template <class Exec, class QV>
void throw_if_bad_query(Exec const& exec, QueryWorkspace<typename Exec::memory_space> const& ws, QV const& q,
                        bool check, char const* where) {
  if (!check || q.extent(0) == 0) return;
  std::int64_t bad = 0;
  Kokkos::deep_copy(exec, Kokkos::View<std::int64_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&bad),
                    ws.first_bad);
  exec.fence();
  if (bad != std::numeric_limits<std::int64_t>::max()) {
    auto const p = point_on_host(exec, q, bad);
    fail(where, "query ", bad, " has ", unusable_coordinates(p.coords, int(sizeof(p.coords) / sizeof(p.coords[0]))),
         "; a query must be a finite point in that range (remove it, or replace it; the results of this call are "
         "not valid)");
  }
}

} // namespace kdforge::detail
