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
//   kdforge::IcpWorkspace<MemorySpace> ws;                          // optional, kept across frames
//   auto r = kdforge::icp(exec, tree, scan, model, previous_pose, o, ws);
//   // r.transform maps the model onto the scan; r.rmse, r.iterations, r.status, r.degenerate
//
// The whole loop runs on the execution space (kernels/registration/
// icp_loop.hpp): one kernel per iteration finds each moved source point's
// nearest target point, sums what the fit needs and, in the reduction's
// final step, solves the 4x4 (point to point) or 6x6 (point to plane)
// system and writes the next transform to device memory; the host queues
// the kernels and waits once, for the results. The algorithm and the
// papers: kernels/registration/icp.hpp. detail::icp_reference is the same
// algorithm as a host loop of public operations (closest_point or
// knn_approximate per iteration, the solve on the host): the tests'
// reference for the device loop.
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
#include <kdforge/kernels/common/finite.hpp>
#include <kdforge/kernels/common/reduce_final.hpp>
#include <kdforge/kernels/query/bucket.hpp>
#include <kdforge/kernels/query/morton.hpp>
#include <kdforge/kernels/registration/icp.hpp>
#include <kdforge/kernels/registration/icp_loop.hpp>
#include <kdforge/kernels/registration/normals.hpp>
#include <kdforge/knn.hpp>
#include <kdforge/knn_approximate.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
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

/// The checked inputs of one icp call: the clouds as Views of the execution
/// space, and the target's normals for point to plane.
template <class Exec, class Tree>
struct IcpInputs {
  using T = typename Tree::coordinate_type;
  using PV = Kokkos::View<Point<T, 3>*, typename Exec::memory_space>;
  PV target, source, normals;
};

template <class Exec, class Tree, class TargetPoints, class SourcePoints, class Normals>
IcpInputs<Exec, Tree> icp_inputs(Exec const& exec, Tree const& tree, TargetPoints const& target_in,
                                 SourcePoints const& source_in, RigidTransform const& initial,
                                 IcpOptions const& options, Normals const* given_normals) {
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
  for (int i = 0; i < 3; ++i) {
    bool finite = std::isfinite(initial.translation[i]);
    for (int j = 0; j < 3; ++j) finite = finite && std::isfinite(initial.rotation[i][j]);
    KDFORGE_REQUIRE(finite, "icp", "the initial transform has a NaN or infinite entry: give a finite pose");
  }
  IcpInputs<Exec, Tree> in;
  in.target = query_points<Exec, Tree>(exec, target_in);
  in.source = query_points<Exec, Tree>(exec, source_in);
  std::int64_t const n_target = std::int64_t(in.target.extent(0)), n_source = std::int64_t(in.source.extent(0));
  KDFORGE_REQUIRE(n_source > 0, "icp",
                  "the source cloud is empty: nothing to register (skip the frame, or check the segmentation "
                  "that produced it)");
  KDFORGE_REQUIRE(std::int64_t(tree.size()) > 0 && n_target > 0, "icp",
                  "the target cloud is empty (a frame without returns?): nothing to register against; skip the frame");
  KDFORGE_REQUIRE(std::int64_t(tree.size()) <= n_target, "icp", "the tree holds ", std::int64_t(tree.size()),
                  " points but the target cloud only ", n_target,
                  ": pass the points the tree was built from (their indices are the tree's answers)");
  if (options.search == IcpSearch::approximate) {
    ApproximateOptions const& a = options.approximate;
    KDFORGE_REQUIRE(a.queue_capacity >= 1, "icp", "IcpOptions::approximate.queue_capacity must be >= 1 (got ",
                    a.queue_capacity, ")");
    KDFORGE_REQUIRE(a.max_leaves >= 0, "icp", "IcpOptions::approximate.max_leaves must be >= 0 (got ", a.max_leaves,
                    ")");
    KDFORGE_REQUIRE(a.eps >= 0.0 && std::isfinite(a.eps), "icp",
                    "IcpOptions::approximate.eps must be finite and >= 0 (got ", a.eps, ")");
    KDFORGE_REQUIRE(!a.exclude_self, "icp", "exclude_self is offered on bucket trees (build_bucket_tree) only");
  } else {
    refuse_bucket_only_options(options.exact, "icp");
  }
  if (options.method == IcpMethod::point_to_plane) {
    if (given_normals) {
      in.normals = query_points<Exec, Tree>(exec, *given_normals);
      KDFORGE_REQUIRE(std::int64_t(in.normals.extent(0)) == n_target, "icp", "target_normals has ",
                      std::int64_t(in.normals.extent(0)), " rows for ", n_target,
                      " target points: give one normal per target point");
    } else {
      KDFORGE_REQUIRE(options.normal_neighbors >= 3, "icp", "IcpOptions::normal_neighbors must be >= 3 (got ",
                      options.normal_neighbors, ")");
      in.normals = estimate_normals(exec, tree, in.target, options.normal_neighbors);
    }
  }
  return in;
}

/// The error of an iteration with fewer than 3 correspondences.
[[noreturn]] inline void fail_too_few(std::int64_t count, bool plane, double max_distance, int iteration) {
  fail("icp", "only ", count, " correspondence", count == 1 ? "" : "s", plane ? " with a target normal" : "",
       " within max_correspondence_distance ", max_distance, " at iteration ", iteration,
       " (a rigid transform needs at least 3): give an initial pose nearer the target, raise "
       "max_correspondence_distance, or check that the clouds overlap");
}

/// IcpResult's degeneracy fields from the spectra at the final transform.
inline void set_degeneracy(IcpResult& result, bool plane, double ratio, double const singular_values[3],
                           double largest_eigenvalue, double const weakest_axis[3]) {
  for (int u = 0; u < 3; ++u) result.singular_values[u] = singular_values[u];
  if (plane) {
    // eigenvalues of the normal equations: the smallest against the largest
    result.degenerate = !(singular_values[2] > ratio * largest_eigenvalue);
  } else {
    result.degenerate = !(singular_values[2] > ratio * singular_values[0]);
    if (result.degenerate) {
      double const l = std::sqrt(weakest_axis[0] * weakest_axis[0] + weakest_axis[1] * weakest_axis[1] +
                                 weakest_axis[2] * weakest_axis[2]);
      for (int u = 0; u < 3; ++u) result.unconstrained_axis[u] = l > 0 ? weakest_axis[u] / l : 0.0;
    }
  }
}

/// The reference loop: the same algorithm as icp_device_loop, as a host
/// loop of public operations (closest_point or knn_approximate per
/// iteration, the sums in one reduction read back, the solve on the
/// host). One host round trip per iteration; kept to check the device loop.
template <class Exec, class Tree, class TargetPoints, class SourcePoints, class Normals>
IcpResult icp_reference_impl(Exec const& exec, Tree const& tree, TargetPoints const& target_in,
                             SourcePoints const& source_in, RigidTransform const& initial, IcpOptions const& options,
                             Normals const* given_normals) {
  namespace reg = kernels::registration;
  using T = typename Tree::coordinate_type;
  using MS = typename Exec::memory_space;
  auto const in = icp_inputs(exec, tree, target_in, source_in, initial, options, given_normals);
  auto const& target = in.target;
  auto const& source = in.source;
  auto const& normals = in.normals;
  std::int64_t const n_source = std::int64_t(source.extent(0));
  bool const plane = options.method == IcpMethod::point_to_plane;

  // The reference point c (the initially moved source's centroid) and the
  // cloud's RMS radius about it: sums about c keep their precision, and
  // the radius scales point-to-plane rotations to lengths.
  auto moved = backend::allocate<Kokkos::View<Point<T, 3>*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::icp::moved"),
                                       n_source);
  reg::transform_points<Exec, T>(exec, source, moved, initial);
  double c[3] = {0, 0, 0};
  {
    auto const s0 = reg::centroid_sums<Exec, T>(exec, moved, c);
    reg::centroid_of(s0.v, c);
  }
  double const scale = reg::radius_of(reg::centroid_sums<Exec, T>(exec, moved, c).v);
  // The sums are added in the device loop's order (Morton order of the
  // initially moved source): on CPUs the two loops then give the same bits.
  using Index = typename Tree::index_type;
  QueryWorkspace<MS> order_workspace;
  Kokkos::View<Index*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> order;
  QueryOrder const order_option =
      options.search == IcpSearch::exact ? options.exact.order : options.approximate.order;
  if (order_option != QueryOrder::as_given && n_source >= 2) {
    order = kernels::morton_codes<Exec, T, 3, Index>(exec, moved, tree.bounds(), order_workspace.codes,
                                                     order_workspace.order_bytes, {});
    kernels::sort_morton_order<Exec, 3>(exec, order_workspace.codes, order, order_workspace.scratch);
  }

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
            reg::point_to_plane_sums<Exec, T>(exec, moved, target, normals, idx, dist, sq_max, c, scale, order), c,
            scale, options.degenerate_ratio);
      return reg::solve_point_to_point(
          reg::point_to_point_sums<Exec, T>(exec, moved, target, idx, dist, sq_max, c, order), c);
    };
    if (options.search == IcpSearch::exact) {
      closest_point(exec, tree, moved, closest, qo, workspace);
      return solve(closest.indices, closest.sq_distances);
    }
    auto const r = knn_approximate(exec, tree, moved, 1, ao);
    return solve(Kokkos::subview(r.indices, Kokkos::ALL, 0), Kokkos::subview(r.sq_distances, Kokkos::ALL, 0));
  };
  auto require_three = [&](reg::Step const& st, int iteration) {
    if (st.count < 3) fail_too_few(st.count, plane, options.max_correspondence_distance, iteration);
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
  set_degeneracy(result, plane, options.degenerate_ratio, fin.singular_values, fin.largest_eigenvalue,
                 fin.weakest_axis);
  return result;
}

/// A View of `count` values of type V at byte `offset` of `bytes`.
template <class V, class MS>
Kokkos::View<V*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> carve(Kokkos::View<char*, MS> const& bytes,
                                                                    std::size_t offset, std::int64_t count) {
  return Kokkos::View<V*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(reinterpret_cast<V*>(bytes.data() + offset),
                                                                       count);
}

/// bytes holds at least n bytes afterwards (contents undefined when grown,
/// or zero with `zeroed`: a buffer read back whole whose kernels leave gaps).
template <class MS>
void grow(Kokkos::View<char*, MS>& bytes, std::size_t n, char const* label, bool zeroed = false) {
  if (bytes.extent(0) >= n) return;
  if (zeroed)
    bytes = Kokkos::View<char*, MS>(std::string(label), n);
  else
    bytes = Kokkos::View<char*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
}

/// The device loop (kernels/registration/icp_loop.hpp): setup, one kernel
/// per iteration, the measuring pass, one read of the results. With a
/// `region` (track_frame), the tree answers moved source points inside it
/// only: `*left_region` says whether one left it, and then the result does
/// not hold (the loop stopped there).
template <class Exec, class Tree, class TargetPoints, class SourcePoints, class Normals>
IcpResult icp_impl(Exec const& exec, Tree const& tree, TargetPoints const& target_in, SourcePoints const& source_in,
                   RigidTransform const& initial, IcpOptions const& options, Normals const* given_normals,
                   IcpWorkspace<typename Exec::memory_space>& ws,
                   Box<typename Tree::coordinate_type, 3> const* region = nullptr, bool* left_region = nullptr) {
  namespace reg = kernels::registration;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using MS = typename Exec::memory_space;
  auto const in = icp_inputs(exec, tree, target_in, source_in, initial, options, given_normals);
  std::int64_t const m = std::int64_t(in.source.extent(0));
  int const iterations = options.max_iterations;
  bool const plane = options.method == IcpMethod::point_to_plane;
  bool const exact = options.search == IcpSearch::exact;
  T const sq_cutoff = checked_sq_radius<T>(options.max_correspondence_distance, "icp",
                                           "IcpOptions::max_correspondence_distance");

  // The state, the reductions' result and the RMSE history in one buffer,
  // read back by one copy.
  constexpr std::size_t align = 64;
  constexpr std::size_t state_bytes = (sizeof(reg::LoopState) + align - 1) / align * align;
  constexpr std::size_t sums_size = sizeof(reg::Sums<reg::plane_sums>) > sizeof(reg::SetupSums)
                                        ? sizeof(reg::Sums<reg::plane_sums>)
                                        : sizeof(reg::SetupSums);
  constexpr std::size_t sums_bytes = (sums_size + align - 1) / align * align;
  std::size_t const total = state_bytes + sums_bytes + sizeof(double) * std::size_t(iterations);
  // zeroed: the alignment gaps, the smaller of the two sums and the history
  // past the last iteration are never written, and the buffer is read whole
  grow(ws.state, total, "kdforge::icp::state", true);
  if (ws.host_state.extent(0) != ws.state.extent(0) || !ws.host_state.data())
    ws.host_state = Kokkos::create_mirror_view(ws.state);
  using State = Kokkos::View<reg::LoopState, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  State const state(reinterpret_cast<reg::LoopState*>(ws.state.data()));
  auto const history = carve<double>(ws.state, state_bytes + sums_bytes, iterations);
  char* const sums_at = ws.state.data() + state_bytes;

  // The source's processing order: Morton order of the initially moved
  // source in the tree's box, sorted once for all iterations.
  auto& qw = ws.queries;
  if (std::int64_t(qw.codes.extent(0)) < m)
    qw.codes = Kokkos::View<std::uint32_t*, MS>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::icp::morton"), m);
  grow(qw.order_bytes, std::size_t(m) * sizeof(Index), "kdforge::icp::order");
  auto const order = carve<Index>(qw.order_bytes, 0, m);
  auto const codes = Kokkos::subview(qw.codes, Kokkos::make_pair(std::int64_t(0), m));
  // (a named type: nvcc's front end rewrites decltype(order)() in the
  // lambdas below into code the host compiler rejects)
  using IndexView = Kokkos::View<Index*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  IndexView previous;
  if (exact) {
    grow(ws.correspondences, std::size_t(m) * sizeof(Index), "kdforge::icp::correspondences");
    previous = carve<Index>(ws.correspondences, 0, m);
  }
  auto const d0 = reg::device_transform<double>(initial);
  // The loop's functors go to the device as kernel arguments (light weight,
  // here and in reduce_with_final): by default Kokkos' Cuda launch copies a
  // functor of 512 bytes or more (the iteration's: the tree and nine Views)
  // to constant memory instead, and waits first for the previous kernel
  // that used it to finish: a host wait per iteration.
  auto const policy = Kokkos::Experimental::require(Kokkos::RangePolicy<Exec>(exec, 0, m),
                                                    Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  // Every pass is a reduction whose final step writes the state: Kokkos'
  // parallel_reduce on hosts, kernels/common/reduce_final.hpp on GPUs (a
  // third of the latency of Kokkos 3.4's Cuda reduce; docs/performance.md).
  constexpr bool host_state = Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;
  auto const reduce = [&](char const* label, auto const& f, auto const& out) {
    if constexpr (host_state) Kokkos::parallel_reduce(label, policy, f, out);
    else kernels::reduce_with_final(exec, label, m, f, ws.partials);
  };
  {
    using F = reg::IcpSetup<T, decltype(in.source), Box<T, 3>, std::decay_t<decltype(codes)>, IndexView,
                            IndexView, State>;
    Kokkos::View<reg::SetupSums, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> out(
        reinterpret_cast<reg::SetupSums*>(sums_at));
    F const setup{in.source,
                  d0,
                  initial,
                  tree.bounds(),
                  codes,
                  order,
                  previous,
                  state,
                  region != nullptr,
                  {region ? double(region->lo[0]) : 0.0, region ? double(region->lo[1]) : 0.0,
                   region ? double(region->lo[2]) : 0.0},
                  {region ? double(region->hi[0]) : 0.0, region ? double(region->hi[1]) : 0.0,
                   region ? double(region->hi[2]) : 0.0}};
    reduce("kdforge::icp::setup", setup, out);
  }
  QueryOrder const order_option = exact ? options.exact.order : options.approximate.order;
  bool const sorted = order_option != QueryOrder::as_given && m >= 2;
  if (sorted) kernels::sort_morton_order<Exec, 3>(exec, qw.codes, order, qw.scratch);
  if (plane) {
    Kokkos::View<reg::Sums<5>, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> out(
        reinterpret_cast<reg::Sums<5>*>(sums_at));
    reduce("kdforge::icp::radius", reg::IcpRadius<T, decltype(in.source), State>{in.source, d0, state}, out);
  }

  // The iterations, and the measuring pass at the final transform. On
  // hosts the state is read without a copy, and the loop stops once done.
  reg::LoopCriteria const criteria{options.relative_rmse, options.rotation_epsilon, options.translation_epsilon,
                                   options.degenerate_ratio};
  auto const run = [&](auto const& t, auto const& nearest) {
    using TT = std::decay_t<decltype(t)>;
    auto launch = [&](auto plane_tag) {
      constexpr bool P = decltype(plane_tag)::value;
      using F = reg::IcpIteration<P, TT, std::decay_t<decltype(nearest)>, decltype(in.source),
                                  IndexView, decltype(in.target), decltype(in.normals),
                                  IndexView, State, std::decay_t<decltype(history)>>;
      Kokkos::View<typename F::value_type, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> out(
          reinterpret_cast<typename F::value_type*>(sums_at));
      IndexView const ord = sorted ? order : IndexView();
      F f{t, nearest, in.source, ord, in.target, in.normals, previous, state, history, sq_cutoff, criteria, 0, false};
      for (int it = 0; it < iterations; ++it) {
        f.iteration = it;
        reduce("kdforge::icp::iteration", f, out);
        if constexpr (host_state) {
          exec.fence();
          if (state().done) break;
        }
      }
      f.measure = true;
      reduce("kdforge::icp::measure", f, out);
    };
    if (plane) launch(std::true_type{});
    else launch(std::false_type{});
  };
  if (exact) {
    Walk const walk = make_walk<Exec>(options.exact, "icp");
    // Each walk starts from the previous correspondence or, in the first
    // iteration, from the cutoff: the node boxes cost more than they prune
    // (kernels/query/launch.hpp, walk_tree_without_boxes; measured in
    // docs/performance.md, ICP tracking). Without a cutoff the first
    // iteration's walks are unbounded: the boxes stay.
    Tree const walk_tree = std::isfinite(options.max_correspondence_distance) ? walk_tree_without_boxes<Exec>(tree) : tree;
    with_fixed_split<Exec>(walk_tree, [&](auto const& t) {
      using TT = std::decay_t<decltype(t)>;
      run(t, reg::ExactNearest<TT, decltype(in.target)>{walk, in.target});
    });
  } else {
    ApproximateOptions const& a = options.approximate;
    using B = kernels::PendingBranch<T, Index>;
    using QueueView = Kokkos::View<B**, Kokkos::LayoutLeft, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    T const scale = T((1.0 + a.eps) * (1.0 + a.eps));
    if (a.queue_capacity <= 32) {
      run(tree, reg::ApproximateNearest<Tree, 32, QueueView>{a.queue_capacity, a.max_leaves, scale, QueueView()});
    } else {
      // LayoutLeft: on GPUs neighbouring threads touch neighbouring
      // addresses for the same heap slot (as knn_approximate)
      grow(ws.queues, std::size_t(m) * std::size_t(a.queue_capacity) * sizeof(B), "kdforge::icp::queues");
      QueueView const queue(reinterpret_cast<B*>(ws.queues.data()), m, a.queue_capacity);
      run(tree, reg::ApproximateNearest<Tree, 0, QueueView>{a.queue_capacity, a.max_leaves, scale, queue});
    }
  }

  // The one wait of the call: the state and the history to the host.
  Kokkos::deep_copy(exec, ws.host_state, ws.state);
  exec.fence();
  reg::LoopState const& st = *reinterpret_cast<reg::LoopState const*>(ws.host_state.data());
  double const* const rmse_history = reinterpret_cast<double const*>(ws.host_state.data() + state_bytes + sums_bytes);
  if (left_region) *left_region = st.left_region != 0;
  if (st.left_region && st.first_bad < 0) return {};
  if (st.first_bad >= 0) {
    auto const p = point_on_host(exec, in.source, st.first_bad);
    fail("icp", "source point ", st.first_bad, " has ", unusable_coordinates(p.coords, 3),
         "; every source point must be a finite point in that range (remove it, or replace it)");
  }
  if (st.failed) fail_too_few(st.failed_count, plane, options.max_correspondence_distance, st.failed_iteration);
  IcpResult result;
  result.transform = st.x;
  result.status = st.converged ? IcpStatus::converged : IcpStatus::max_iterations;
  result.iterations = st.iterations;
  result.rmse = st.rmse;
  result.correspondences = st.count;
  result.fitness = double(st.count) / double(m);
  result.rmse_history.assign(rmse_history, rmse_history + st.history);
  set_degeneracy(result, plane, options.degenerate_ratio, st.singular_values, st.largest_eigenvalue, st.weakest_axis);
  return result;
}

template <class T>
struct is_icp_workspace : std::false_type {};
template <class MS>
struct is_icp_workspace<IcpWorkspace<MS>> : std::true_type {};

/// The reference loop (icp_reference_impl) with icp's arguments.
template <class Exec, class Tree, class TargetPoints, class SourcePoints>
IcpResult icp_reference(Exec const& exec, Tree const& target_tree, TargetPoints const& target,
                        SourcePoints const& source, RigidTransform const& initial = {},
                        IcpOptions const& options = {}) {
  return icp_reference_impl<Exec, Tree, TargetPoints, SourcePoints, TargetPoints>(exec, target_tree, target, source,
                                                                                 initial, options, nullptr);
}
template <class Exec, class Tree, class TargetPoints, class SourcePoints, class Normals>
IcpResult icp_reference(Exec const& exec, Tree const& target_tree, TargetPoints const& target,
                        SourcePoints const& source, RigidTransform const& initial, IcpOptions const& options,
                        Normals const& target_normals) {
  return icp_reference_impl(exec, target_tree, target, source, initial, options, &target_normals);
}
} // namespace detail

/// Registers `source` onto `target` (the points `target_tree` was built
/// from) starting at `initial`: the transform, its RMSE and fitness, the
/// iterations, whether it converged and whether the geometry left a motion
/// unconstrained (IcpResult). Point to plane estimates the target's normals
/// for this call (IcpOptions::normal_neighbors); pass them to the overloads
/// below to reuse them. `workspace` keeps the call's scratch memory for the
/// next call (a tracking loop: one per loop); without it, the call
/// allocates its own. The host waits once per call, for the results.
/// Throws kdforge::Error for an empty cloud, a NaN, infinite or out-of-range
/// source point, a NaN or infinite initial transform, or fewer than 3
/// accepted correspondences in an iteration.
template <class Exec, class Tree, class TargetPoints, class SourcePoints>
IcpResult icp(Exec const& exec, Tree const& target_tree, TargetPoints const& target, SourcePoints const& source,
              RigidTransform const& initial, IcpOptions const& options,
              IcpWorkspace<typename Exec::memory_space>& workspace) {
  return detail::api_call<typename Exec::memory_space>("icp", [&] {
    return detail::icp_impl<Exec, Tree, TargetPoints, SourcePoints, TargetPoints>(exec, target_tree, target, source,
                                                                                 initial, options, nullptr, workspace);
  });
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class TargetPoints, class SourcePoints>
IcpResult icp(Exec const& exec, Tree const& target_tree, TargetPoints const& target, SourcePoints const& source,
              RigidTransform const& initial = {}, IcpOptions const& options = {}) {
  IcpWorkspace<typename Exec::memory_space> workspace;
  return icp(exec, target_tree, target, source, initial, options, workspace);
}

/// As above, with the target's unit normals given (one per target point,
/// (0, 0, 0) where unknown: such points are left out); used by point to plane.
template <class Exec, class Tree, class TargetPoints, class SourcePoints, class Normals,
          class = std::enable_if_t<!detail::is_icp_workspace<Normals>::value>>
IcpResult icp(Exec const& exec, Tree const& target_tree, TargetPoints const& target, SourcePoints const& source,
              RigidTransform const& initial, IcpOptions const& options, Normals const& target_normals,
              IcpWorkspace<typename Exec::memory_space>& workspace) {
  return detail::api_call<typename Exec::memory_space>("icp", [&] {
    return detail::icp_impl(exec, target_tree, target, source, initial, options, &target_normals, workspace);
  });
}

/// As above, with scratch memory allocated for this call.
template <class Exec, class Tree, class TargetPoints, class SourcePoints, class Normals,
          class = std::enable_if_t<!detail::is_icp_workspace<Normals>::value>>
IcpResult icp(Exec const& exec, Tree const& target_tree, TargetPoints const& target, SourcePoints const& source,
              RigidTransform const& initial, IcpOptions const& options, Normals const& target_normals) {
  IcpWorkspace<typename Exec::memory_space> workspace;
  return icp(exec, target_tree, target, source, initial, options, target_normals, workspace);
}

} // namespace kdforge
