#pragma once
// Result types of the queries: Views in the execution space's memory.
// Distances are squared (sq_*); a missing neighbour is (index -1,
// squared distance +inf).
#include <Kokkos_Core.hpp>

#include <cstdint>

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
  Kokkos::View<Index*, MemorySpace> indices;        ///< offsets(M) neighbours
  Kokkos::View<T*, MemorySpace> sq_distances;       ///< offsets(M) squared distances
  /// The allocations indices and sq_distances are the first offsets(M)
  /// entries of. A call that finds no more neighbours than they hold writes
  /// into them (a time loop allocates nothing once they are large enough);
  /// one that finds more replaces them with a quarter to spare.
  Kokkos::View<Index*, MemorySpace> indices_storage;
  Kokkos::View<T*, MemorySpace> sq_distances_storage;
};

template <class Exec, class Tree>
using KnnResultFor = KnnResult<typename Exec::memory_space, typename Tree::coordinate_type, typename Tree::index_type>;
template <class Exec, class Tree>
using ClosestResultFor = ClosestResult<typename Exec::memory_space, typename Tree::coordinate_type, typename Tree::index_type>;
template <class Exec, class Tree>
using RadiusResultFor = RadiusResult<typename Exec::memory_space, typename Tree::coordinate_type, typename Tree::index_type>;

} // namespace kdforge
