#include <kdforge/kdforge.hpp>
using namespace kdforge;
void run(Kokkos::View<Point<float, 3>*, Kokkos::CudaSpace> p, Kokkos::View<Point<float, 3>*, Kokkos::CudaSpace> q, int k) {
  Kokkos::Cuda exec;
  auto tree = build_left_balanced(exec, p);
  auto r = knn(exec, tree, q, k);
  auto c = closest_point(exec, tree, q);
}
