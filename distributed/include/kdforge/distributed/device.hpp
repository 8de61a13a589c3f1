#pragma once
// One GPU per rank: the device of a rank is its rank among the ranks of its
// node (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED) modulo the GPUs the
// process sees, so `mpirun -np G` on a node of G GPUs gives each rank its
// own, and more ranks than GPUs share them round robin. To be called after
// MPI_Init and before Kokkos is initialised:
//
//   MPI_Init(&argc, &argv);
//   auto device = kdforge::rank_device(MPI_COMM_WORLD);
//   Kokkos::initialize(kdforge::kokkos_settings(device));
//
// kokkos_settings gives Kokkos 3's InitArguments (device_id) before
// Kokkos 3.7 and InitializationSettings (set_device_id) from 3.7 on.
#include <kdforge/backends/devices.hpp>
#include <kdforge/distributed/communicator.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

namespace kdforge {

/// Where a rank runs on its node.
struct RankDevice {
  int local_rank = 0;      ///< rank among the ranks of this node
  int local_size = 1;      ///< ranks on this node
  int visible_devices = 0; ///< GPUs this process sees (0: a CPU build, or none)
  int device_id = -1;      ///< local_rank % visible_devices; -1 without GPUs
};

/// This rank's device (collective over `comm`: splits it by node).
inline RankDevice rank_device(MPI_Comm comm = MPI_COMM_WORLD) {
  RankDevice r;
  MPI_Comm node;
  distributed::check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node),
                         "MPI_Comm_split_type");
  MPI_Comm_rank(node, &r.local_rank);
  MPI_Comm_size(node, &r.local_size);
  MPI_Comm_free(&node);
  r.visible_devices = backend::visible_gpu_count();
  r.device_id = r.visible_devices > 0 ? r.local_rank % r.visible_devices : -1;
  return r;
}

#if KOKKOS_VERSION >= 30700
using KokkosSettings = Kokkos::InitializationSettings;
#else
using KokkosSettings = Kokkos::InitArguments;
#endif

/// Kokkos initialisation settings that put this rank on its device;
/// num_threads > 0 sets the host threads too (otherwise OMP_NUM_THREADS or
/// Kokkos' default decide).
inline KokkosSettings kokkos_settings(RankDevice const& device, int num_threads = -1) {
  KokkosSettings s;
#if KOKKOS_VERSION >= 30700
  if (device.device_id >= 0) s.set_device_id(device.device_id);
  if (num_threads > 0) s.set_num_threads(num_threads);
#else
  if (device.device_id >= 0) s.device_id = device.device_id;
  if (num_threads > 0) s.num_threads = num_threads;
#endif
  return s;
}

} // namespace kdforge
