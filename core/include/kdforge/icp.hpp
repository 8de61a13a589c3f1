#pragma once
// Rigid registration by Iterative Closest Point on the execution space: the
// application Wehr & Radkowski 2018 built their split-and-sort tree for
// (sections I and V: object tracking in range-camera scans, the scan's tree
// rebuilt every frame, nearest neighbours exact or from the bounded queue).
//
//   auto tree = kdforge::build_split_sort(exec, scan);              // target: this frame's scan
//   kdforge::IcpOptions o;
//   o.max_correspondence_distance = 0.05;                           // rejection (not squared)
//   o.search = kdforge::IcpSearch::approximate; o.approximate.queue_capacity = 4;  // Wehr's Q
//   auto r = kdforge::icp(exec, tree, scan, model, previous_pose, o);
//   // r.transform maps the model onto the scan; r.rmse, r.iterations, r.status, r.degenerate
//
// Each iteration moves the source by the current transform, finds each
// moved point's nearest target point (closest_point, or knn_approximate
// with k = 1), sums what the fit needs in one parallel_reduce and solves the
// 4x4 (point to point) or 6x6 (point to plane) system on the host
// (kernels/registration/icp.hpp has the algorithm and the papers).
// Point to plane uses the target's normals: given, or estimated for the
// call by PCA of options.normal_neighbors nearest neighbours (estimate_normals).
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/registration.hpp>
#include <kdforge/base/results.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/closest_point.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/detail/query_defaults.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/registration/icp.hpp>
#include <kdforge/kernels/registration/normals.hpp>
#include <kdforge/knn.hpp>
#include <kdforge/knn_approximate.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge {

namespace detail {
template <class Exec, class Tree>
void check_icp_tree(char const* where) {
  static_assert(!kernels::is_bucket_tree<Tree>::value,
                "kdforge::icp / estimate_normals: give a level-order tree (build_split_sort or build_left_balanced); "
                "bucket trees hold points of run-time dimension");
  static_assert(Tree::dimension == 3, "kdforge::icp / estimate_normals: the clouds must be 3-D");
  detail::check_tree_space<Exec, Tree>(where);
}
} // namespace detail

namespace detail {
template <class Exec, class Tree, class Points>
auto estimate_normals_impl(Exec const& exec, Tree const& tree, Points const& points, int k = 10) {
  detail::check_icp_tree<Exec, Tree>("estimate_normals");
  using T = typename Tree::coordinate_type;
  KDFORGE_REQUIRE(k >= 3, "estimate_normals", "k must be >= 3 to fit a plane (got ", k, ")");
  auto p = detail::query_points<Exec, Tree>(exec, points);
  auto normals = backend::allocate<Kokkos::View<Point<T, 3>*, typename Exec::memory_space>>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::normals"), p.extent(0));
  if (p.extent(0) == 0) return normals;
  auto nn = knn(exec, tree, p, k);
  kernels::registration::pca_normals<Exec, T>(exec, p, nn.indices, normals);
  return normals;
}
} // namespace detail

/// Unit normals of `points` (the points `tree` was built from) by PCA of
/// each point's k nearest neighbours (itself included), in a new View;
/// (0, 0, 0) where fewer than 3 neighbours were found or they lie on a line.
template <class Exec, class Tree, class Points>
auto estimate_normals(Exec const& exec, Tree const& tree, Points const& points, int k = 10) {
  return detail::api_call<typename Exec::memory_space>("estimate_normals", [&]() -> decltype(auto) {
    return detail::estimate_normals_impl(exec, tree, points, k);
  });
}

namespace detail {
template <class Exec, class Tree, class TargetPoints, class SourcePoints, class Normals>
IcpResult icp_impl(Exec const& exec, Tree const& tree, TargetPoints const& target_in, SourcePoints const& source_in,
                   RigidTransform const& initial, IcpOptions const& options, Normals const* given_normals) {
  namespace reg = kernels::registration;
  using T = typename Tree::coordinate_type;
  using MS = typename Exec::memory_space;
  check_icp_tree<Exec, Tree>("icp");
  KDFORGE_REQUIRE(options.max_iterations >= 0, "icp", "IcpOptions::max_iterations must be >= 0 (got ",
                  options.max_iterations, ")");
  KDFORGE_REQUIRE(options.max_correspondence_distance > 0, "icp",
                  "IcpOptions::max_correspondence_distance must be > 0 (got ", options.max_correspondence_distance,
                  "); infinity accepts every pair");
  KDFORGE_REQUIRE(options.relative_rmse >= 0 && options.rotation_epsilon >= 0 && options.translation_epsilon >= 0,
                  "icp", "IcpOptions::relative_rmse, rotation_epsilon and translation_epsilon must be >= 0");
  KDFORGE_REQUIRE(options.degenerate_ratio >= 0 && options.degenerate_ratio < 1, "icp",
                  "IcpOptions::degenerate_ratio must be in [0, 1) (got ", options.degenerate_ratio, ")");
  auto target = query_points<Exec, Tree>(exec, target_in);
  auto source = query_points<Exec, Tree>(exec, source_in);
  std::int64_t const n_target = std::int64_t(target.extent(0)), n_source = std::int64_t(source.extent(0));
  KDFORGE_REQUIRE(n_source > 0, "icp",
                  "the source cloud is empty: nothing to register (skip the frame, or check the segmentation "
                  "that produced it)");
  KDFORGE_REQUIRE(std::int64_t(tree.size()) > 0 && n_target > 0, "icp",
                  "the target cloud is empty (a frame without returns?): nothing to register against; skip the frame");
  KDFORGE_REQUIRE(std::int64_t(tree.size()) <= n_target, "icp", "the tree holds ", std::int64_t(tree.size()),
                  " points but the target cloud only ", n_target,
                  ": pass the points the tree was built from (their indices are the tree's answers)");
  bool const plane = options.method == IcpMethod::point_to_plane;
  Kokkos::View<Point<T, 3>*, MS> normals;
  if (plane) {
    if (given_normals) {
      normals = query_points<Exec, Tree>(exec, *given_normals);
      KDFORGE_REQUIRE(std::int64_t(normals.extent(0)) == n_target, "icp", "target_normals has ",
                      std::int64_t(normals.extent(0)), " rows for ", n_target,
                      " target points: give one normal per target point");
    } else {
      KDFORGE_REQUIRE(options.normal_neighbors >= 3, "icp", "IcpOptions::normal_neighbors must be >= 3 (got ",
                      options.normal_neighbors, ")");
      normals = estimate_normals(exec, tree, target, options.normal_neighbors);
    }
  }

  // The reference point c (the initially moved source's centroid) and the
  // cloud's RMS radius about it: sums about c keep their precision, and
  // the radius scales point-to-plane rotations to lengths.
  auto moved = backend::allocate<Kokkos::View<Point<T, 3>*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::icp::moved"),
                                       n_source);
  reg::transform_points<Exec, T>(exec, source, moved, initial);
  double c[3] = {0, 0, 0};
  {
    auto const s0 = reg::centroid_sums<Exec, T>(exec, moved, c);
    for (int u = 0; u < 3; ++u) c[u] = s0.v[1 + u] / s0.v[0];
  }
  auto const s1 = reg::centroid_sums<Exec, T>(exec, moved, c);
  double scale = std::sqrt(s1.v[4] / s1.v[0]);
  if (!(scale > 0) || !std::isfinite(scale)) scale = 1;

  ClosestResultFor<Exec, Tree> closest;
  QueryWorkspace<MS> workspace;
  QueryOptions qo = options.exact;
  qo.cutoff_radius = options.max_correspondence_distance;
  ApproximateOptions ao = options.approximate;
  ao.cutoff_radius = options.max_correspondence_distance;
  double const sq_max = std::numeric_limits<double>::infinity(); // the queries' cutoff rejects
  // One step: correspondences at `x`, the sums, the solve.
  auto step = [&](RigidTransform const& x) {
    reg::transform_points<Exec, T>(exec, source, moved, x);
    auto solve = [&](auto const& idx, auto const& dist) {
      if (plane)
        return reg::solve_point_to_plane(
            reg::point_to_plane_sums<Exec, T>(exec, moved, target, normals, idx, dist, sq_max, c, scale), c, scale,
            options.degenerate_ratio);
      return reg::solve_point_to_point(reg::point_to_point_sums<Exec, T>(exec, moved, target, idx, dist, sq_max, c), c);
    };
    if (options.search == IcpSearch::exact) {
      closest_point(exec, tree, moved, closest, qo, workspace);
      return solve(closest.indices, closest.sq_distances);
    }
    auto const r = knn_approximate(exec, tree, moved, 1, ao);
    return solve(Kokkos::subview(r.indices, Kokkos::ALL, 0), Kokkos::subview(r.sq_distances, Kokkos::ALL, 0));
  };
  auto require_three = [&](reg::Step const& st, int iteration) {
    KDFORGE_REQUIRE(st.count >= 3, "icp", "only ", st.count, " correspondence", st.count == 1 ? "" : "s",
                    plane ? " with a target normal" : "", " within max_correspondence_distance ",
                    options.max_correspondence_distance, " at iteration ", iteration,
                    " (a rigid transform needs at least 3): give an initial pose nearer the target, raise "
                    "max_correspondence_distance, or check that the clouds overlap");
  };

  IcpResult result;
  RigidTransform x = initial;
  double previous_rmse = -1;
  for (int it = 0; it < options.max_iterations; ++it) {
    reg::Step const st = step(x);
    require_three(st, it);
    double const rmse = std::sqrt(st.sq_error);
    result.rmse_history.push_back(rmse);
    if (previous_rmse >= 0 && std::fabs(previous_rmse - rmse) <= options.relative_rmse * previous_rmse) {
      result.status = IcpStatus::converged;
      break;
    }
    previous_rmse = rmse;
    x = st.increment * x;
    result.iterations = it + 1;
    // the increment's motion of c: its translation about the reference point
    double moved_c[3];
    st.increment.apply(c, moved_c);
    double const dc = std::sqrt((moved_c[0] - c[0]) * (moved_c[0] - c[0]) + (moved_c[1] - c[1]) * (moved_c[1] - c[1]) +
                                (moved_c[2] - c[2]) * (moved_c[2] - c[2]));
    if (st.increment.angle() <= options.rotation_epsilon && dc <= options.translation_epsilon) {
      result.status = IcpStatus::converged;
      break;
    }
  }
  // The result's measures at the final transform.
  reg::Step const fin = step(x);
  require_three(fin, result.iterations);
  result.transform = x;
  result.rmse = std::sqrt(fin.sq_error);
  result.correspondences = fin.count;
  result.fitness = double(fin.count) / double(n_source);
  for (int u = 0; u < 3; ++u) result.singular_values[u] = fin.singular_values[u];
  if (plane) {
    // eigenvalues of the normal equations: the smallest against the largest
    result.degenerate = !(fin.singular_values[2] > options.degenerate_ratio * fin.largest_eigenvalue);
  } else {
    result.degenerate = !(fin.singular_values[2] > options.degenerate_ratio * fin.singular_values[0]);
    if (result.degenerate) {
      double const l = std::sqrt(fin.weakest_axis[0] * fin.weakest_axis[0] + fin.weakest_axis[1] * fin.weakest_axis[1] +
                                 fin.weakest_axis[2] * fin.weakest_axis[2]);
      for (int u = 0; u < 3; ++u) result.unconstrained_axis[u] = l > 0 ? fin.weakest_axis[u] / l : 0.0;
    }
  }
  return result;
}
} // namespace detail

/// Registers `source` onto `target` (the points `target_tree` was built
/// from) starting at `initial`: the transform, its RMSE and fitness, the
/// iterations, whether it converged and whether the geometry left a motion
/// unconstrained (IcpResult). Point to plane estimates the target's normals
/// for this call (IcpOptions::normal_neighbors); pass them to the overload
/// below to reuse them. Throws kdforge::Error for an empty cloud or fewer
/// than 3 accepted correspondences in an iteration.
template <class Exec, class Tree, class TargetPoints, class SourcePoints>
IcpResult icp(Exec const& exec, Tree const& target_tree, TargetPoints const& target, SourcePoints const& source,
              RigidTransform const& initial = {}, IcpOptions const& options = {}) {
  return detail::api_call<typename Exec::memory_space>("icp", [&] {
    return detail::icp_impl<Exec, Tree, TargetPoints, SourcePoints, TargetPoints>(exec, target_tree, target, source,
                                                                                 initial, options, nullptr);
  });
}

/// As above, with the target's unit normals given (one per target point,
/// (0, 0, 0) where unknown: such points are left out); used by point to plane.
template <class Exec, class Tree, class TargetPoints, class SourcePoints, class Normals>
IcpResult icp(Exec const& exec, Tree const& target_tree, TargetPoints const& target, SourcePoints const& source,
              RigidTransform const& initial, IcpOptions const& options, Normals const& target_normals) {
  return detail::api_call<typename Exec::memory_space>("icp", [&] {
    return detail::icp_impl(exec, target_tree, target, source, initial, options, &target_normals);
  });
}

} // namespace kdforge
