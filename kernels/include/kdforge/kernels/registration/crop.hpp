#pragma once
// The target points a tracking frame can use (track_frame in
// core/include/kdforge/icp_tracking.hpp): the box of the source where the
// initial pose puts it, and the target points inside that box grown by a
// margin, kept in their order.
//
// Not from the papers: Wehr & Radkowski 2018 build the tree over the whole
// range scan every frame (section V), and so does kdforge::icp. ICP rejects
// every pair farther apart than its cutoff r, so a moved source point q
// inside a box B can only be answered by target points inside B grown by r:
// a tree over those answers q exactly as a tree over the whole scan does
// (the same nearest point, ties to the same smaller index, since the kept
// points keep their order). The loop checks that every moved point stays
// inside B (icp_loop.hpp, IcpIteration::region).
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/registration/icp.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::kernels::registration {

/// The box of the finite moved source points (Box::empty() if none).
template <class T, class Source>
struct MovedBox {
  using value_type = Box<T, 3>;
  Source source;
  DeviceTransform<double> d;
  KOKKOS_INLINE_FUNCTION void init(value_type& b) const { b = value_type::empty(); }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, value_type const& b) const { a.extend(b); }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, volatile value_type const& b) const {
    for (int u = 0; u < 3; ++u) {
      a.lo[u] = b.lo[u] < a.lo[u] ? b.lo[u] : a.lo[u];
      a.hi[u] = b.hi[u] > a.hi[u] ? b.hi[u] : a.hi[u];
    }
  }
#endif
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, value_type& b) const {
    Point<T, 3> const q = moved_point<T>(d, source(i));
    if (kdforge::detail::is_usable(q)) b.extend(q);
  }
};

/// The crop's counts: points kept, points the builder would refuse (the
/// caller then builds over the whole target, whose builder says why), and
/// the boxes of the usable points (the whole target's tree's box) and of
/// the kept ones (their tree's): on GPUs a flat one keeps its node boxes.
template <class T>
struct CropCounts {
  std::int64_t kept;
  std::int64_t refused;
  Box<T, 3> usable_box;
  Box<T, 3> kept_box;
};

/// Stable compaction of the target points inside `box` into `out` (when
/// `out` is given; a first pass with an empty `out` counts).
template <class T, class Target, class Out>
struct CropTarget {
  using value_type = CropCounts<T>;
  Target target;
  Out out;
  Box<T, 3> box;
  bool refuse_non_finite; ///< the builder refuses NaN and infinity (else it drops them)

  KOKKOS_INLINE_FUNCTION void init(value_type& c) const {
    c.kept = c.refused = 0;
    c.usable_box = c.kept_box = Box<T, 3>::empty();
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, value_type const& b) const {
    a.kept += b.kept;
    a.refused += b.refused;
    a.usable_box.extend(b.usable_box);
    a.kept_box.extend(b.kept_box);
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, volatile value_type const& b) const {
    a.kept += b.kept;
    a.refused += b.refused;
    for (int u = 0; u < 3; ++u) {
      a.usable_box.lo[u] = b.usable_box.lo[u] < a.usable_box.lo[u] ? b.usable_box.lo[u] : a.usable_box.lo[u];
      a.usable_box.hi[u] = b.usable_box.hi[u] > a.usable_box.hi[u] ? b.usable_box.hi[u] : a.usable_box.hi[u];
      a.kept_box.lo[u] = b.kept_box.lo[u] < a.kept_box.lo[u] ? b.kept_box.lo[u] : a.kept_box.lo[u];
      a.kept_box.hi[u] = b.kept_box.hi[u] > a.kept_box.hi[u] ? b.kept_box.hi[u] : a.kept_box.hi[u];
    }
  }
#endif
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, value_type& c, bool final) const {
    Point<T, 3> const p = target(i);
    bool in = true;
    for (int d = 0; d < 3; ++d) in = in && p[d] >= box.lo[d] && p[d] <= box.hi[d];
    if (!kdforge::detail::is_usable(p)) {
      bool finite = true;
      for (int d = 0; d < 3; ++d) finite = finite && p[d] - p[d] == T(0);
      if (refuse_non_finite || finite) c.refused += 1;
      return;
    }
    c.usable_box.extend(p);
    if (!in) return;
    if (final && out.extent(0)) out(c.kept) = p;
    c.kept += 1;
    c.kept_box.extend(p);
  }
};

} // namespace kdforge::kernels::registration
