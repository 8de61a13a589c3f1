#pragma once
// SAH k-d trees over triangle meshes (Zhou, Hou, Wang & Guo 2008), for ray
// queries (kdforge/rays.hpp). The algorithm is in
// kernels/builders/sah/build.hpp.
//
//   Kokkos::View<float*[3], MemorySpace> vertices("v", nv);
//   Kokkos::View<std::int32_t*[3], MemorySpace> triangles("f", nf);
//   auto tree = kdforge::build_sah_tree(exec, vertices, triangles);
//   double quality = kdforge::sah_cost(tree);
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/ray.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/kernels/builders/sah/build.hpp>
#include <kdforge/kernels/trees/triangle_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <type_traits>

namespace kdforge {

namespace detail {
// the first vertex with a NaN or infinite coordinate
template <class Vertices>
struct FirstNonFiniteVertex {
  Vertices vertices;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& first) const {
    for (int d = 0; d < 3; ++d)
      if (!detail::is_finite(vertices(i, d)) && i < first) first = i;
  }
};

// the first triangle with an index outside [0, V)
template <class Triangles>
struct FirstBadTriangle {
  Triangles triangles;
  std::int64_t vertex_count;
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& first) const {
    for (int c = 0; c < 3; ++c) {
      std::int64_t const v = std::int64_t(triangles(i, c));
      if ((v < 0 || v >= vertex_count) && i < first) first = i;
    }
  }
};
} // namespace detail

/// Builds an SAH k-d tree over a triangle mesh on the execution space
/// instance `exec`: `vertices` is a V x 3 View of float or double (T*[3] or
/// T**, any layout), `triangles` an F x 3 View of std::int32_t indices into
/// the vertices; both in memory `exec` can read. The mesh is copied (each
/// triangle's corners), never modified. Zero-area triangles are kept (rays
/// never hit them); an empty mesh gives an empty tree that every ray
/// misses. Errors (kdforge::Error): Views that are not V x 3 / F x 3, a NaN
/// or infinite vertex coordinate (the first such vertex named), an index
/// below 0 or at least V (the first such triangle named), 2^31 or more
/// vertices or triangles, options out of range, and running out of memory.
template <class Exec, class Vertices, class Triangles>
TriangleTree<typename Exec::memory_space, typename Vertices::non_const_value_type>
build_sah_tree(Exec const& exec, Vertices const& vertices, Triangles const& triangles, SahOptions const& options = {}) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::build_sah_tree: the first argument must be a Kokkos execution space instance");
  static_assert(Kokkos::is_view<Vertices>::value && Vertices::rank == 2,
                "kdforge::build_sah_tree: vertices must be a rank-2 Kokkos::View (V x 3)");
  static_assert(Kokkos::is_view<Triangles>::value && Triangles::rank == 2,
                "kdforge::build_sah_tree: triangles must be a rank-2 Kokkos::View (F x 3)");
  using T = typename Vertices::non_const_value_type;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kdforge::build_sah_tree: vertex coordinates must be float or double");
  static_assert(std::is_same<typename Triangles::non_const_value_type, std::int32_t>::value,
                "kdforge::build_sah_tree: triangle indices must be std::int32_t");
  static_assert(Kokkos::SpaceAccessibility<Exec, typename Vertices::memory_space>::accessible &&
                    Kokkos::SpaceAccessibility<Exec, typename Triangles::memory_space>::accessible,
                "kdforge::build_sah_tree: the mesh must be in memory the execution space can read");
  char const* const where = "build_sah_tree";
  KDFORGE_REQUIRE(vertices.extent(1) == 3, where, "vertices must be a V x 3 View (got V x ", vertices.extent(1), ")");
  KDFORGE_REQUIRE(triangles.extent(1) == 3, where, "triangles must be an F x 3 View of vertex indices (got F x ",
                  triangles.extent(1), ")");
  std::int64_t const nv = std::int64_t(vertices.extent(0));
  std::int64_t const nf = std::int64_t(triangles.extent(0));
  KDFORGE_REQUIRE(nv < std::numeric_limits<std::int32_t>::max() && nf < std::numeric_limits<std::int32_t>::max(),
                  where, nv, " vertices and ", nf, " triangles: at most 2^31 - 2 of each are supported");
  KDFORGE_REQUIRE(std::isfinite(options.traversal_cost) && options.traversal_cost > 0.0 &&
                      std::isfinite(options.intersection_cost) && options.intersection_cost > 0.0,
                  where, "SahOptions::traversal_cost and intersection_cost must be finite and > 0 (got ",
                  options.traversal_cost, " and ", options.intersection_cost, ")");
  KDFORGE_REQUIRE(options.empty_space_ratio >= 0.0 && options.empty_space_ratio < 1.0, where,
                  "SahOptions::empty_space_ratio must be in [0, 1) (got ", options.empty_space_ratio, ")");
  KDFORGE_REQUIRE(options.small_node_size >= 1 && options.small_node_size <= kernels::sah::small_capacity, where,
                  "SahOptions::small_node_size must be in [1, 64]: a small node's triangles are one 64-bit mask (got ",
                  options.small_node_size, ")");
  KDFORGE_REQUIRE(options.max_depth >= 0 && options.max_depth <= kernels::sah::max_depth_cap, where,
                  "SahOptions::max_depth must be in [0, ", kernels::sah::max_depth_cap, "], 0 for automatic (got ",
                  options.max_depth, ")");
  using Policy = Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>;
  std::int64_t const none = std::numeric_limits<std::int64_t>::max();
  if (nv > 0) {
    std::int64_t bad = none;
    Kokkos::parallel_reduce("kdforge::build_sah_tree::check_vertices", Policy(exec, 0, nv),
                            detail::FirstNonFiniteVertex<Vertices>{vertices}, Kokkos::Min<std::int64_t>(bad));
    KDFORGE_REQUIRE(bad == none, where, "vertex ", bad,
                    " has a NaN or infinite coordinate; remove it (and its triangles) or replace it by a finite one");
  }
  if (nf > 0) {
    std::int64_t bad = none;
    Kokkos::parallel_reduce("kdforge::build_sah_tree::check_triangles", Policy(exec, 0, nf),
                            detail::FirstBadTriangle<Triangles>{triangles, nv}, Kokkos::Min<std::int64_t>(bad));
    KDFORGE_REQUIRE(bad == none, where, "triangle ", bad, " has a vertex index below 0 or not below the ", nv,
                    " vertices");
  }
  try {
    return detail::api_call<typename Exec::memory_space>(where, [&] {
      return kernels::sah::build<T>(exec, vertices, triangles, options);
    });
  } catch (OutOfMemoryError const& e) {
    throw OutOfMemoryError(std::string(e.what()) + " (building the tree over " + std::to_string(nf) +
                               " triangles: many overlapping triangles are listed in many leaves; lower "
                               "SahOptions::max_depth, or build over fewer triangles)",
                           e.requested_bytes(), e.available_bytes());
  }
}

/// The same, for a mesh given as a TriangleMesh.
template <class Exec, class T, class MemorySpace>
TriangleTree<typename Exec::memory_space, T> build_sah_tree(Exec const& exec, TriangleMesh<T, MemorySpace> const& mesh,
                                                            SahOptions const& options = {}) {
  return build_sah_tree(exec, mesh.vertices, mesh.triangles, options);
}

/// The SAH cost of a tree: the expected cost of a ray that crosses the scene
/// box, with the costs it was built with (SahOptions::traversal_cost and
/// intersection_cost; see kernels::sah::tree_cost). Lower is better; a single
/// leaf of all F triangles costs intersection_cost * F.
template <class MemorySpace, class T>
double sah_cost(TriangleTree<MemorySpace, T> const& tree) {
  return kernels::sah::tree_cost(tree);
}

} // namespace kdforge
