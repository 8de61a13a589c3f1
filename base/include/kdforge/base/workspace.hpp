#pragma once
// Scratch memory that batched queries keep between calls.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

namespace kdforge {

/// Scratch memory of batched queries: the processing order (Morton codes,
/// the order and its radix sort's buffers), the radius search's counts and
/// scan, and the finiteness check of the queries.
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
           regroup_count.span() * sizeof(unsigned long long) + radius_offsets.span() * sizeof(std::int64_t) +
           (first_bad.data() ? sizeof(std::int64_t) : 0);
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
  Kokkos::View<std::int64_t, MemorySpace> first_bad; // the first query with a NaN or infinite coordinate
  Kokkos::View<std::int64_t*, MemorySpace> radius_offsets; // radius_search's counts, before they become the result's
};

/// Scratch memory of kdforge::icp kept between calls (frames): the source's
/// processing order, the loop's state in device memory and its copy on the
/// host, each source point's previous correspondence, the queues of an
/// approximate search with Q > 32, and on GPUs the reductions' per-team
/// sums. Without one, every call allocates and
/// frees these; a workspace passed to the calls of a tracking loop keeps
/// them, grown to the largest call so far. As QueryWorkspace: one execution
/// space instance at a time; movable, not copyable.
template <class MemorySpace>
class IcpWorkspace {
 public:
  IcpWorkspace() = default;
  IcpWorkspace(IcpWorkspace const&) = delete;
  IcpWorkspace& operator=(IcpWorkspace const&) = delete;
  IcpWorkspace(IcpWorkspace&&) = default;
  IcpWorkspace& operator=(IcpWorkspace&&) = default;

  /// Bytes held now (device and host).
  std::size_t bytes() const {
    std::size_t const host = host_state.data() == state.data() ? 0 : host_state.span();
    return queries.bytes() + state.span() + host + correspondences.span() + queues.span() + partials.span();
  }
  /// Frees everything (the next call allocates again).
  void release() { *this = IcpWorkspace(); }

  // kdforge's own: read and grown by kdforge::icp
  QueryWorkspace<MemorySpace> queries;        // Morton codes and order of the source
  Kokkos::View<char*, MemorySpace> state;     // loop state, reduction result, RMSE history
  typename Kokkos::View<char*, MemorySpace>::HostMirror host_state; // the same on the host
  Kokkos::View<char*, MemorySpace> correspondences; // previous nearest target point per source point
  Kokkos::View<char*, MemorySpace> queues;          // approximate search, Q > 32
  Kokkos::View<char*, MemorySpace> partials;        // GPUs: the reductions' per-team sums and ticket
};

} // namespace kdforge
