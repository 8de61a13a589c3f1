// Compiled (not run) by the test command on machines without a GPU, beside
// the benchmark driver: instantiates for Kokkos::Cuda what the driver does
// not (median and bucket trees, 64-bit indices, double, approximate kNN,
// brute force, the workspace overloads, SAH triangle trees and rays, the
// in-place median builder, saving and loading every tree kind; ICP and
// range-histogram kNN in cuda_compile_check_more.cpp), so
// CUDA code cannot rot where the full Cuda
// suite is not built (tests/run-tests.sh, KDFORGE_CUDA=auto).
#include <kdforge/kdforge.hpp>

#include <cstdint>
#include <sstream>

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
  auto in_place = kdforge::build_median_in_place<Index>(exec, p);
  kdforge::knn(exec, in_place, q, 8);
  auto photons = kdforge::build_vvh_tree<Index>(exec, p);
  std::stringstream file(std::ios::in | std::ios::out | std::ios::binary);
  kdforge::save(lb, file);
  kdforge::save(in_place, file);
  kdforge::save(bt, file);
  kdforge::save(photons, file);
  kdforge::save(scene, file);
  file.seekg(0);
  kdforge::load<decltype(lb)>(exec, file);
  kdforge::load<decltype(in_place)>(exec, file);
  kdforge::load<decltype(bt)>(exec, file);
  kdforge::load<decltype(photons)>(exec, file);
  kdforge::load<decltype(scene)>(exec, file);
}
} // namespace

namespace kdforge_cuda_check {
void instantiate_all_more(); // cuda_compile_check_more.cpp
}

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  kdforge_cuda_check::instantiate_all_more();
  instantiate<Kokkos::DefaultExecutionSpace, float, 3, std::int64_t>();
  instantiate<Kokkos::DefaultExecutionSpace, double, 3, std::int32_t>();
  return 0;
}
