// doctest main of the distributed tree's tests: MPI first, then Kokkos on
// this rank's device (kdforge::rank_device), every test case on every rank
// in the same order (each is collective). The exit status is that of the
// worst rank, so a failure on any rank fails the run on all. Ranks other
// than 0 print their failures only.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <kdforge/distributed_tree.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <iostream>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto const device = kdforge::rank_device(MPI_COMM_WORLD);
  Kokkos::initialize(kdforge::kokkos_settings(device));
  int result = 0;
  {
    if (rank == 0)
      std::cout << "kdforge distributed tests on " << size << " ranks, " << Kokkos::DefaultExecutionSpace::name()
                << (device.device_id >= 0 ? ", GPU = local rank % " + std::to_string(device.visible_devices) : "")
                << "\n";
    doctest::Context context(argc, argv);
    if (rank != 0) context.setOption("minimal", true);
    result = context.run();
  }
  Kokkos::finalize();
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
