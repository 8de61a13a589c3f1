// Compiled (not run) by the test command on machines without a GPU, beside
// the benchmark driver: instantiates for Kokkos::Cuda what the driver does
// not (median and bucket trees, 64-bit indices, double, approximate kNN,
// brute force, the workspace overloads, SAH triangle trees and rays), so
// CUDA code cannot rot where the full Cuda
// suite is not built (tests/run-tests.sh, KDFORGE_CUDA=auto).
#include <kdforge/kdforge.hpp>

#include <cstdint>

namespace {
template <class Exec, class T, int D, class Index>
void instantiate() {
  using MS = typename Exec::memory_space;
  Exec exec;
  Kokkos::View<kdforge::Point<T, D>*, MS> p("p", 0), q("q", 0);
  auto lb = kdforge::build_left_balanced<Index>(exec, p);
  auto med = kdforge::build_split_sort<Index>(exec, p);
  kdforge::QueryWorkspace<MS> ws;
  kdforge::KnnResultFor<Exec, decltype(lb)> kr;
  kdforge::knn(exec, lb, q, 40, kr, {}, ws);
  kdforge::closest_point(exec, med, q);
  kdforge::radius_search(exec, med, q, 0.1);
  kdforge::knn_approximate(exec, med, q, 4);
  Kokkos::View<T**, Kokkos::LayoutLeft, MS> rows("rows", 0, 5), qrows("qrows", 0, 5);
  auto bt = kdforge::build_bucket_tree<Index>(exec, rows);
  kdforge::knn(exec, bt, qrows, 4);
  kdforge::knn(exec, bt, qrows, 40);
  kdforge::closest_point(exec, bt, qrows);
  kdforge::radius_count(exec, bt, qrows, 0.1);
  kdforge::radius_search(exec, bt, qrows, 0.1);
  kdforge::knn_approximate(exec, bt, qrows, 4);
  kdforge::ApproximateOptions big_queue;
  big_queue.queue_capacity = 100;
  kdforge::knn_approximate(exec, bt, qrows, 40, big_queue);
  kdforge::knn_brute_force<Index>(exec, rows, qrows, 4);
  Kokkos::View<T* [3], MS> vertices("vertices", 0);
  Kokkos::View<std::int32_t* [3], MS> triangles("triangles", 0);
  auto scene = kdforge::build_sah_tree(exec, vertices, triangles);
  Kokkos::View<kdforge::Ray<T>*, MS> rays("rays", 0);
  kdforge::intersect_closest(exec, scene, rays);
  kdforge::intersect_any(exec, scene, rays);
}
} // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  instantiate<Kokkos::DefaultExecutionSpace, float, 3, std::int64_t>();
  instantiate<Kokkos::DefaultExecutionSpace, double, 3, std::int32_t>();
  return 0;
}
