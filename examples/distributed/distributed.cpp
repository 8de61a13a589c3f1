// Particles split across MPI ranks by slabs; every rank asks for the 8
// nearest neighbours of its own particles, which near a slab boundary lie on
// the neighbouring rank. Run: mpirun -np 4 ./distributed
#include <kdforge/distributed_tree.hpp>
#include <kdforge/kdforge.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>
#include <random>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Kokkos::initialize(kdforge::kokkos_settings(kdforge::rank_device(MPI_COMM_WORLD))); // one GPU per rank
  {
    using Exec = Kokkos::DefaultExecutionSpace;
    Exec exec;
    int const n = 20000; // particles per rank, in the slab rank/size <= x < (rank+1)/size
    Kokkos::View<kdforge::Point<float, 3>*, Exec::memory_space> particles("particles", n);
    auto h = Kokkos::create_mirror_view(particles);
    std::mt19937 rng(rank);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (int i = 0; i < n; ++i) h(i) = {{(float(rank) + u(rng)) / float(size), u(rng), u(rng)}};
    Kokkos::deep_copy(particles, h);

    auto tree = kdforge::build_distributed_tree(exec, MPI_COMM_WORLD, particles); // collective
    auto nn = kdforge::knn(exec, tree, particles, 8);                             // collective
    // nn.ranks(i, j): which rank holds neighbour j of particle i; nn.indices:
    // its index there; nn.global_indices: rank-major (tree.global_index)
    auto ranks = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, nn.ranks);
    long remote = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < 8; ++j) remote += ranks(i, j) != rank ? 1 : 0;
    long all_remote = 0;
    MPI_Reduce(&remote, &all_remote, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("%d ranks, %lld particles (%s): %ld of %lld neighbours lie on another rank\n", size,
                  (long long)tree.size(), kdforge::to_string(tree.transport()), all_remote, (long long)tree.size() * 8);
  }
  Kokkos::finalize();
  MPI_Finalize();
  return 0;
}
