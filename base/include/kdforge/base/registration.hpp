#pragma once
// Vocabulary of rigid registration (kdforge::icp, core/include/kdforge/icp.hpp):
// the rigid transform, the options and the result of Iterative Closest Point.
// Plain structs in double; RigidTransform's operations are callable on the
// device too (the ICP loop composes its transforms there). Host-only code
// that includes this file without Kokkos on its include path (the range-
// camera simulator of perf/icp, compiled by the host compiler in every
// build) gets them as plain inline functions.
#include <kdforge/base/options.hpp>

#if __has_include(<Kokkos_Core.hpp>)
#include <Kokkos_Core.hpp>
#define KDFORGE_TRANSFORM_FUNCTION KOKKOS_INLINE_FUNCTION
#else
#define KDFORGE_TRANSFORM_FUNCTION inline
#endif

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace kdforge {

/// x -> rotation * x + translation. Row-major rotation, in double.
struct RigidTransform {
  double rotation[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  double translation[3] = {0, 0, 0};

  static RigidTransform identity() { return {}; }
  /// The transform `a` after `b`: x -> a(b(x)).
  KDFORGE_TRANSFORM_FUNCTION friend RigidTransform operator*(RigidTransform const& a, RigidTransform const& b) {
    RigidTransform c;
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j)
        c.rotation[i][j] = a.rotation[i][0] * b.rotation[0][j] + a.rotation[i][1] * b.rotation[1][j] +
                           a.rotation[i][2] * b.rotation[2][j];
      c.translation[i] = a.rotation[i][0] * b.translation[0] + a.rotation[i][1] * b.translation[1] +
                         a.rotation[i][2] * b.translation[2] + a.translation[i];
    }
    return c;
  }
  KDFORGE_TRANSFORM_FUNCTION RigidTransform inverse() const {
    RigidTransform r;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) r.rotation[i][j] = rotation[j][i];
    for (int i = 0; i < 3; ++i)
      r.translation[i] = -(r.rotation[i][0] * translation[0] + r.rotation[i][1] * translation[1] +
                           r.rotation[i][2] * translation[2]);
    return r;
  }
  KDFORGE_TRANSFORM_FUNCTION void apply(double const x[3], double y[3]) const {
    for (int i = 0; i < 3; ++i)
      y[i] = rotation[i][0] * x[0] + rotation[i][1] * x[1] + rotation[i][2] * x[2] + translation[i];
  }
  /// Rotation angle in radians (0 to pi).
  KDFORGE_TRANSFORM_FUNCTION double angle() const {
    double const c = 0.5 * (rotation[0][0] + rotation[1][1] + rotation[2][2] - 1.0);
    return ::acos(c > 1 ? 1.0 : (c < -1 ? -1.0 : c));
  }
  /// Rotation by `radians` about `axis` (need not be unit length), then `t`.
  KDFORGE_TRANSFORM_FUNCTION static RigidTransform from_axis_angle(double const axis[3], double radians,
                                                               double const t[3] = nullptr) {
    RigidTransform r;
    double const len = ::sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    if (len > 0) {
      double const x = axis[0] / len, y = axis[1] / len, z = axis[2] / len;
      double const c = ::cos(radians), s = ::sin(radians), C = 1 - c;
      double const m[3][3] = {{c + x * x * C, x * y * C - z * s, x * z * C + y * s},
                              {y * x * C + z * s, c + y * y * C, y * z * C - x * s},
                              {z * x * C - y * s, z * y * C + x * s, c + z * z * C}};
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) r.rotation[i][j] = m[i][j];
    }
    if (t)
      for (int i = 0; i < 3; ++i) r.translation[i] = t[i];
    return r;
  }
};

enum class IcpMethod {
  point_to_point, ///< closed-form rigid fit of the 3x3 cross-covariance (Horn's quaternion)
  point_to_plane, ///< linearised residuals along the target's normals, 6x6 normal equations
};

enum class IcpSearch {
  exact,       ///< closest_point: the true nearest target point
  approximate, ///< knn_approximate, k = 1, with Wehr & Radkowski's bounded queue (approximate.queue_capacity)
};

struct IcpOptions {
  IcpMethod method = IcpMethod::point_to_point;
  IcpSearch search = IcpSearch::exact;
  /// Used when search == approximate: queue_capacity is the paper's Q.
  /// Its cutoff_radius is ignored (max_correspondence_distance decides).
  ApproximateOptions approximate{};
  /// Used when search == exact (the walk, query order); cutoff_radius ignored.
  QueryOptions exact{};
  int max_iterations = 30;
  /// Correspondence rejection: pairs farther apart are left out (not squared).
  double max_correspondence_distance = std::numeric_limits<double>::infinity();
  /// Converged when the RMSE of the correspondences changes by at most this
  /// fraction from one iteration to the next.
  double relative_rmse = 1e-6;
  /// Converged when one iteration's increment rotates by at most
  /// rotation_epsilon radians and translates by at most translation_epsilon.
  double rotation_epsilon = 1e-6;
  double translation_epsilon = 1e-6;
  /// A direction is reported unconstrained (IcpResult::degenerate) when its
  /// singular value of the cross-covariance (point to point) or its
  /// eigenvalue of the normal equations (point to plane, rotations scaled
  /// by the cloud's radius) is below this fraction of the largest one.
  double degenerate_ratio = 1e-3;
  /// Point to plane without given normals: neighbours per target point of
  /// the PCA normals estimated for the call (estimate_normals).
  int normal_neighbors = 10;
};

enum class IcpStatus {
  converged,      ///< a convergence criterion was met
  max_iterations, ///< max_iterations ran without meeting one
};

struct IcpResult {
  /// Maps the source cloud onto the target: target ~ transform(source).
  RigidTransform transform;
  IcpStatus status = IcpStatus::max_iterations;
  int iterations = 0;             ///< increments applied
  double rmse = 0;                ///< RMSE of the accepted correspondences at `transform`
  double fitness = 0;             ///< accepted correspondences / source points, at `transform`
  std::int64_t correspondences = 0;
  /// True when the geometry leaves some motion unconstrained: a planar
  /// source in point-to-point ICP (rotation about the plane's normal and
  /// sliding in it are decided by where the points happen to lie, not by
  /// the shape), a line, or a plane in point-to-plane ICP. The transform is
  /// then one of many that fit equally well.
  bool degenerate = false;
  /// Point to point: the axis (target frame, unit length) about which
  /// rotation is unconstrained when degenerate (the smallest singular
  /// direction of the cross-covariance: the plane's normal); zero otherwise.
  double unconstrained_axis[3] = {0, 0, 0};
  /// Point to point: singular values of the cross-covariance, descending.
  /// Point to plane: the three smallest eigenvalues of the normal equations, descending.
  double singular_values[3] = {0, 0, 0};
  /// RMSE of the correspondences at the start of each iteration.
  std::vector<double> rmse_history;
};

} // namespace kdforge
