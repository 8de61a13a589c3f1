#pragma once
// The MPI side of the distributed tree: one duplicated communicator per
// tree, errors agreed on by every rank, and Alltoallv over Views of the
// execution space's memory, either handed to MPI directly (host memory, or
// GPU memory where the MPI library reads it: "GPU-aware") or staged through
// pinned host buffers.
//
// Every function here is collective: all ranks of the communicator call it
// in the same order. A rank that fails locally (a NaN point, memory) must
// not leave the others waiting in the next exchange. So every exchange
// starts with an agreement (one MPI_Allreduce of the lowest failing rank),
// with nothing that can throw between it and the exchange; each public
// operation runs inside `Communicator::call`, which ends with an agreement
// too, and a rank that throws anywhere inside joins the others' next
// agreement with its error. Every rank then throws the same error: the
// lowest failing rank's message, with that rank named, as an
// OutOfMemoryError where that rank ran out of memory, else as an Error.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/memory.hpp>
#include <kdforge/base/profiling.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/distributed/scratch.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>
// Open MPI's extensions name its CUDA support (MPIX_CUDA_AWARE_SUPPORT,
// MPIX_Query_cuda_support); other MPI libraries have no such query.
#if defined(OPEN_MPI) && OPEN_MPI && defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace kdforge {

/// Whether MPI may be handed GPU memory (DistributedOptions::gpu_aware).
enum class GpuAwareMpi {
  automatic, ///< when the MPI library says it supports CUDA memory (Open MPI's MPIX_Query_cuda_support), or KDFORGE_GPU_AWARE_MPI=1
  on,        ///< always (for MPI libraries that support it without saying so)
  off,       ///< never: stage every exchange through host memory
};

/// How a distributed tree moves its Views between ranks.
enum class MpiTransport {
  host_memory,  ///< the execution space's memory is host memory: MPI reads it directly
  gpu_aware,    ///< device pointers handed to a GPU-aware MPI
  host_staging, ///< device memory copied to pinned host buffers around every exchange
};

inline char const* to_string(MpiTransport t) {
  switch (t) {
  case MpiTransport::host_memory: return "host memory";
  case MpiTransport::gpu_aware: return "GPU-aware MPI";
  case MpiTransport::host_staging: return "host staging";
  }
  return "?";
}

/// Whether the MPI library says, at run time, that it reads and writes CUDA
/// device memory. Open MPI built without CUDA (Debian's) says no at compile
/// time already. KDFORGE_GPU_AWARE_MPI=1 or 0 in the environment overrides
/// the answer (MPICH, MVAPICH2 and Cray MPICH have no query).
inline bool mpi_supports_gpu_memory() {
  if (char const* e = std::getenv("KDFORGE_GPU_AWARE_MPI")) {
    if (std::strcmp(e, "1") == 0) return true;
    if (std::strcmp(e, "0") == 0) return false;
  }
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

namespace distributed {

inline void check_mpi(int rc, char const* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  detail::fail("DistributedTree", what, " failed: ", text);
}

/// What every rank throws once they agreed that one failed (the tag lets
/// Communicator::call tell it from a local failure the others must learn).
struct Agreed {};
class AgreedError : public Error, public Agreed {
public:
  using Error::Error;
};
class AgreedOutOfMemoryError : public OutOfMemoryError, public Agreed {
public:
  using OutOfMemoryError::OutOfMemoryError;
};

/// The agreement: one MPI_Allreduce of the lowest rank whose `local` holds
/// an exception; returns when none does, else every rank throws that rank's
/// error (its message broadcast, with the rank named). Allocation failures
/// that escape as std::bad_alloc or as Kokkos' runtime_error count as
/// OutOfMemoryError, as at the API boundary of one tree.
template <class MS>
void agree(MPI_Comm comm, std::exception_ptr local) {
  int kind = 0; // 1: Error, 2: OutOfMemoryError
  std::string message;
  unsigned long long sizes[2] = {0, 0};
  if (local) {
    char const* where = kdforge::detail::current_entry_point();
    try {
      kdforge::detail::api_call<MS>(where ? where : "DistributedTree", [&] { std::rethrow_exception(local); });
    } catch (OutOfMemoryError const& e) {
      kind = 2;
      message = e.what();
      sizes[0] = e.requested_bytes();
      sizes[1] = e.available_bytes();
    } catch (std::exception const& e) {
      kind = 1;
      message = e.what();
    } catch (...) {
      kind = 1;
      message = "kdforge::DistributedTree: an unknown exception";
    }
  }
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int first = kind ? rank : size;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (error flag)");
  if (first == size) return;
  long long head[4] = {kind, (long long)message.size(), (long long)sizes[0], (long long)sizes[1]};
  check_mpi(MPI_Bcast(head, 4, MPI_LONG_LONG, first, comm), "MPI_Bcast (error)");
  message.resize(std::size_t(head[1]));
  if (head[1] > 0) check_mpi(MPI_Bcast(&message[0], int(head[1]), MPI_CHAR, first, comm), "MPI_Bcast (error)");
  message += " [rank " + std::to_string(first) + " of " + std::to_string(size) + "]";
  if (head[0] == 2) throw AgreedOutOfMemoryError(message, std::size_t(head[2]), std::size_t(head[3]));
  throw AgreedError(message);
}

/// Runs `f` (local work: no MPI inside) on every rank, then the agreement:
/// when f threw on any rank, every rank throws the same error. One
/// MPI_Allreduce when all is well.
template <class MS, class F>
void collectively(MPI_Comm comm, F&& f) {
  std::exception_ptr local;
  try {
    f();
  } catch (...) {
    local = std::current_exception();
  }
  agree<MS>(comm, local);
}

/// Bytes one rank sent to and received from the other ranks (its own
/// share, which MPI copies in memory, left out).
struct Traffic {
  std::int64_t sent = 0;
  std::int64_t received = 0;
};

/// Host memory for staging: pinned where the device is a CUDA GPU (copies
/// at full PCIe speed, and what CUDA-aware transports pin anyway).
template <class MemorySpace>
struct StagingSpace {
  using type = Kokkos::HostSpace;
};
#if defined(KOKKOS_ENABLE_CUDA)
template <>
struct StagingSpace<Kokkos::CudaSpace> {
  using type = Kokkos::CudaHostPinnedSpace;
};
#endif

/// A tree's communicator (a duplicate of the caller's, so its messages
/// never meet the caller's) and how it moves Views.
template <class MemorySpace>
class Communicator {
public:
  static constexpr bool host_accessible =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;

  Communicator(MPI_Comm comm, GpuAwareMpi gpu_aware) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    KDFORGE_REQUIRE(initialized, "DistributedTree", "MPI is not initialised; call MPI_Init before building the tree");
    check_mpi(MPI_Comm_dup(comm, &m_comm), "MPI_Comm_dup");
    MPI_Comm_rank(m_comm, &m_rank);
    MPI_Comm_size(m_comm, &m_size);
    if (host_accessible) {
      m_transport = MpiTransport::host_memory;
    } else {
      // every rank must agree, or one would stage while another hands MPI
      // device pointers (the same library answers the same, but an
      // environment variable may differ per rank)
      int aware = gpu_aware == GpuAwareMpi::on ? 1 : gpu_aware == GpuAwareMpi::off ? 0 : mpi_supports_gpu_memory();
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, &aware, 1, MPI_INT, MPI_MIN, m_comm), "MPI_Allreduce");
      m_transport = aware ? MpiTransport::gpu_aware : MpiTransport::host_staging;
    }
  }
  ~Communicator() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && m_comm != MPI_COMM_NULL) MPI_Comm_free(&m_comm);
  }
  Communicator(Communicator const&) = delete;
  Communicator& operator=(Communicator const&) = delete;

  MPI_Comm comm() const { return m_comm; }
  int rank() const { return m_rank; }
  int size() const { return m_size; }
  MpiTransport transport() const { return m_transport; }

  /// The agreement (see `agree`), with this rank's error if it has one.
  void agree(std::exception_ptr local = {}) const { distributed::agree<MemorySpace>(m_comm, local); }
  /// `collectively` on this communicator.
  template <class F>
  void collectively(F&& f) const {
    distributed::collectively<MemorySpace>(m_comm, std::forward<F>(f));
  }

  /// Runs the public operation `where` (f: local work and this
  /// communicator's exchanges) and ends with an agreement, so that a rank
  /// failing after the last exchange does not return alone; a rank that
  /// throws inside f joins the others' next agreement with its error.
  template <class F>
  decltype(auto) call(char const* where, F&& f) const {
    kdforge::detail::EntryPoint scope(where);
    try {
      if constexpr (std::is_void<decltype(f())>::value) {
        f();
        agree();
      } else {
        auto result = f();
        agree();
        return result;
      }
    } catch (Agreed const&) {
      throw;
    } catch (...) {
      agree(std::current_exception());
      throw; // not reached: agree throws for a failed rank
    }
  }

  /// Every rank's `count` values of this rank's `mine` (host memory).
  template <class V>
  std::vector<V> allgather(V const* mine, int count) const {
    static_assert(std::is_trivially_copyable<V>::value, "allgather: trivially copyable values only");
    std::vector<V> all;
    collectively([&] { all.resize(std::size_t(count) * std::size_t(m_size)); });
    check_mpi(MPI_Allgather(mine, int(sizeof(V)) * count, MPI_BYTE, all.data(), int(sizeof(V)) * count, MPI_BYTE,
                            m_comm),
              "MPI_Allgather");
    return all;
  }

  /// The counts every rank sends this one, from the counts this one sends each.
  std::vector<std::int64_t> exchange_counts(std::vector<std::int64_t> const& send) const {
    std::vector<std::int64_t> recv;
    collectively([&] { recv.resize(std::size_t(m_size)); });
    check_mpi(MPI_Alltoall(send.data(), 1, MPI_INT64_T, recv.data(), 1, MPI_INT64_T, m_comm), "MPI_Alltoall (counts)");
    return recv;
  }

  /// MPI_Alltoallv of `send` (send_counts(p) elements to rank p, in rank
  /// order) into a View of recv_counts' sum elements: a buffer of `scratch`
  /// where given, a new View otherwise. Fences `exec`.
  template <class Exec, class E>
  Kokkos::View<E*, MemorySpace> alltoallv(Exec const& exec, Kokkos::View<E*, MemorySpace> const& send,
                                          std::vector<std::int64_t> const& send_counts,
                                          std::vector<std::int64_t> const& recv_counts, Traffic& traffic,
                                          char const* label, Scratch<MemorySpace>* scratch = nullptr) {
    static_assert(std::is_trivially_copyable<E>::value, "alltoallv: trivially copyable values only");
    std::size_t const np = std::size_t(m_size);
    std::size_t const me = std::size_t(m_rank);
    std::vector<int> sc, sd, rc, rd;
    std::int64_t ns = 0, nr = 0;
    Kokkos::View<E*, MemorySpace> recv;
    using HS = typename StagingSpace<MemorySpace>::type;
    using H = Kokkos::View<E*, HS, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    H hs, hr;
    // everything that may fail (sizes, the receive buffer, staging) before the agreement
    collectively([&] {
      sc.resize(np), sd.resize(np), rc.resize(np), rd.resize(np);
      for (int p = 0; p < m_size; ++p) {
        // counts and displacements are ints in elements of sizeof(E) bytes
        KDFORGE_REQUIRE(ns <= INT_MAX && nr <= INT_MAX && send_counts[p] <= INT_MAX && recv_counts[p] <= INT_MAX,
                        "DistributedTree", "one exchange holds more than 2^31 - 1 ", label,
                        " per rank; split the queries into batches");
        sc[p] = int(send_counts[p]);
        sd[p] = int(ns);
        rc[p] = int(recv_counts[p]);
        rd[p] = int(nr);
        ns += send_counts[p];
        nr += recv_counts[p];
        if (p != m_rank) {
          traffic.sent += send_counts[p] * std::int64_t(sizeof(E));
          traffic.received += recv_counts[p] * std::int64_t(sizeof(E));
        }
      }
      KDFORGE_REQUIRE(std::int64_t(send.extent(0)) >= ns, "DistributedTree", "internal: the send buffer of ", label,
                      " is short");
      using V = Kokkos::View<E*, MemorySpace>;
      recv = scratch ? scratch->template take<V>(label, nr)
                     : backend::allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                                            std::size_t(nr));
      if (m_transport == MpiTransport::host_staging) {
        std::int64_t const ns_out = ns - send_counts[me], nr_in = nr - recv_counts[me];
        hs = H(reinterpret_cast<E*>(stage(m_send_stage, std::size_t(ns_out) * sizeof(E))), std::size_t(ns_out));
        hr = H(reinterpret_cast<E*>(stage(m_recv_stage, std::size_t(nr_in) * sizeof(E))), std::size_t(nr_in));
      }
    });
    // The block a rank sends itself (with queries owned where their points
    // are, most of them) never goes through MPI: one copy in its own memory.
    std::int64_t const self = send_counts[me];
    std::int64_t const self_s = sd[me], self_r = rd[me];
    if (self > 0)
      Kokkos::deep_copy(exec, Kokkos::subview(recv, std::make_pair(std::size_t(self_r), std::size_t(self_r + self))),
                        Kokkos::subview(send, std::make_pair(std::size_t(self_s), std::size_t(self_s + self))));
    sc[me] = 0;
    rc[me] = 0;
    MPI_Datatype type;
    check_mpi(MPI_Type_contiguous(int(sizeof(E)), MPI_BYTE, &type), "MPI_Type_contiguous");
    check_mpi(MPI_Type_commit(&type), "MPI_Type_commit");
    exec.fence();
    int rc_mpi = MPI_SUCCESS;
    if (m_transport != MpiTransport::host_staging) {
      rc_mpi = MPI_Alltoallv(send.data(), sc.data(), sd.data(), type, recv.data(), rc.data(), rd.data(), type, m_comm);
    } else {
      // staged without the self block: the blocks before it, then those after
      // it, shifted down by its length
      std::int64_t const ns_out = ns - self, nr_in = nr - recv_counts[me];
      auto range = [](std::int64_t a, std::int64_t b) { return std::make_pair(std::size_t(a), std::size_t(b)); };
      if (self_s > 0) Kokkos::deep_copy(exec, Kokkos::subview(hs, range(0, self_s)), Kokkos::subview(send, range(0, self_s)));
      if (ns > self_s + self)
        Kokkos::deep_copy(exec, Kokkos::subview(hs, range(self_s, ns_out)), Kokkos::subview(send, range(self_s + self, ns)));
      std::vector<int> hsd(sd), hrd(rd);
      for (std::size_t p = me + 1; p < np; ++p) {
        hsd[p] -= int(self);
        hrd[p] -= int(recv_counts[me]);
      }
      hsd[me] = int(self_s);
      hrd[me] = int(self_r);
      exec.fence();
      rc_mpi = MPI_Alltoallv(hs.data(), sc.data(), hsd.data(), type, hr.data(), rc.data(), hrd.data(), type, m_comm);
      std::int64_t const after = self_r + recv_counts[me];
      if (self_r > 0) Kokkos::deep_copy(exec, Kokkos::subview(recv, range(0, self_r)), Kokkos::subview(hr, range(0, self_r)));
      if (nr > after)
        Kokkos::deep_copy(exec, Kokkos::subview(recv, range(after, nr)), Kokkos::subview(hr, range(self_r, nr_in)));
      exec.fence();
    }
    MPI_Type_free(&type);
    check_mpi(rc_mpi, "MPI_Alltoallv");
    return recv;
  }

private:
  using StageView = Kokkos::View<char*, typename StagingSpace<MemorySpace>::type>;
  // Staging buffers are kept and grown (pinned allocations are slow).
  static char* stage(StageView& v, std::size_t bytes) {
    if (v.extent(0) < bytes) {
      v = StageView();
      v = backend::allocate<StageView>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::distributed::staging"),
                                       bytes + bytes / 4 + 64);
    }
    return v.data();
  }

  MPI_Comm m_comm = MPI_COMM_NULL;
  int m_rank = 0;
  int m_size = 1;
  MpiTransport m_transport = MpiTransport::host_memory;
  StageView m_send_stage;
  StageView m_recv_stage;
};

} // namespace distributed
} // namespace kdforge
