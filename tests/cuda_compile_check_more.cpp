// Compiled (not run) with tests/cuda_compile_check.cpp, in a translation
// unit of its own so that nvcc compiles the two side by side: ICP (both
// metrics, exact and approximate correspondences, normals, both trees,
// track_frame) and the VVH
// trees' range-histogram kNN, whose kernels the benchmark driver and the
// other check leave out.
#include <kdforge/kdforge.hpp>

namespace kdforge_cuda_check {
template <class Exec, class T>
void instantiate_more() {
  using MS = typename Exec::memory_space;
  Exec exec;
  Kokkos::View<kdforge::Point<T, 3>*, MS> target("target", 0), source("source", 0);
  auto tree = kdforge::build_split_sort(exec, target);
  kdforge::IcpOptions o;
  kdforge::icp(exec, tree, target, source, {}, o);
  auto normals = kdforge::estimate_normals(exec, tree, target);
  o.method = kdforge::IcpMethod::point_to_plane;
  o.search = kdforge::IcpSearch::approximate;
  kdforge::IcpWorkspace<MS> ws;
  kdforge::icp(exec, tree, target, source, {}, o, normals, ws);
  kdforge::icp(exec, kdforge::build_left_balanced(exec, target), target, source, {}, o, ws);
  kdforge::TrackingOptions to;
  kdforge::TrackingWorkspace<MS> tws;
  kdforge::track_frame(exec, target, source, {}, to, tws);
  to.tree = kdforge::TrackingTree::split_sort;
  to.icp.search = kdforge::IcpSearch::approximate;
  kdforge::track_frame(exec, target, source, {}, to, tws);
  auto photons = kdforge::build_vvh_tree(exec, target);
  Kokkos::View<T**, Kokkos::LayoutLeft, MS> q("q", 0, 3);
  kdforge::range_knn(exec, photons, q, 8);
  kdforge::range_knn_rows(exec, photons, q, 8);
}

void instantiate_all_more() {
  instantiate_more<Kokkos::DefaultExecutionSpace, float>();
  instantiate_more<Kokkos::DefaultExecutionSpace, double>();
}
} // namespace kdforge_cuda_check
