#pragma once
// One frame of rigid tracking: build the scan's tree and register the model
// onto it (kdforge::icp), over the part of the scan the model can reach.
//
//   kdforge::TrackingOptions o;
//   o.icp.max_correspondence_distance = 0.02;                  // rejection (m): the crop's reach
//   kdforge::TrackingWorkspace<MemorySpace> ws;                // kept across frames
//   for (each frame) {
//     auto r = kdforge::track_frame(exec, scan, model, pose, o, ws);
//     pose = r.transform;                                      // IcpResult's fields, and:
//     // r.tree_points: scan points in the frame's tree; r.cropped; r.repeated
//   }
//
// Wehr & Radkowski 2018 (section V) rebuild the tree over the whole range
// scan every frame, and icp() registers against whatever tree it is given.
// Point-to-point ICP rejects every pair farther apart than its cutoff r,
// so a scan point can only answer a model point that comes within r of it:
// track_frame keeps the scan points inside the box of the model at the
// initial pose, grown by max_motion + r (kernels/registration/crop.hpp),
// builds the tree over those (in their order), and lets the loop check that
// every moved model point stays inside the model's box grown by max_motion.
// Then every moved point's correspondence is the one a tree over the whole
// scan gives, and the transform is icp()'s over the whole scan to the
// rounding of the sums (added in the Morton order of the kept points' box,
// not the whole scan's); if a point leaves that box, the frame is
// registered again over the whole scan (TrackingResult::repeated). With approximate
// search, Wehr's bounded queue walks the cropped tree, whose answers may
// differ from those of the whole scan's tree. Where the crop cannot promise that
// (point to plane, whose estimated normals would see only the cropped
// neighbourhoods; an infinite cutoff; a scan point the builder refuses,
// whose build over the whole scan then says which; more scan points than
// the crop counts), the frame uses the whole scan. NaN and infinite scan
// points that the build options drop are left out of the crop too.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/access.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/registration.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/build_left_balanced.hpp>
#include <kdforge/build_split_sort.hpp>
#include <kdforge/icp.hpp>
#include <kdforge/kernels/common/points.hpp>
#include <kdforge/kernels/registration/crop.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kdforge {

/// The tree track_frame builds over the scan each frame.
enum class TrackingTree {
  left_balanced, ///< build_left_balanced (Wald 2022; the faster build and walk)
  split_sort,    ///< build_split_sort (Wehr & Radkowski 2018, the paper's)
};

struct TrackingOptions {
  IcpOptions icp{};
  TrackingTree tree = TrackingTree::left_balanced;
  /// Build options when tree == left_balanced / split_sort. Node boxes
  /// left `automatic` are not built for the exact search of point to point
  /// with a finite cutoff, whose walks leave them aside (icp.hpp).
  BuildOptions left_balanced{};
  SplitSortOptions split_sort{};
  /// Build over the scan points the model can reach (see the file's
  /// comment); false: over the whole scan, as icp() with a tree of it.
  bool crop = true;
  /// How far (same unit as the points) the model may move in the frame's
  /// iterations: every moved model point must stay inside the box of the
  /// model at the initial pose grown by this much, or the frame is
  /// registered again over the whole scan. Negative:
  /// icp.max_correspondence_distance. Larger values crop less.
  double max_motion = -1;
};

/// icp()'s result, and which tree gave it.
struct TrackingResult : IcpResult {
  std::int64_t tree_points = 0; ///< scan points in the tree of the registration returned
  bool cropped = false;         ///< that tree held only the scan points the model could reach
  bool repeated = false;        ///< a cropped registration saw a point move beyond max_motion and was
                                ///< repeated over the whole scan
};

/// Scratch memory of track_frame kept between frames: icp's workspace, the
/// cropped scan and the crop's counts and scan storage, and an arena for
/// the tree and its builder (backend::Arena), so that the build allocates
/// nothing once the scans stop growing. One execution space instance at a
/// time; movable.
template <class MemorySpace>
class TrackingWorkspace {
 public:
  TrackingWorkspace() = default;
  TrackingWorkspace(TrackingWorkspace const&) = delete;
  TrackingWorkspace& operator=(TrackingWorkspace const&) = delete;
  TrackingWorkspace(TrackingWorkspace&&) = default;
  TrackingWorkspace& operator=(TrackingWorkspace&&) = default;

  std::size_t bytes() const {
    return icp.bytes() + cropped.span() + crop_flags.span() * sizeof(std::uint64_t) + scan.span() + build.bytes();
  }
  void release() { *this = TrackingWorkspace(); }

  IcpWorkspace<MemorySpace> icp;             // kdforge::icp's
  Kokkos::View<char*, MemorySpace> cropped;  // the kept scan points
  Kokkos::View<std::uint64_t*, MemorySpace> crop_flags; // the crop's counts, then places
  Kokkos::View<char*, MemorySpace> scan;     // the backend scan's temporary storage
  backend::Arena<MemorySpace> build;         // the tree and its builder's scratch
};

namespace detail {

template <class Exec, class C>
auto tracking_points(Exec const& exec, C const& container, char const* label) {
  static_assert(check_points_container<C, Exec>());
  using A = AccessTraits<C>;
  static_assert(A::dimension == 3, "kdforge::track_frame: the clouds must be 3-D");
  using PV = Kokkos::View<Point<typename A::coordinate_type, 3>*, typename Exec::memory_space>;
  if constexpr (std::is_convertible<C, PV>::value) return PV(container);
  else return to_points(exec, container, label);
}

/// The box of the moved source grown by `by`, rounded outwards to T.
template <class T>
Box<T, 3> grown(Box<T, 3> const& b, double by) {
  Box<T, 3> g;
  for (int d = 0; d < 3; ++d) {
    g.lo[d] = std::nextafter(T(double(b.lo[d]) - by), -std::numeric_limits<T>::infinity());
    g.hi[d] = std::nextafter(T(double(b.hi[d]) + by), std::numeric_limits<T>::infinity());
  }
  return g;
}

template <class Exec, class TargetPoints, class SourcePoints>
TrackingResult track_frame_impl(Exec const& exec, TargetPoints const& target_in, SourcePoints const& source_in,
                                RigidTransform const& initial, TrackingOptions const& options,
                                TrackingWorkspace<typename Exec::memory_space>& ws) {
  namespace reg = kernels::registration;
  using MS = typename Exec::memory_space;
  auto const target = tracking_points(exec, target_in, "kdforge::track::target");
  auto const source = tracking_points(exec, source_in, "kdforge::track::source");
  using T = typename AccessTraits<TargetPoints>::coordinate_type;
  static_assert(std::is_same<typename AccessTraits<SourcePoints>::coordinate_type, T>::value,
                "kdforge::track_frame: the scan and the model must have the same coordinate type");
  double const r = options.icp.max_correspondence_distance;
  KDFORGE_REQUIRE(!std::isnan(options.max_motion) && options.max_motion != std::numeric_limits<double>::infinity(),
                  "track_frame", "TrackingOptions::max_motion must be finite (got ", options.max_motion,
                  "); negative means icp.max_correspondence_distance");
  double const motion = options.max_motion < 0 ? r : options.max_motion;

  // The exact search of point to point with a cutoff leaves the node boxes
  // aside (icp.hpp; walk_tree_without_boxes), except on GPUs for points on
  // an axis-aligned plane or line: `automatic` then builds the tree without
  // them, and on GPUs adds them to a tree whose bounds are flat, as its
  // builder would have (the tree's bounds say, with no pass of their own).
  bool const boxes_aside =
      options.icp.search == IcpSearch::exact && options.icp.method == IcpMethod::point_to_point && std::isfinite(r);
  auto build_policy = [&](NodeBoxPolicy asked) {
    return asked == NodeBoxPolicy::automatic && boxes_aside ? NodeBoxPolicy::never : asked;
  };
  // One registration over `points` (the whole scan, or the kept part of it).
  auto registration = [&](auto const& points, Box<T, 3> const* region, bool* left) {
    auto run = [&](auto tree, NodeBoxPolicy asked) {
      if constexpr (runs_on_gpu<Exec>())
        if (asked == NodeBoxPolicy::automatic && boxes_aside && kernels::flat_bounds(tree))
          kernels::attach_node_boxes(exec, tree, asked);
      TrackingResult t;
      static_cast<IcpResult&>(t) = icp_impl<Exec, std::decay_t<decltype(tree)>, std::decay_t<decltype(points)>,
                                            std::decay_t<decltype(source)>, std::decay_t<decltype(points)>>(
          exec, tree, points, source, initial, options.icp, nullptr, ws.icp, region, left);
      t.tree_points = std::int64_t(tree.size());
      return t;
    };
    // The tree and the builder's scratch come from the workspace's arena:
    // the tree dies with this registration, before the next build begins.
    if (options.tree == TrackingTree::split_sort) {
      SplitSortOptions o = options.split_sort;
      o.node_boxes = build_policy(o.node_boxes);
      auto tree = [&] {
        backend::ArenaScope<MS> scope(ws.build);
        return build_split_sort(exec, points, o);
      }();
      return run(tree, options.split_sort.node_boxes);
    }
    BuildOptions o = options.left_balanced;
    o.node_boxes = build_policy(o.node_boxes);
    auto tree = [&] {
      backend::ArenaScope<MS> scope(ws.build);
      return build_left_balanced(exec, points, o);
    }();
    return run(tree, options.left_balanced.node_boxes);
  };
  auto whole = [&] { return registration(target, nullptr, nullptr); };

  std::int64_t const n = std::int64_t(target.extent(0));
  bool const can_crop = options.crop && options.icp.method == IcpMethod::point_to_point && std::isfinite(r) && r > 0 &&
                        n > 0 && source.extent(0) > 0;
  if (!can_crop) return whole(); // icp's and the builder's checks speak for the inputs

  // Where the initial pose puts the source; the region its points may reach.
  Box<T, 3> moved;
  Kokkos::parallel_reduce("kdforge::track::source_box", Kokkos::RangePolicy<Exec>(exec, 0, source.extent(0)),
                          reg::MovedBox<T, decltype(source)>{source, reg::device_transform<double>(initial)}, moved);
  if (!(moved.lo[0] <= moved.hi[0])) return whole(); // no usable source point: icp says which
  Box<T, 3> const region = grown(moved, motion);
  // The scan points kept: inside the region grown by the cutoff, with a
  // margin above the rounding of the walks' float distances (2^-10 of r)
  // and of the box's corners (2^-20 of their magnitude).
  double magnitude = 0;
  for (int d = 0; d < 3; ++d)
    magnitude = std::max({magnitude, std::fabs(double(region.lo[d])), std::fabs(double(region.hi[d]))});
  Box<T, 3> const keep = grown(region, r * (1 + 0x1p-10) + magnitude * 0x1p-20);

  // The crop counts in 32-bit fields (crop.hpp), and a vendor scan may
  // take fewer items (CUB before CCCL 3: 2^31 - 1); a larger scan is
  // registered whole.
  if (std::uint64_t(n) > std::min<std::uint64_t>(reg::crop_kept_mask, backend::max_sort_items<Exec>()))
    return whole();
  std::size_t const bytes = std::size_t(n) * sizeof(Point<T, 3>);
  if (ws.cropped.extent(0) < bytes) {
    ws.cropped = {};
    ws.cropped = backend::allocate<Kokkos::View<char*, MS>>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::track::cropped"), bytes);
  }
  if (std::int64_t(ws.crop_flags.extent(0)) < n) {
    ws.crop_flags = {};
    ws.crop_flags = backend::allocate<Kokkos::View<std::uint64_t*, MS>>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::track::crop_flags"), n);
  }
  using Kept = Kokkos::View<Point<T, 3>*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kept const all(reinterpret_cast<Point<T, 3>*>(ws.cropped.data()), n);
  auto const flags = Kokkos::subview(ws.crop_flags, Kokkos::make_pair(std::int64_t(0), n));
  bool const refuse = (options.tree == TrackingTree::split_sort ? options.split_sort.non_finite
                                                                 : options.left_balanced.non_finite) ==
                      NonFinitePolicy::reject;
  Kokkos::parallel_for("kdforge::track::crop_flags", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       reg::CropFlags<T, decltype(target), decltype(flags)>{target, flags, keep, refuse});
  std::uint64_t const counts = backend::exclusive_scan(exec, flags, flags, ws.scan);
  std::int64_t const kept_count = std::int64_t(counts & reg::crop_kept_mask);
  // A point the builder refuses: the whole scan, whose build says why;
  // nothing kept: too few correspondences, which icp over the whole scan
  // reports with its own numbers.
  if ((counts >> reg::crop_refused_shift) > 0 || kept_count == 0) return whole();
  Kokkos::parallel_for("kdforge::track::crop", Kokkos::RangePolicy<Exec>(exec, 0, n),
                       reg::CropScatter<T, decltype(target), decltype(flags), Kept>{target, flags, all, keep, refuse});
  Kept const kept(all.data(), kept_count);
  bool left = false;
  // The source is processed in the Morton order of the kept points' box
  // (icp()'s order over the whole scan's box was 20% slower on an H200:
  // docs/performance.md), so the sums agree with icp()'s to rounding.
  TrackingResult t = registration(kept, &region, &left);
  if (!left) {
    t.cropped = true;
    return t;
  }
  t = whole();
  t.repeated = true;
  return t;
}

} // namespace detail

/// Builds the tree of `scan` (options.tree) over the scan points `model` can
/// reach from `initial` and registers `model` onto it by icp(options.icp):
/// with exact search the transform and the rest of IcpResult are those of
/// icp() with a tree over the whole scan (see the file's comment for when
/// the whole scan is used instead, and for approximate search).
/// `workspace` keeps the scratch memory between frames.
/// Throws what the builder and icp() throw, and kdforge::Error for a NaN or
/// infinite max_motion.
template <class Exec, class ScanPoints, class ModelPoints>
TrackingResult track_frame(Exec const& exec, ScanPoints const& scan, ModelPoints const& model,
                           RigidTransform const& initial, TrackingOptions const& options,
                           TrackingWorkspace<typename Exec::memory_space>& workspace) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::track_frame: the first argument must be a Kokkos execution space instance");
  return detail::api_call<typename Exec::memory_space>(
      "track_frame", [&] { return detail::track_frame_impl(exec, scan, model, initial, options, workspace); });
}

/// As above, with scratch memory allocated for this frame.
template <class Exec, class ScanPoints, class ModelPoints>
TrackingResult track_frame(Exec const& exec, ScanPoints const& scan, ModelPoints const& model,
                           RigidTransform const& initial = {}, TrackingOptions const& options = {}) {
  TrackingWorkspace<typename Exec::memory_space> workspace;
  return track_frame(exec, scan, model, initial, options, workspace);
}

} // namespace kdforge
