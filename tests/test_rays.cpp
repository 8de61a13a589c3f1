// SAH triangle trees (Zhou, Hou, Wang & Guo 2008) and ray queries: every
// closest hit and any hit equal to a loop over all triangles with the same
// watertight test (the same triangle, or a tie at equal t), for triangle
// soups, closed meshes and degenerate input, float and double; no ray from
// inside a closed mesh escapes it, also through its vertices and along its
// shared edges; the built tree checked directly (preorder links, every
// triangle listed in every leaf whose cell it reaches into, the SAH cost
// recomputed here), identical on every backend; bad input refused with a
// clear error.
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace kdforge;
using test::to_host;

namespace {

struct Mesh {
  std::vector<double> v;       // V x 3
  std::vector<std::int32_t> f; // F x 3
  std::size_t vertex_count() const { return v.size() / 3; }
  std::size_t triangle_count() const { return f.size() / 3; }
  std::int32_t add_vertex(double x, double y, double z) {
    v.insert(v.end(), {x, y, z});
    return std::int32_t(vertex_count() - 1);
  }
  void add_triangle(std::int32_t a, std::int32_t b, std::int32_t c) { f.insert(f.end(), {a, b, c}); }
};

// n triangles of random corners within `size` of a random centre in [0, 1]^3
Mesh soup(std::size_t n, double size, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  Mesh m;
  for (std::size_t i = 0; i < n; ++i) {
    double const c[3] = {u(rng), u(rng), u(rng)};
    std::int32_t idx[3];
    for (auto& k : idx) k = m.add_vertex(c[0] + size * (u(rng) - 0.5), c[1] + size * (u(rng) - 0.5), c[2] + size * (u(rng) - 0.5));
    m.add_triangle(idx[0], idx[1], idx[2]);
  }
  return m;
}

// the unit icosahedron subdivided `levels` times, projected onto the sphere
// of radius r about (0.5, 0.5, 0.5): closed, every edge shared by two triangles
Mesh icosphere(int levels, double r) {
  Mesh m;
  double const t = (1.0 + std::sqrt(5.0)) / 2.0;
  std::vector<std::array<double, 3>> p = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0}, {0, -1, t}, {0, 1, t},
                                          {0, -1, -t}, {0, 1, -t}, {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
  std::vector<std::array<int, 3>> f = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11}, {1, 5, 9}, {5, 11, 4},
                                       {11, 10, 2}, {10, 7, 6}, {7, 1, 8},   {3, 9, 4},  {3, 4, 2},   {3, 2, 6}, {3, 6, 8},
                                       {3, 8, 9},  {4, 9, 5},  {2, 4, 11},  {6, 2, 10}, {8, 6, 7},   {9, 8, 1}};
  for (int l = 0; l < levels; ++l) {
    std::map<std::pair<int, int>, int> mid;
    auto midpoint = [&](int a, int b) {
      auto key = std::make_pair(std::min(a, b), std::max(a, b));
      auto it = mid.find(key);
      if (it != mid.end()) return it->second;
      std::array<double, 3> q;
      for (int d = 0; d < 3; ++d) q[d] = 0.5 * (p[a][d] + p[b][d]);
      p.push_back(q);
      return mid[key] = int(p.size() - 1);
    };
    std::vector<std::array<int, 3>> g;
    for (auto const& tri : f) {
      int const a = midpoint(tri[0], tri[1]), b = midpoint(tri[1], tri[2]), c = midpoint(tri[2], tri[0]);
      g.push_back({tri[0], a, c});
      g.push_back({tri[1], b, a});
      g.push_back({tri[2], c, b});
      g.push_back({a, b, c});
    }
    f = g;
  }
  for (auto const& q : p) {
    double const s = r / std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
    m.add_vertex(0.5 + s * q[0], 0.5 + s * q[1], 0.5 + s * q[2]);
  }
  for (auto const& tri : f) m.add_triangle(tri[0], tri[1], tri[2]);
  return m;
}

// the surface of [0, 1]^3, each face a k x k grid of squares cut into two
// triangles; grid vertices shared between faces (closed)
Mesh cube(int k) {
  Mesh m;
  std::map<std::array<int, 3>, std::int32_t> index;
  auto vertex = [&](std::array<int, 3> g) {
    auto it = index.find(g);
    if (it != index.end()) return it->second;
    return index[g] = m.add_vertex(double(g[0]) / k, double(g[1]) / k, double(g[2]) / k);
  };
  for (int axis = 0; axis < 3; ++axis)
    for (int side = 0; side <= 1; ++side)
      for (int i = 0; i < k; ++i)
        for (int j = 0; j < k; ++j) {
          int const a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
          std::array<int, 3> c[4];
          int const di[4] = {0, 1, 1, 0}, dj[4] = {0, 0, 1, 1};
          for (int q = 0; q < 4; ++q) {
            c[q][axis] = side * k;
            c[q][a1] = i + di[q];
            c[q][a2] = j + dj[q];
          }
          std::int32_t const v0 = vertex(c[0]), v1 = vertex(c[1]), v2 = vertex(c[2]), v3 = vertex(c[3]);
          if ((i + j) % 2 == 0) { // alternate the diagonals
            m.add_triangle(v0, v1, v2);
            m.add_triangle(v0, v2, v3);
          } else {
            m.add_triangle(v0, v1, v3);
            m.add_triangle(v1, v2, v3);
          }
        }
  return m;
}

template <class Exec, class T>
std::pair<Kokkos::View<T* [3], typename Exec::memory_space>, Kokkos::View<std::int32_t* [3], typename Exec::memory_space>>
upload(Mesh const& m) {
  using MS = typename Exec::memory_space;
  Kokkos::View<T* [3], MS> v("vertices", m.vertex_count());
  Kokkos::View<std::int32_t* [3], MS> f("triangles", m.triangle_count());
  auto hv = Kokkos::create_mirror_view(v);
  auto hf = Kokkos::create_mirror_view(f);
  for (std::size_t i = 0; i < m.vertex_count(); ++i)
    for (int d = 0; d < 3; ++d) hv(i, d) = T(m.v[3 * i + d]);
  for (std::size_t i = 0; i < m.triangle_count(); ++i)
    for (int c = 0; c < 3; ++c) hf(i, c) = m.f[3 * i + c];
  Kokkos::deep_copy(v, hv);
  Kokkos::deep_copy(f, hf);
  return {v, f};
}

template <class T>
Ray<T> make_ray(double const (&o)[3], double const (&d)[3], double tmin = 0.0,
                double tmax = std::numeric_limits<double>::infinity()) {
  Ray<T> r;
  for (int k = 0; k < 3; ++k) {
    r.origin[k] = T(o[k]);
    r.direction[k] = T(d[k]);
  }
  r.tmin = T(tmin);
  r.tmax = T(tmax);
  return r;
}

// rays from random points of [-0.5, 1.5]^3 towards random points of [0, 1]^3,
// some from inside the box in random directions, some axis-parallel from
// points on the corners' planes, some with a finite tmax
template <class T>
std::vector<Ray<T>> random_rays(std::size_t n, Mesh const& m, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<Ray<T>> rays;
  for (std::size_t i = 0; i < n; ++i) {
    double o[3], d[3];
    int const kind = int(i % 4);
    if (kind == 0) { // from outside towards the scene, some starting late (tmin > 0)
      for (int k = 0; k < 3; ++k) o[k] = -0.5 + 2.0 * u(rng);
      for (int k = 0; k < 3; ++k) d[k] = u(rng) - o[k];
      rays.push_back(make_ray<T>(o, d, u(rng) < 0.3 ? 0.5 + 0.3 * u(rng) : 0.0));
    } else if (kind == 1) { // from inside the scene box, any direction
      for (int k = 0; k < 3; ++k) o[k] = u(rng);
      for (int k = 0; k < 3; ++k) d[k] = u(rng) - 0.5;
      rays.push_back(make_ray<T>(o, d, 0.0, u(rng) < 0.5 ? 0.3 : std::numeric_limits<double>::infinity()));
    } else if (kind == 2) { // axis-parallel, origin on corners' planes where there are corners
      int const axis = int(rng() % 3);
      for (int k = 0; k < 3; ++k) o[k] = u(rng);
      if (m.vertex_count() > 0) {
        std::size_t const v = rng() % m.vertex_count();
        o[(axis + 1) % 3] = m.v[3 * v + (axis + 1) % 3];
      }
      o[axis] = -0.25;
      for (int k = 0; k < 3; ++k) d[k] = k == axis ? 1.0 : 0.0;
      if (rng() % 2) {
        o[axis] = 1.25;
        d[axis] = -1.0;
      }
      rays.push_back(make_ray<T>(o, d));
    } else { // towards a corner, from outside
      for (int k = 0; k < 3; ++k) o[k] = -0.5 + 2.0 * u(rng);
      double target[3] = {u(rng), u(rng), u(rng)};
      if (m.vertex_count() > 0) {
        std::size_t const v = rng() % m.vertex_count();
        for (int k = 0; k < 3; ++k) target[k] = m.v[3 * v + k];
      }
      for (int k = 0; k < 3; ++k) d[k] = target[k] - o[k];
      rays.push_back(make_ray<T>(o, d));
    }
  }
  return rays;
}

// the reference: every triangle, the same watertight test
template <class T>
Hit<T> brute_closest(Mesh const& m, Ray<T> const& r) {
  auto const w = kernels::make_watertight_ray(r);
  Hit<T> best{-1, std::numeric_limits<T>::infinity(), T(0), T(0)};
  for (std::size_t i = 0; i < m.triangle_count(); ++i) {
    T c[3][3];
    for (int k = 0; k < 3; ++k)
      for (int d = 0; d < 3; ++d) c[k][d] = T(m.v[3 * std::size_t(m.f[3 * i + k]) + d]);
    auto const h = kernels::intersect_watertight(w, c[0], c[1], c[2], r.tmin, r.tmax);
    if (h.hit && (best.triangle < 0 || h.t < best.t)) best = Hit<T>{std::int32_t(i), h.t, h.u, h.v};
  }
  return best;
}

template <class T>
bool brute_any(Mesh const& m, Ray<T> const& r) {
  auto const w = kernels::make_watertight_ray(r);
  for (std::size_t i = 0; i < m.triangle_count(); ++i) {
    T c[3][3];
    for (int k = 0; k < 3; ++k)
      for (int d = 0; d < 3; ++d) c[k][d] = T(m.v[3 * std::size_t(m.f[3 * i + k]) + d]);
    if (kernels::intersect_watertight(w, c[0], c[1], c[2], r.tmin, r.tmax).hit) return true;
  }
  return false;
}

template <class T>
double area(Box<T, 3> const& b) {
  double const dx = double(b.hi[0]) - double(b.lo[0]), dy = double(b.hi[1]) - double(b.lo[1]),
               dz = double(b.hi[2]) - double(b.lo[2]);
  return 2.0 * (dx * dy + dy * dz + dz * dx);
}

// The part of a triangle inside a box (Sutherland-Hodgman), and its area.
double clipped_area(double const (&tri)[3][3], double const (&lo)[3], double const (&hi)[3]) {
  std::vector<std::array<double, 3>> poly = {{tri[0][0], tri[0][1], tri[0][2]},
                                             {tri[1][0], tri[1][1], tri[1][2]},
                                             {tri[2][0], tri[2][1], tri[2][2]}};
  for (int d = 0; d < 3; ++d)
    for (int side = 0; side < 2; ++side) {
      std::vector<std::array<double, 3>> out;
      for (std::size_t j = 0; j < poly.size(); ++j) {
        auto const& p = poly[j];
        auto const& q = poly[(j + 1) % poly.size()];
        double const dp = side == 0 ? p[d] - lo[d] : hi[d] - p[d];
        double const dq = side == 0 ? q[d] - lo[d] : hi[d] - q[d];
        if (dp >= 0) out.push_back(p);
        if ((dp > 0 && dq < 0) || (dp < 0 && dq > 0)) {
          double const t = dp / (dp - dq);
          std::array<double, 3> x;
          for (int k = 0; k < 3; ++k) x[k] = p[k] + t * (q[k] - p[k]);
          out.push_back(x);
        }
      }
      poly = out;
      if (poly.empty()) return 0.0;
    }
  double a[3] = {0, 0, 0};
  for (std::size_t j = 1; j + 1 < poly.size(); ++j) {
    double e1[3], e2[3];
    for (int k = 0; k < 3; ++k) {
      e1[k] = poly[j][k] - poly[0][k];
      e2[k] = poly[j + 1][k] - poly[0][k];
    }
    a[0] += e1[1] * e2[2] - e1[2] * e2[1];
    a[1] += e1[2] * e2[0] - e1[0] * e2[2];
    a[2] += e1[0] * e2[1] - e1[1] * e2[0];
  }
  return 0.5 * std::sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

// The tree checked directly: preorder links, leaf lists in preorder, the
// height; every triangle listed in every leaf whose cell holds a part of it
// of positive area; the SAH cost recomputed from the nodes. Returns the
// number of leaf references.
template <class Tree>
std::size_t check_tree(Tree const& tree, Mesh const& m) {
  using T = typename Tree::coordinate_type;
  auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
  auto const leaf = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.leaf_triangles());
  std::size_t const f = m.triangle_count();
  CHECK(std::size_t(tree.size()) == f);
  if (f == 0) {
    CHECK(tree.node_count() == 0);
    CHECK(sah_cost(tree) == 0.0);
    return 0;
  }
  REQUIRE(tree.node_count() > 0);
  struct Item {
    std::int32_t node;
    Box<T, 3> cell;
    int depth;
  };
  std::vector<Item> stack{Item{0, tree.bounds(), 0}};
  std::int32_t expected = 0; // preorder: nodes met in index order
  std::int32_t next_ref = 0; // leaf lists in preorder
  int height = 0;
  double const root_area = area(tree.bounds());
  double cost = 0.0;
  std::size_t missing = 0, references = 0;
  while (!stack.empty()) {
    Item const it = stack.back();
    stack.pop_back();
    REQUIRE(it.node == expected);
    ++expected;
    height = std::max(height, it.depth);
    double const w = root_area > 0 ? area(it.cell) / root_area : 1.0;
    auto const n = nodes(it.node);
    if (!n.is_leaf()) {
      REQUIRE(n.dim() >= 0);
      REQUIRE(n.dim() < 3);
      CHECK(n.split >= it.cell.lo[n.dim()]);
      CHECK(n.split <= it.cell.hi[n.dim()]);
      REQUIRE(n.right() > it.node + 1);
      cost += tree.costs().traversal * w;
      Box<T, 3> l = it.cell, r = it.cell;
      l.hi[n.dim()] = n.split;
      r.lo[n.dim()] = n.split;
      stack.push_back(Item{n.right(), r, it.depth + 1});
      stack.push_back(Item{it.node + 1, l, it.depth + 1});
      continue;
    }
    REQUIRE(n.begin() == next_ref);
    REQUIRE(n.count() >= 0);
    next_ref += n.count();
    REQUIRE(std::size_t(next_ref) <= leaf.extent(0));
    references += std::size_t(n.count());
    cost += tree.costs().intersection * double(n.count()) * w;
    std::vector<char> listed(f, 0);
    for (std::int32_t i = n.begin(); i < n.begin() + n.count(); ++i) {
      REQUIRE(leaf(i) >= 0);
      REQUIRE(std::size_t(leaf(i)) < f);
      listed[std::size_t(leaf(i))] = 1;
    }
    double lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      lo[d] = double(it.cell.lo[d]);
      hi[d] = double(it.cell.hi[d]);
    }
    for (std::size_t t = 0; t < f; ++t) {
      if (listed[t]) continue;
      double c[3][3];
      for (int k = 0; k < 3; ++k)
        for (int d = 0; d < 3; ++d) c[k][d] = double(T(m.v[3 * std::size_t(m.f[3 * t + k]) + d]));
      bool outside = false;
      for (int d = 0; d < 3 && !outside; ++d)
        outside = std::max({c[0][d], c[1][d], c[2][d]}) <= lo[d] || std::min({c[0][d], c[1][d], c[2][d]}) >= hi[d];
      if (outside) continue;
      // positive area: more than rounding can make of a sliver along a face
      if (clipped_area(c, lo, hi) > 1e-9) ++missing;
    }
  }
  CHECK(expected == tree.node_count());
  CHECK(std::size_t(next_ref) == leaf.extent(0));
  CHECK(height == tree.height());
  CHECK(missing == 0);
  CHECK(sah_cost(tree) == doctest::Approx(cost).epsilon(1e-9));
  return references;
}

template <class T>
void compare_hits(std::vector<Hit<T>> const& hits, std::vector<Ray<T>> const& rays, Mesh const& m) {
  std::size_t wrong = 0, off_triangle = 0;
  for (std::size_t i = 0; i < rays.size(); ++i) {
    Hit<T> const b = brute_closest(m, rays[i]);
    Hit<T> const& h = hits[i];
    bool ok;
    if (b.triangle < 0) ok = h.triangle < 0 && std::isinf(h.t);
    else if (h.triangle == b.triangle) ok = h.t == b.t && h.u == b.u && h.v == b.v;
    else // a tie: another triangle at the same t
      ok = h.triangle >= 0 && std::abs(double(h.t) - double(b.t)) <= 1e-5 * (1.0 + std::abs(double(b.t)));
    if (!ok && wrong++ < 5)
      MESSAGE("ray ", i, ": tree hit ", h.triangle, " at ", h.t, ", brute force ", b.triangle, " at ", b.t);
    if (h.triangle >= 0) { // t and (u, v) name the same point: origin + t dir = (1 - u - v) v0 + u v1 + v v2
      double err = 0.0, scale = 1.0;
      for (int d = 0; d < 3; ++d) {
        double const on_ray = double(rays[i].origin[d]) + double(h.t) * double(rays[i].direction[d]);
        double corner[3];
        for (int k = 0; k < 3; ++k) corner[k] = double(T(m.v[3 * std::size_t(m.f[3 * std::size_t(h.triangle) + k]) + d]));
        double const on_triangle = (1.0 - double(h.u) - double(h.v)) * corner[0] + double(h.u) * corner[1] +
                                   double(h.v) * corner[2];
        err = std::max(err, std::abs(on_ray - on_triangle));
        scale = std::max({scale, std::abs(double(rays[i].origin[d])), std::abs(on_ray)});
      }
      if (err > 1e-4 * scale) ++off_triangle;
    }
  }
  CHECK(wrong == 0);
  CHECK(off_triangle == 0);
}

template <class Exec, class T>
std::vector<Hit<T>> closest(Exec const& exec, TriangleTree<typename Exec::memory_space, T> const& tree,
                            std::vector<Ray<T>> const& rays) {
  auto const r = test::to_device<Exec>(rays, "rays");
  return to_host(intersect_closest(exec, tree, r));
}

template <class Exec, class T>
std::vector<bool> any(Exec const& exec, TriangleTree<typename Exec::memory_space, T> const& tree,
                      std::vector<Ray<T>> const& rays) {
  auto const r = test::to_device<Exec>(rays, "rays");
  auto const o = intersect_any(exec, tree, r);
  auto const h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, o);
  std::vector<bool> out(rays.size());
  for (std::size_t i = 0; i < rays.size(); ++i) out[i] = h(i);
  return out;
}

// builds, checks the tree, and compares closest and any hits with brute force
template <class Exec, class T>
TriangleTree<typename Exec::memory_space, T> check_mesh(Mesh const& m, std::vector<Ray<T>> const& rays,
                                                        SahOptions const& options = {}) {
  Exec exec;
  auto const mesh = upload<Exec, T>(m);
  auto const tree = build_sah_tree(exec, mesh.first, mesh.second, options);
  check_tree(tree, m);
  compare_hits(closest(exec, tree, rays), rays, m);
  auto const occ = any(exec, tree, rays);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < rays.size(); ++i) wrong += occ[i] != brute_any(m, rays[i]);
  CHECK(wrong == 0);
  return tree;
}

// Two small triangles at opposite corners of [0, 1]^3, so that the root
// splits x at 0.5 (the large stage's median of its longest, first, axis),
// and a grid of k x k/2 squares on z = 0.5 over x in [0.5, 1] only, whose
// left edges lie in that plane; returns k.
int split_plane_grid(Mesh& m) {
  m.add_triangle(m.add_vertex(0, 0, 0), m.add_vertex(0.01, 0, 0), m.add_vertex(0, 0.01, 0));
  m.add_triangle(m.add_vertex(1, 1, 1), m.add_vertex(0.99, 1, 1), m.add_vertex(1, 0.99, 1));
  int const k = 16;
  for (int i = 0; i < k / 2; ++i)
    for (int j = 0; j < k; ++j) {
      double const x0 = 0.5 + double(i) / k, x1 = x0 + 1.0 / k, y0 = double(j) / k, y1 = y0 + 1.0 / k;
      std::int32_t const a = m.add_vertex(x0, y0, 0.5), b = m.add_vertex(x1, y0, 0.5), c = m.add_vertex(x1, y1, 0.5),
                         d = m.add_vertex(x0, y1, 0.5);
      m.add_triangle(a, b, c);
      m.add_triangle(a, c, d);
    }
  return k;
}

// the same nodes, node for node, and the same leaf lists (trees of any two
// memory spaces)
template <class A, class B>
void check_same_nodes(A const& a, B const& b) {
  auto const na = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, a.nodes());
  auto const nb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, b.nodes());
  REQUIRE(na.extent(0) == nb.extent(0));
  std::size_t differ = 0;
  for (std::size_t i = 0; i < na.extent(0); ++i) differ += !(na(i) == nb(i));
  CHECK(differ == 0);
  CHECK(to_host(a.leaf_triangles()) == to_host(b.leaf_triangles()));
}

} // namespace

TEST_CASE_TEMPLATE("SAH trees answer rays like brute force: triangle soups", Exec, KDFORGE_TEST_SPACES) {
  for (std::size_t n : {1, 2, 7, 64, 65, 300, 3000}) {
    CAPTURE(n);
    Mesh const m = soup(n, n > 1000 ? 0.06 : 0.2, 100 + n);
    check_mesh<Exec, float>(m, random_rays<float>(800, m, 200 + n));
    if (n <= 300) check_mesh<Exec, double>(m, random_rays<double>(800, m, 300 + n));
  }
}

TEST_CASE_TEMPLATE("SAH trees of closed meshes are watertight", Exec, KDFORGE_TEST_SPACES) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int mesh_kind = 0; mesh_kind < 2; ++mesh_kind) {
    Mesh const m = mesh_kind == 0 ? icosphere(3, 0.45) : cube(8);
    CAPTURE(mesh_kind);
    double const c[3] = {0.5, 0.5, 0.5};
    std::vector<Ray<float>> inside, outside;
    // from inside (the centre or random points near it) through every vertex
    // and through points of every shared edge
    for (std::size_t t = 0; t < m.triangle_count(); ++t)
      for (int k = 0; k < 3; ++k) {
        double const* a = &m.v[3 * std::size_t(m.f[3 * t + k])];
        double const* b = &m.v[3 * std::size_t(m.f[3 * t + (k + 1) % 3])];
        double const s = u(rng);
        double o[3], d[3], e[3];
        for (int q = 0; q < 3; ++q) o[q] = c[q] + 0.1 * (u(rng) - 0.5);
        for (int q = 0; q < 3; ++q) d[q] = a[q] - c[q];
        inside.push_back(make_ray<float>(c, d));
        for (int q = 0; q < 3; ++q) e[q] = a[q] + s * (b[q] - a[q]) - o[q];
        inside.push_back(make_ray<float>(o, e));
        for (int q = 0; q < 3; ++q) e[q] = 0.5 * (a[q] + b[q]) - c[q];
        inside.push_back(make_ray<float>(c, e));
        // from outside through the same edge point, and back out
        double far[3];
        for (int q = 0; q < 3; ++q) far[q] = c[q] + 3.0 * (a[q] + s * (b[q] - a[q]) - c[q]);
        for (int q = 0; q < 3; ++q) e[q] = c[q] - far[q];
        outside.push_back(make_ray<float>(far, e));
      }
    if (mesh_kind == 1) { // axis-parallel rays inside the cube along its grid lines and planes
      for (int i = 0; i <= 8; ++i)
        for (int j = 0; j <= 8; ++j)
          for (int axis = 0; axis < 3; ++axis) {
            double o[3], d[3] = {0, 0, 0};
            o[axis] = 0.5;
            o[(axis + 1) % 3] = i / 8.0;
            o[(axis + 2) % 3] = std::min(0.999, std::max(0.001, j / 8.0 + (j % 3 == 0 ? 0.0 : 0.03)));
            if (i == 0 || i == 8) o[(axis + 1) % 3] = i == 0 ? 0.001 : 0.999;
            d[axis] = (i + j) % 2 ? 1.0 : -1.0;
            inside.push_back(make_ray<float>(o, d));
          }
    }
    Exec exec;
    auto const mesh = upload<Exec, float>(m);
    auto const tree = build_sah_tree(exec, mesh.first, mesh.second);
    check_tree(tree, m);
    auto const hi = closest(exec, tree, inside);
    std::size_t escaped = 0;
    for (auto const& h : hi) escaped += h.triangle < 0;
    CHECK(escaped == 0);
    compare_hits(hi, inside, m);
    auto const ho = closest(exec, tree, outside);
    escaped = 0;
    for (auto const& h : ho) escaped += h.triangle < 0;
    CHECK(escaped == 0);
    compare_hits(ho, outside, m);
    auto const occ = any(exec, tree, inside);
    CHECK(std::count(occ.begin(), occ.end(), false) == 0);
    // grazing rays: in the cube's face planes and along its edges, from outside
    std::vector<Ray<float>> grazing = random_rays<float>(400, m, 9);
    for (int i = 0; i <= 8; ++i) {
      double o[3] = {-0.5, i / 8.0, 1.0}, d[3] = {1.0, 0.0, 0.0};
      grazing.push_back(make_ray<float>(o, d));
      double o2[3] = {-0.5, i / 8.0 + 0.01, 0.0}, d2[3] = {1.0, 0.001, 0.0};
      grazing.push_back(make_ray<float>(o2, d2));
    }
    compare_hits(closest(exec, tree, grazing), grazing, m);
  }
}

TEST_CASE_TEMPLATE("SAH trees on degenerate input", Exec, KDFORGE_TEST_SPACES) {
  SUBCASE("empty mesh: every ray misses") {
    Mesh m;
    auto const rays = random_rays<float>(50, m, 1);
    auto const tree = check_mesh<Exec, float>(m, rays);
    CHECK(tree.node_count() == 0);
    Mesh only_vertices;
    only_vertices.add_vertex(0, 0, 0);
    check_mesh<Exec, double>(only_vertices, random_rays<double>(20, only_vertices, 2));
  }
  SUBCASE("one triangle") {
    Mesh m;
    m.add_triangle(m.add_vertex(0.1, 0.1, 0.5), m.add_vertex(0.9, 0.2, 0.5), m.add_vertex(0.4, 0.9, 0.6));
    check_mesh<Exec, float>(m, random_rays<float>(400, m, 3));
    double o[3] = {0.4, 0.4, 0.0}, d[3] = {0.0, 0.0, 1.0};
    auto const h = closest(Exec{}, build_sah_tree(Exec{}, upload<Exec, float>(m).first, upload<Exec, float>(m).second),
                           std::vector<Ray<float>>{make_ray<float>(o, d)});
    CHECK(h[0].triangle == 0);
  }
  SUBCASE("a hit whose distance overflows the coordinate type is no hit") {
    // t = 0.5 / |d|: beyond the largest float for a subnormal direction
    Mesh m;
    m.add_triangle(m.add_vertex(0.1, 0.1, 0.5), m.add_vertex(0.9, 0.2, 0.5), m.add_vertex(0.4, 0.9, 0.5));
    auto const mesh = upload<Exec, float>(m);
    auto const tree = build_sah_tree(Exec{}, mesh.first, mesh.second);
    double o[3] = {0.4, 0.4, 0.0}, tiny[3] = {0.0, 0.0, 1e-39}, small[3] = {0.0, 0.0, 1e-37};
    std::vector<Ray<float>> const rays{make_ray<float>(o, tiny), make_ray<float>(o, small)};
    auto const h = closest(Exec{}, tree, rays);
    auto const a = any(Exec{}, tree, rays);
    CHECK(h[0].triangle == -1); // t = 5e38: inf in float
    CHECK(!a[0]);
    CHECK(h[1].triangle == 0); // t = 5e36: finite
    CHECK(h[1].t == doctest::Approx(5e36).epsilon(1e-6));
    CHECK(a[1]);
    check_mesh<Exec, float>(m, rays);
  }
  SUBCASE("a ray beside a triangle of subnormal corners, along an axis it does not move on, misses") {
    // x = 0 on the ray; the triangle's x runs from 2^-1066 to 0.5. The edge
    // functions' products of such corners underflow to zero, which the sign
    // tests alone would count as a hit at t = -0 on an edge.
    double const s = std::ldexp(1.0, -1066), z = 220 * std::ldexp(1.0, -1074);
    Mesh m;
    m.add_triangle(m.add_vertex(s, s, z), m.add_vertex(0.5, 0.5, 0.5), m.add_vertex(s, s, s));
    m.add_triangle(m.add_vertex(1.5, -0.5, -1.0), m.add_vertex(0.5, 0.5, 0.5), m.add_vertex(s, s, s));
    double o[3] = {0.0, 0.0, 0.0}, d[3] = {0.0, 1.0, -2.0};
    std::vector<Ray<double>> const rays{make_ray<double>(o, d, 0.0, 0.0), make_ray<double>(o, d)};
    auto const w = kernels::make_watertight_ray(rays[0]);
    double c[3][3] = {{s, s, z}, {0.5, 0.5, 0.5}, {s, s, s}};
    CHECK(!kernels::intersect_watertight(w, c[0], c[1], c[2], 0.0, 0.0).hit);
    auto const mesh = upload<Exec, double>(m);
    auto const tree = build_sah_tree(Exec{}, mesh.first, mesh.second);
    for (auto const& h : closest(Exec{}, tree, rays)) CHECK(h.triangle == -1);
    for (bool a : any(Exec{}, tree, rays)) CHECK(!a);
    check_mesh<Exec, double>(m, rays);
  }
  SUBCASE("a hit the sign tests report away from a triangle of corners near 1e26 is no hit") {
    // float corners from -5.7e26 to 8.7e8 in y: the sheared edge functions
    // keep no precision at unit scale, and the sign tests take the ray's
    // origin (2, -2, -2), 3 units beside the triangle's x extent [-2, -1],
    // for a hit at t = 0
    Mesh m;
    std::int32_t const a = m.add_vertex(-2.0, 0.5, double(0x1p-141f));
    std::int32_t const b = m.add_vertex(-2.0, double(-0x1.d7d7d6p+88f), -2.0);
    std::int32_t const e = m.add_vertex(-1.0, double(0x1.9c9dd6p+29f), 1.0);
    m.add_triangle(a, b, e);
    double o[3] = {2.0, -2.0, -2.0}, d[3] = {-1.5, -2.0, -2.0};
    std::vector<Ray<float>> const rays{make_ray<float>(o, d, 0.0, 0.0), make_ray<float>(o, d)};
    auto const w = kernels::make_watertight_ray(rays[0]);
    float c[3][3];
    for (int k = 0; k < 3; ++k)
      for (int j = 0; j < 3; ++j) c[k][j] = float(m.v[3 * std::size_t(m.f[std::size_t(k)]) + j]);
    CHECK(!kernels::intersect_watertight(w, c[0], c[1], c[2], 0.0f, 0.0f).hit);
    auto const mesh = upload<Exec, float>(m);
    auto const tree = build_sah_tree(Exec{}, mesh.first, mesh.second);
    for (auto const& h : closest(Exec{}, tree, rays)) CHECK(h.triangle == -1);
    check_mesh<Exec, float>(m, rays);
  }
  SUBCASE("a hit a unit of rounding before its cell's start still counts (a ray of scale 1e30)") {
    // The ray comes down y from 2e30 to geometry of unit size: every hit
    // lies at t = 1 within rounding. The root splits y at -1; the nearest
    // hit (triangle 3, below the plane) comes out at 1 - 2^-52, before the
    // plane's crossing at 1, while triangle 1 above it is hit at 1 - 2^-53.
    Mesh m;
    double const v[9][3] = {{0, 1, 1},   {-2, -1, -1},     {0.5, -1.5, 0},  {0.5, -2, 0.5}, {0.5, 0.5, 0.5},
                            {0.5, 0.5, -1}, {-2, -1.5, 1}, {0.5, 1, -1.5}, {-2, -2, 1}};
    for (auto const& p : v) m.add_vertex(p[0], p[1], p[2]);
    std::int32_t const f[6][3] = {{0, 0, 1}, {1, 0, 8}, {1, 1, 8}, {2, 1, 6}, {6, 4, 8}, {6, 6, 3}};
    for (auto const& t : f) m.add_triangle(t[0], t[1], t[2]);
    SahOptions o;
    o.small_node_size = 64;
    o.empty_space_ratio = 0.75;
    double const y = 0x1.93e5939a08ceap+99;
    double origin[3] = {-2.0, y, 0.0}, dir[3] = {0.0, -y, 0.0};
    std::vector<Ray<double>> const rays{make_ray<double>(origin, dir, 0.0, 2.8125)};
    auto const tree = check_mesh<Exec, double>(m, rays, o);
    auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
    CHECK(nodes(0).dim() == 1);
    CHECK(nodes(0).split == -1.0);
    CHECK(closest(Exec{}, tree, rays)[0].triangle == 3);
  }
  SUBCASE("all triangles identical") {
    Mesh m;
    for (int i = 0; i < 500; ++i)
      m.add_triangle(m.add_vertex(0.2, 0.2, 0.2), m.add_vertex(0.8, 0.3, 0.4), m.add_vertex(0.5, 0.9, 0.7));
    auto const tree = check_mesh<Exec, float>(m, random_rays<float>(300, m, 4));
    CHECK(tree.height() <= kernels::triangle_tree_max_height);
    Mesh shared; // one triangle's vertices used 500 times
    shared.add_vertex(0.2, 0.2, 0.2);
    shared.add_vertex(0.8, 0.3, 0.4);
    shared.add_vertex(0.5, 0.9, 0.7);
    for (int i = 0; i < 500; ++i) shared.add_triangle(0, 1, 2);
    check_mesh<Exec, double>(shared, random_rays<double>(300, shared, 5));
  }
  SUBCASE("zero-area triangles among others") {
    Mesh m = soup(400, 0.2, 6);
    std::mt19937_64 rng(8);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int i = 0; i < 200; ++i) {
      double const p[3] = {u(rng), u(rng), u(rng)}, q[3] = {u(rng), u(rng), u(rng)};
      std::int32_t const a = m.add_vertex(p[0], p[1], p[2]), b = m.add_vertex(q[0], q[1], q[2]);
      if (i % 3 == 0) m.add_triangle(a, a, a); // a point
      else if (i % 3 == 1) m.add_triangle(a, b, b); // a segment
      else { // three corners on a line
        std::int32_t const c = m.add_vertex(0.5 * (p[0] + q[0]), 0.5 * (p[1] + q[1]), 0.5 * (p[2] + q[2]));
        m.add_triangle(a, c, b);
      }
    }
    check_mesh<Exec, float>(m, random_rays<float>(800, m, 9));
    Mesh points; // nothing but zero-area triangles, at one point
    std::int32_t const a = points.add_vertex(0.5, 0.5, 0.5);
    for (int i = 0; i < 100; ++i) points.add_triangle(a, a, a);
    check_mesh<Exec, float>(points, random_rays<float>(50, points, 10));
  }
  SUBCASE("many large overlapping triangles") {
    Mesh const m = soup(1500, 1.6, 11);
    auto const tree = check_mesh<Exec, float>(m, random_rays<float>(300, m, 12));
    CHECK(tree.leaf_triangles().extent(0) < 64 * m.triangle_count());
  }
  SUBCASE("rays that run in a split plane and meet an edge lying in it") {
    // The scene box is [0, 1]^3 (two small triangles at opposite corners),
    // so the root splits x at 0.5, the large stage's median of its longest
    // (first) axis; a grid of triangles on z = 0.5 covers x in [0.5, 1]
    // only, its left edges in that plane. Rays in the plane x = 0.5 meet
    // those edges: only the right child lists their triangles.
    Mesh m;
    int const k = split_plane_grid(m);
    std::vector<Ray<float>> rays;
    for (int j = 0; j <= 4 * k; ++j) {
      double const y = 0.01 + 0.98 * double(j) / (4 * k);
      double o[3] = {0.5, y, 0.0}, d[3] = {0.0, 0.0, 1.0};
      rays.push_back(make_ray<float>(o, d));
      double o2[3] = {0.5, 0.8 * y, 1.0}, d2[3] = {0.0, 0.3, -1.0}; // meets z = 0.5 at y + 0.15 < 1
      rays.push_back(make_ray<float>(o2, d2));
    }
    auto const tree = check_mesh<Exec, float>(m, rays);
    auto const root = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
    CHECK(root(0).dim() == 0);
    CHECK(root(0).split == 0.5f);
    auto const hits = closest(Exec{}, tree, rays);
    std::size_t missed = 0;
    for (auto const& h : hits) missed += h.triangle < 0;
    CHECK(missed == 0);
  }
  SUBCASE("rays in a split plane: a nearer hit, or a tie, waits in the second child") {
    // As above, the root splits x at 0.5 and the grid on z = 0.5 lies in
    // the right child only. Two triangles at z = 0.9 cross x = 0.5, so both
    // children list them; a ray in the plane x = 0.5 along +z walks the
    // left child first and hits them at t = 0.9 there, before the end of
    // that child's interval, while the grid's hit at t = 0.5 waits in the
    // right one. A third triangle at z = 0.25, in the right child only,
    // ties at equal t with a crossing one of larger index.
    Mesh m;
    m.add_triangle(m.add_vertex(0.5, 0.0, 0.25), m.add_vertex(0.9, 0.0, 0.25), m.add_vertex(0.5, 0.2, 0.25));
    int const k = split_plane_grid(m);
    std::int32_t const p0 = m.add_vertex(0.3, 0.0, 0.9), p1 = m.add_vertex(0.7, 0.0, 0.9),
                       p2 = m.add_vertex(0.7, 1.0, 0.9), p3 = m.add_vertex(0.3, 1.0, 0.9);
    m.add_triangle(p0, p1, p2);
    m.add_triangle(p0, p2, p3);
    m.add_triangle( // crossing x = 0.5 at z = 0.25: the tie's partner, a larger index
        m.add_vertex(0.3, 0.0, 0.25), m.add_vertex(0.7, 0.0, 0.25), m.add_vertex(0.5, 0.2, 0.25));
    std::vector<Ray<float>> rays, ties;
    for (int j = 0; j <= 4 * k; ++j) {
      double const y = 0.01 + 0.98 * double(j) / (4 * k);
      double o[3] = {0.5, y, 0.3}, d[3] = {0.0, 0.0, 1.0};
      rays.push_back(make_ray<float>(o, d));
    }
    for (int j = 1; j < 8; ++j) {
      double o[3] = {0.5, 0.02 * j, 0.0}, d[3] = {0.0, 0.0, 1.0};
      ties.push_back(make_ray<float>(o, d));
    }
    std::vector<Ray<float>> all = rays;
    all.insert(all.end(), ties.begin(), ties.end());
    auto const tree = check_mesh<Exec, float>(m, all);
    auto const root = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
    CHECK(root(0).dim() == 0);
    CHECK(root(0).split == 0.5f);
    std::size_t nearer = 0, smaller = 0;
    for (auto const& h : closest(Exec{}, tree, rays)) nearer += h.triangle >= 0 && h.t == doctest::Approx(0.2);
    for (auto const& h : closest(Exec{}, tree, ties)) smaller += h.triangle == 0;
    CHECK(nearer == rays.size());
    CHECK(smaller == ties.size());
  }
  SUBCASE("a tube of long triangles along its longest axis") {
    // Every triangle crosses the median plane of z, the longest axis: the
    // large stage must split across x or y instead of keeping one leaf.
    Mesh m;
    int const segments = 200;
    for (int i = 0; i < segments; ++i) {
      double const a0 = 2 * M_PI * i / segments, a1 = 2 * M_PI * (i + 1) / segments;
      double const x0 = 0.5 + 0.05 * std::cos(a0), y0 = 0.5 + 0.05 * std::sin(a0);
      double const x1 = 0.5 + 0.05 * std::cos(a1), y1 = 0.5 + 0.05 * std::sin(a1);
      std::int32_t const p = m.add_vertex(x0, y0, 0), q = m.add_vertex(x1, y1, 0), r = m.add_vertex(x1, y1, 1),
                         t = m.add_vertex(x0, y0, 1);
      m.add_triangle(p, q, r);
      m.add_triangle(p, r, t);
    }
    auto const tree = check_mesh<Exec, float>(m, random_rays<float>(600, m, 16));
    auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, tree.nodes());
    std::int32_t largest = 0;
    for (std::size_t i = 0; i < nodes.extent(0); ++i)
      if (nodes(i).is_leaf()) largest = std::max(largest, nodes(i).count());
    CHECK(largest <= 64);
    CHECK(sah_cost(tree) < 0.2 * tree.costs().intersection * double(m.triangle_count()));
  }
  SUBCASE("a flat scene: every triangle in the plane z = 0.5") {
    Mesh m = soup(500, 0.2, 13);
    for (std::size_t i = 0; i < m.vertex_count(); ++i) m.v[3 * i + 2] = 0.5;
    std::vector<Ray<float>> rays = random_rays<float>(600, m, 14);
    std::mt19937_64 rng(15);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int i = 0; i < 100; ++i) { // in the plane itself: zero determinant, never a hit
      double o[3] = {u(rng), u(rng), 0.5}, d[3] = {u(rng) - 0.5, u(rng) - 0.5, 0.0};
      rays.push_back(make_ray<float>(o, d));
    }
    check_mesh<Exec, float>(m, rays);
  }
}

TEST_CASE_TEMPLATE("SAH trees: options and the SAH's effect", Exec, KDFORGE_TEST_SPACES) {
  Mesh const m = soup(2000, 0.05, 21);
  auto const rays = random_rays<float>(500, m, 22);
  SahOptions small;
  small.small_node_size = 8;
  small.max_depth = 12;
  auto const a = check_mesh<Exec, float>(m, rays, small);
  CHECK(a.height() <= 12);
  SahOptions costly; // traversal dearer than any test: one leaf beats any split
  costly.traversal_cost = 1e6;
  costly.intersection_cost = 1.0;
  Exec exec;
  auto const mesh = upload<Exec, float>(soup(50, 0.2, 23));
  auto const leaf = build_sah_tree(exec, mesh.first, mesh.second, costly);
  CHECK(leaf.node_count() == 1);
  CHECK(sah_cost(leaf) == doctest::Approx(50.0));
  // the default tree is far cheaper than one leaf of all triangles
  auto const tree = build_sah_tree(exec, upload<Exec, float>(m).first, upload<Exec, float>(m).second);
  CHECK(sah_cost(tree) < 0.05 * tree.costs().intersection * double(m.triangle_count()));
}

TEST_CASE_TEMPLATE("SAH trees from any mesh View; result Views reused", Exec, KDFORGE_TEST_SPACES) {
  using MS = typename Exec::memory_space;
  Exec exec;
  Mesh const m = soup(400, 0.2, 51);
  auto const ref = upload<Exec, double>(m);
  auto const a = build_sah_tree(exec, ref.first, ref.second);
  // column-major V x 3 and F x 3, sizes known at run time only
  Kokkos::View<double**, Kokkos::LayoutLeft, MS> v("v", m.vertex_count(), 3);
  Kokkos::View<std::int32_t**, Kokkos::LayoutLeft, MS> f("f", m.triangle_count(), 3);
  Kokkos::deep_copy(v, ref.first);
  Kokkos::deep_copy(f, ref.second);
  auto const b = build_sah_tree(exec, v, f);
  auto const c = build_sah_tree(exec, TriangleMesh<double, MS>{ref.first, ref.second});
  for (auto const* t : {&b, &c}) check_same_nodes(a, *t);
  auto const rays = test::to_device<Exec>(random_rays<double>(100, m, 52), "rays");
  Kokkos::View<Hit<double>*, MS> hits("hits", 100);
  Kokkos::View<bool*, MS> occluded("occluded", 100);
  auto const* hp = hits.data();
  auto const* op = occluded.data();
  intersect_closest(exec, a, rays, hits);
  intersect_any(exec, a, rays, occluded);
  CHECK(hits.data() == hp);
  CHECK(occluded.data() == op);
  Kokkos::View<Hit<double>*, MS> small("small", 3);
  intersect_closest(exec, a, rays, small);
  CHECK(small.extent(0) == 100);
  auto const hh = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, hits);
  auto const hs = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, small);
  auto const ho = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, occluded);
  for (std::size_t i = 0; i < 100; ++i) {
    CHECK(hh(i).triangle == hs(i).triangle);
    CHECK(ho(i) == (hh(i).triangle >= 0)); // a hit in [tmin, tmax] exists iff a closest one does
  }
}

TEST_CASE_TEMPLATE("SAH trees are identical on every backend", Exec, KDFORGE_TEST_SPACES) {
#if defined(KOKKOS_ENABLE_SERIAL)
  using Ref = Kokkos::Serial;
#else
  using Ref = Kokkos::DefaultHostExecutionSpace;
#endif
  for (int which = 0; which < 3; ++which) {
    Mesh const m = which == 0 ? soup(5000, 0.05, 31) : which == 1 ? icosphere(4, 0.4) : soup(800, 1.0, 32);
    auto const a = upload<Exec, float>(m);
    auto const b = upload<Ref, float>(m);
    auto const ta = build_sah_tree(Exec{}, a.first, a.second);
    auto const tb = build_sah_tree(Ref{}, b.first, b.second);
    check_same_nodes(ta, tb);
    CHECK(ta.height() == tb.height());
    CHECK(sah_cost(ta) == sah_cost(tb));
  }
}

// On GPUs a fixed set of threads takes the rays from a pool
// (kernels::RayPoolFunctor); on CPUs a thread walks each ray. Both run on
// every backend here: the same answers, bit for bit, and brute force's.
TEST_CASE_TEMPLATE("SAH ray queries: a pool of threads answers as a thread per ray", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  for (int which = 0; which < 2; ++which) {
    CAPTURE(which);
    Mesh const m = which == 0 ? soup(3000, 0.06, 51) : icosphere(3, 0.4);
    auto const mesh = upload<Exec, float>(m);
    auto const tree = build_sah_tree(exec, mesh.first, mesh.second);
    // random rays, and shadow rays from just off the mesh's corners to a
    // light: some end at the first leaf, others cross the scene
    std::vector<Ray<float>> all = random_rays<float>(1500, m, 60 + which);
    for (std::size_t v = 0; v < m.vertex_count(); v += 3) {
      double o[3], d[3];
      for (int k = 0; k < 3; ++k) {
        o[k] = m.v[3 * v + k] + 1e-3 * (k + 1);
        d[k] = (k == 1 ? 2.0 : 0.3) - o[k];
      }
      all.push_back(make_ray<float>(o, d, 0.0, 0.9999));
    }
    for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(5), all.size()}) {
      CAPTURE(count);
      std::vector<Ray<float>> const rays(all.begin(), all.begin() + std::ptrdiff_t(count));
      auto const r = test::to_device<Exec>(rays, "rays");
      // results sized beforehand and filled with opposite sentinels, so
      // that a ray the pool skips cannot pass for an answer
      using MS = typename Exec::memory_space;
      Hit<float> const sentinel{-2, 0.f, 0.f, 0.f};
      Kokkos::View<Hit<float>*, MS> ht("ht", count);
      Kokkos::deep_copy(ht, sentinel);
      Kokkos::View<bool*, MS> ot("ot", count);
      Kokkos::deep_copy(ot, false);
      detail::intersect_closest_impl(exec, tree, r, ht, false);
      detail::intersect_any_impl(exec, tree, r, ot, false);
      auto const b = to_host(ht);
      auto const ob = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, ot);
      REQUIRE(b.size() == count);
      // the backend's count of workers (most take one ray on a GPU here),
      // and 7 (each takes hundreds, resuming its walk for ray after ray)
      for (std::int64_t workers : {std::int64_t(0), std::int64_t(7)}) {
        CAPTURE(workers);
        Kokkos::View<Hit<float>*, MS> hp("hp", count);
        Kokkos::deep_copy(hp, sentinel);
        Kokkos::View<bool*, MS> op("op", count);
        Kokkos::deep_copy(op, true);
        detail::intersect_closest_impl(exec, tree, r, hp, true, workers);
        detail::intersect_any_impl(exec, tree, r, op, true, workers);
        auto const a = to_host(hp);
        auto const oa = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, op);
        REQUIRE(a.size() == count);
        std::size_t differ = 0, occluded = 0, wrong = 0;
        for (std::size_t i = 0; i < count; ++i) {
          differ += a[i].triangle != b[i].triangle || a[i].t != b[i].t || a[i].u != b[i].u || a[i].v != b[i].v ||
                    oa(i) != ob(i);
          occluded += oa(i);
          wrong += oa(i) != brute_any(m, rays[i]);
        }
        CHECK(differ == 0);
        CHECK(wrong == 0);
        compare_hits(a, rays, m);
        if (count == all.size()) { // both kinds of answer are met
          CHECK(occluded > 0);
          CHECK(occluded < count);
        }
      }
    }
  }
}

TEST_CASE_TEMPLATE("SAH trees: rays leaving a surface just above a large flat triangle hit it", Exec,
                   KDFORGE_TEST_SPACES) {
  // A floor 8 units wide at z = 1 and shadow rays from points 1e-2 to 1e-5
  // above it towards a light below it (the kitchen scene's shadow rays,
  // which start 1e-4 of the eye ray's length in front of the surface they
  // leave). The watertight t is a weighted mean of the corners' distances
  // along the ray's largest axis (about 2 units), exact only to their
  // rounding: 2.16692e-4 in float for an exact 2.16596e-4, 4e-4 off, while
  // the floor's flat box pins t to 8 units of rounding of t itself. A check
  // that refused a t outside that box missed these hits, which Embree takes.
  auto run = [](auto zero) {
    using T = decltype(zero);
    Mesh m;
    m.add_triangle(m.add_vertex(4.0, 1.8, 1.0), m.add_vertex(-4.0, 1.6, 1.0), m.add_vertex(-4.0, 1.8, 1.0));
    std::vector<Ray<T>> rays;
    // the first: one of the kitchen's rays that Embree hit and kdforge missed (float)
    double o0[3] = {-1.94697833, 1.77425051, 1.00064993}, d0[3] = {-3.05302167, 2.22574949, -3.00064993};
    rays.push_back(make_ray<T>(o0, d0, 0.0, 0.9999));
    double const light[3] = {-5.0, 4.0, -2.0};
    for (double h : {1e-2, 1e-3, 1e-4, 1e-5})
      for (int i = 0; i <= 24; ++i) {
        double o[3] = {-3.5 + 0.25 * i, 1.775, 1.0 + h}, d[3];
        for (int k = 0; k < 3; ++k) d[k] = light[k] - o[k];
        rays.push_back(make_ray<T>(o, d, 0.0, 0.9999));
      }
    auto const mesh = upload<Exec, T>(m);
    auto const tree = build_sah_tree(Exec{}, mesh.first, mesh.second);
    auto const hits = closest(Exec{}, tree, rays);
    auto const occ = any(Exec{}, tree, rays);
    std::size_t missed = 0, missed_brute = 0, off = 0;
    for (std::size_t i = 0; i < rays.size(); ++i) {
      // where the ray meets z = 1: exact for a flat triangle, up to one rounding
      double const t = (1.0 - double(rays[i].origin[2])) / double(rays[i].direction[2]);
      missed += hits[i].triangle != 0 || !occ[i];
      missed_brute += !brute_any(m, rays[i]);
      if (hits[i].triangle == 0) off += std::abs(double(hits[i].t) - t) > 1e-3 * t;
    }
    CHECK(missed == 0);
    CHECK(missed_brute == 0);
    CHECK(off == 0);
    check_mesh<Exec, T>(m, rays);
  };
  SUBCASE("float") { run(0.0f); }
  SUBCASE("double") { run(0.0); }
}

// On GPUs a warp chooses each small node's split, one team scans a level's
// per-node lists and a warp folds each large node's chunks
// (kernels/builders/sah); host backends use teams of one thread. Teams of
// CPU threads run the GPU's way here, so CPUs test it too: any team size,
// a power of two or not, must build the same tree.
TEST_CASE_TEMPLATE("SAH trees: choosing and scanning by teams of threads builds the same tree", Exec,
                   KDFORGE_TEST_SPACES) {
  using MS = typename Exec::memory_space;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible) {
    Exec exec;
    int const most = Kokkos::TeamPolicy<Exec>(exec, 1, 1).team_size_max(test::NoWork{}, Kokkos::ParallelForTag{});
    if (most < 2) {
      MESSAGE(std::string(Exec::name()) << " runs teams of one thread here: nothing to compare");
      return;
    }
    SahOptions few;
    few.small_node_size = 8;
    for (int which = 0; which < 4; ++which) {
      CAPTURE(which);
      Mesh const m = which == 0 ? soup(3000, 0.05, 41) : which == 1 ? icosphere(3, 0.4)
                   : which == 2 ? soup(40, 0.3, 42) : soup(600, 1.0, 43);
      SahOptions const o = which == 2 ? few : SahOptions{};
      auto const mesh = upload<Exec, float>(m);
      auto const ref = build_sah_tree(exec, mesh.first, mesh.second, o);
      for (int team = 2; team <= 4 && team <= most; ++team) {
        CAPTURE(team);
        auto const t = kernels::sah::build<float>(exec, mesh.first, mesh.second, o, team, team == 4 ? 3 : team, team);
        check_same_nodes(ref, t);
        CHECK(sah_cost(ref) == sah_cost(t));
      }
    }
  }
}

// kernels::sah::team_fold: thread t offers t + 1, so each team's fold is
// s (s + 1) / 2 for a team of s threads; a fold that dropped a thread's value
// (odd sizes) or added one twice would differ.
template <class Out>
struct FoldSum {
  Out out;
  template <class Member>
  KOKKOS_FUNCTION void operator()(Member const& team) const {
    auto* part = static_cast<std::int64_t*>(team.team_shmem().get_shmem(sizeof(std::int64_t) * team.team_size()));
    part[team.team_rank()] = team.team_rank() + 1;
    kernels::sah::team_fold(team, part, [](std::int64_t& a, std::int64_t const& b) { a += b; });
    if (team.team_rank() == 0) out(team.league_rank()) = part[0];
  }
};

TEST_CASE_TEMPLATE("SAH builder: a team's fold counts every thread once, at any team size", Exec, KDFORGE_TEST_SPACES) {
  using MS = typename Exec::memory_space;
  using Out = Kokkos::View<std::int64_t*, MS>;
  Exec exec;
  int const most = Kokkos::TeamPolicy<Exec>(exec, 1, 1).team_size_max(FoldSum<Out>{}, Kokkos::ParallelForTag{});
  for (int ts : {1, 2, 3, 5, 7, 31, 32, 33, 64, 100, 128}) {
    if (ts > most) break;
    CAPTURE(ts);
    Out out("fold", 5);
    Kokkos::parallel_for("fold", Kokkos::TeamPolicy<Exec>(exec, 5, ts).set_scratch_size(0, Kokkos::PerTeam(sizeof(std::int64_t) * ts)),
                         FoldSum<Out>{out});
    auto const h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    for (int i = 0; i < 5; ++i) CHECK(h(i) == std::int64_t(ts) * (ts + 1) / 2);
  }
}

TEST_CASE_TEMPLATE("SAH trees and ray queries refuse bad input with a clear error", Exec, KDFORGE_TEST_SPACES) {
  Exec exec;
  using MS = typename Exec::memory_space;
  Mesh m = soup(20, 0.2, 41);
  {
    Mesh bad = m;
    bad.v[3 * 7 + 1] = std::numeric_limits<double>::quiet_NaN();
    bad.v[3 * 9 + 0] = std::numeric_limits<double>::infinity();
    auto const b = upload<Exec, float>(bad);
    CHECK_THROWS_WITH_AS(build_sah_tree(exec, b.first, b.second), doctest::Contains("vertex 7"), Error);
  }
  {
    Mesh bad = m;
    bad.f[3 * 4 + 2] = std::int32_t(bad.vertex_count());
    bad.f[3 * 6 + 0] = -1;
    auto const b = upload<Exec, float>(bad);
    CHECK_THROWS_WITH_AS(build_sah_tree(exec, b.first, b.second), doctest::Contains("triangle 4"), Error);
    bad.f[3 * 4 + 2] = 0;
    auto const c = upload<Exec, double>(bad);
    CHECK_THROWS_WITH_AS(build_sah_tree(exec, c.first, c.second), doctest::Contains("triangle 6"), Error);
  }
  {
    Kokkos::View<float**, MS> two_columns("v", 10, 2);
    Kokkos::View<std::int32_t**, MS> tris("f", 3, 3);
    CHECK_THROWS_WITH_AS(build_sah_tree(exec, two_columns, tris), doctest::Contains("V x 3"), Error);
    Kokkos::View<float**, MS> v("v", 10, 3);
    Kokkos::View<std::int32_t**, MS> four("f", 3, 4);
    CHECK_THROWS_WITH_AS(build_sah_tree(exec, v, four), doctest::Contains("F x 3"), Error);
  }
  auto const good = upload<Exec, float>(m);
  SahOptions o;
  o.small_node_size = 65;
  CHECK_THROWS_WITH_AS(build_sah_tree(exec, good.first, good.second, o), doctest::Contains("small_node_size"), Error);
  o = SahOptions{};
  o.max_depth = 61;
  CHECK_THROWS_WITH_AS(build_sah_tree(exec, good.first, good.second, o), doctest::Contains("max_depth"), Error);
  o = SahOptions{};
  o.traversal_cost = -1;
  CHECK_THROWS_WITH_AS(build_sah_tree(exec, good.first, good.second, o), doctest::Contains("traversal_cost"), Error);
  auto const tree = build_sah_tree(exec, good.first, good.second);
  auto rays = random_rays<float>(20, m, 42);
  rays[5].direction[1] = std::numeric_limits<float>::quiet_NaN();
  rays[8].origin[0] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH_AS(closest(exec, tree, rays), doctest::Contains("ray 5"), Error);
  CHECK_THROWS_WITH_AS(any(exec, tree, rays), doctest::Contains("ray 5"), Error);
  rays[5] = rays[4];
  CHECK_THROWS_WITH_AS(closest(exec, tree, rays), doctest::Contains("ray 8"), Error);
  rays[8] = rays[4];
  for (auto& d : rays[11].direction) d = 0.0f;
  CHECK_THROWS_WITH_AS(closest(exec, tree, rays), doctest::Contains("ray 11"), Error);
  rays[11] = rays[4];
  rays[12].tmax = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(any(exec, tree, rays), doctest::Contains("ray 12"), Error);
  rays[12] = rays[4];
  rays[13].tmin = -1e-3f; // rays start at t >= 0
  CHECK_THROWS_WITH_AS(closest(exec, tree, rays), doctest::Contains("ray 13"), Error);
  CHECK_THROWS_WITH_AS(any(exec, tree, rays), doctest::Contains("negative tmin"), Error);
  rays[13].tmin = -0.0f; // -0 is 0
  CHECK_NOTHROW(closest(exec, tree, rays));
  rays[13] = rays[4];
  CHECK_NOTHROW(closest(exec, tree, rays));
}
