#pragma once
// Rays, ray hits and triangle meshes: the vocabulary of the triangle trees
// (kernels/trees/triangle_tree.hpp) and the ray queries (kdforge/rays.hpp).
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

namespace kdforge {

/// A ray: the points origin + t * direction for t in [tmin, tmax]. The
/// direction need not be unit length (t is measured in its units); tmax may
/// be infinite. Queries refuse rays with a NaN or infinite origin or
/// direction, a zero direction, a NaN tmin / tmax, or a negative tmin
/// (rays start at t >= 0, as Embree's and OptiX's do).
template <class T>
struct Ray {
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::Ray: coordinates must be float or double");
  T origin[3];
  T direction[3];
  T tmin;
  T tmax;
};

/// The answer of a closest-hit query for one ray: the caller's index of the
/// triangle hit first (-1: none), the ray parameter of the hit, and its
/// barycentric coordinates: the hit point is (1 - u - v) * v0 + u * v1 + v * v2
/// for the triangle's corners v0, v1, v2 in the order the mesh lists them.
/// A miss has t = +inf, u = v = 0.
template <class T>
struct Hit {
  std::int32_t triangle;
  T t;
  T u;
  T v;
};

/// A triangle mesh as two Views: `vertices` (V x 3 coordinates, float or
/// double) and `triangles` (F x 3 indices into the vertices, std::int32_t).
/// The builders also take any rank-2 Views of these extents and types; this
/// struct only names the pair.
template <class T, class MemorySpace>
struct TriangleMesh {
  Kokkos::View<T* [3], MemorySpace> vertices;
  Kokkos::View<std::int32_t* [3], MemorySpace> triangles;
};

} // namespace kdforge
