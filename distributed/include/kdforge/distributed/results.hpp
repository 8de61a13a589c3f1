#pragma once
// Results of distributed queries: every neighbour named by the rank that
// holds it, its index in that rank's points (as the rank passed them to the
// build) and its global index (DistributedTree::global_index), with the
// squared distance. A missing neighbour is rank -1, index -1, global index
// -1, squared distance +inf. Views in the execution space's memory, rows in
// the caller's query order.
#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge {

template <class MemorySpace, class T, class Index>
struct DistributedKnnResult {
  Kokkos::View<std::int32_t**, Kokkos::LayoutRight, MemorySpace> ranks;          ///< M x k
  Kokkos::View<Index**, Kokkos::LayoutRight, MemorySpace> indices;               ///< M x k, index on that rank
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, MemorySpace> global_indices; ///< M x k
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> sq_distances;              ///< M x k, ascending
};

template <class MemorySpace, class T, class Index>
struct DistributedClosestResult {
  Kokkos::View<std::int32_t*, MemorySpace> ranks;
  Kokkos::View<Index*, MemorySpace> indices;
  Kokkos::View<std::int64_t*, MemorySpace> global_indices;
  Kokkos::View<T*, MemorySpace> sq_distances;
};

template <class MemorySpace, class T, class Index>
struct DistributedRadiusResult {
  Kokkos::View<std::int64_t*, MemorySpace> offsets; ///< M + 1; row q is [offsets(q), offsets(q+1))
  Kokkos::View<std::int32_t*, MemorySpace> ranks;
  Kokkos::View<Index*, MemorySpace> indices;
  Kokkos::View<std::int64_t*, MemorySpace> global_indices;
  Kokkos::View<T*, MemorySpace> sq_distances;
};

/// What one rank measured in its last distributed query call (seconds of
/// wall time, each phase ended by a fence) and how many bytes it moved.
/// Reduce over the ranks (max, sum) for the figures of a whole run.
struct DistributedStats {
  double route_s = 0;   ///< which ranks each query goes to, send buffers
  double forward_s = 0; ///< counts and queries to the ranks (MPI_Alltoall, MPI_Alltoallv)
  double local_s = 0;   ///< the local queries of the queries received, their rows
  double return_s = 0;  ///< rows back to the queries' ranks (two MPI_Alltoallv)
  double merge_s = 0;   ///< rows merged into the results
  /// kNN and closest point: the second phase's share of the five times
  /// above, its route to its merge (0 for queries of one exchange)
  double phase2_s = 0;
  std::int64_t queries = 0;       ///< this rank's queries
  std::int64_t sent_pairs = 0;    ///< (query, rank) pairs sent, this rank's own included
  std::int64_t remote_pairs = 0;  ///< of them, to other ranks
  std::int64_t bytes_sent = 0;    ///< to other ranks, queries and rows
  std::int64_t bytes_received = 0;
  int phases = 0; ///< exchanges (kNN: 2)
  double total_s() const { return route_s + forward_s + local_s + return_s + merge_s; }
};

} // namespace kdforge
