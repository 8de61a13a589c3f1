#pragma once
// kdforge's distributed tree (the kdforge::mpi component): a k-d tree over
// the points of all ranks of an MPI communicator, each rank holding a local
// tree over its own points; kNN, closest point, radius count and radius
// search with the results one tree over the union of the points gives.
//
//   auto tree = kdforge::build_distributed_tree(exec, MPI_COMM_WORLD, my_points);
//   auto nn = kdforge::knn(exec, tree, my_queries, 8);  // nn.ranks, nn.indices, nn.global_indices, nn.sq_distances
//
// Every call is collective. Needs MPI (find_package(kdforge COMPONENTS mpi),
// target kdforge::mpi); the rest of kdforge does not.
#include <kdforge/distributed/communicator.hpp>
#include <kdforge/distributed/device.hpp>
#include <kdforge/distributed/exchange.hpp>
#include <kdforge/distributed/queries.hpp>
#include <kdforge/distributed/results.hpp>
#include <kdforge/distributed/top.hpp>
#include <kdforge/distributed/tree.hpp>
