#pragma once
// Saving a built tree and loading it again, into any backend's memory:
//
//   kdforge::save(tree, "points.kdtree");                               // any tree kdforge builds
//   auto t = kdforge::load<decltype(tree)>(exec, "points.kdtree");      // the same type, any memory space:
//   auto u = kdforge::load<kdforge::LeftBalancedTree<Kokkos::HostSpace, float, 3>>(Kokkos::DefaultHostExecutionSpace{}, "points.kdtree");
//
// The loaded tree answers every query exactly as the saved one. The format
// (detail/tree_file.hpp; docs/architecture.md, "Saved trees") is versioned
// and checksummed; a file of another kind of tree, coordinate type,
// dimension, index width, byte order or format version, a truncated or a
// corrupt one is refused with a kdforge::Error that says which.
#include <kdforge/backends/host/huge_pages.hpp>
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/detail/boundary.hpp>
#include <kdforge/detail/tree_file.hpp>
#include <kdforge/kernels/query/walks/box_stack.hpp>
#include <kdforge/kernels/query/walks/ray_stack.hpp>
#include <kdforge/kernels/trees/bucket_tree.hpp>
#include <kdforge/kernels/trees/left_balanced_tree.hpp>
#include <kdforge/kernels/trees/median_tree.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>
#include <kdforge/kernels/trees/packed_node.hpp>
#include <kdforge/kernels/trees/triangle_tree.hpp>
#include <kdforge/kernels/trees/vvh_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

namespace kdforge {

namespace detail {

template <class T>
std::uint64_t bits_of(T v) {
  static_assert(sizeof(T) == 8, "kdforge: saved scalars are 8 bytes");
  std::uint64_t u;
  std::memcpy(&u, &v, 8);
  return u;
}
template <class T>
T from_bits(std::uint64_t u) {
  T v;
  std::memcpy(&v, &u, 8);
  return v;
}

template <class T, int D>
std::vector<T> box_values(Box<T, D> const& b) {
  std::vector<T> v(2 * D);
  for (int d = 0; d < D; ++d) {
    v[std::size_t(d)] = b.lo[d];
    v[std::size_t(D + d)] = b.hi[d];
  }
  return v;
}
template <class T, int D, class HV>
Box<T, D> box_from(HV const& v) {
  Box<T, D> b;
  for (int d = 0; d < D; ++d) {
    b.lo[d] = v(d);
    b.hi[d] = v(D + d);
  }
  return b;
}

template <class T, int D, class Index, class PV, class IV, class NV>
struct PackNodes {
  PV points;
  IV indices;
  NV nodes;
  KOKKOS_FUNCTION void operator()(std::int64_t s) const { nodes(s) = kernels::pack_node(points(s), indices(s)); }
};

template <class DV>
struct MaxDim {
  DV dims;
  KOKKOS_FUNCTION void operator()(std::int64_t s, int& m) const { m = int(dims(s)) > m ? int(dims(s)) : m; }
};

template <class IV>
struct IndicesOutside {
  IV indices;
  std::int64_t bound;
  KOKKOS_FUNCTION void operator()(std::int64_t s, std::int64_t& c) const {
    c += std::int64_t(indices(s)) < 0 || std::int64_t(indices(s)) >= bound;
  }
};

/// The indices a tree returns name the points of the array it was built
/// from: each lies in [0, bound), bound being the points kept plus those
/// the build dropped. Queries hand them to the caller unread, so a file
/// that breaks this would make the caller index out of its own array.
template <class Reader, class Exec, class IV>
void check_indices(Reader const& r, Exec const& exec, IV const& indices, std::uint64_t bound) {
  std::int64_t outside = 0;
  Kokkos::parallel_reduce("kdforge::load::check_indices",
                          Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, 0, std::int64_t(indices.extent(0))),
                          IndicesOutside<IV>{indices, std::int64_t(bound)}, outside);
  if (outside > 0)
    r.fail("corrupt: " + std::to_string(outside) + " point indices outside [0, " + std::to_string(bound) + ")");
}

using HostU64 = Kokkos::View<std::uint64_t*, Kokkos::HostSpace>;

template <class Tree>
struct TreeTraits; // the kind, widths and name of each tree type

template <class MS, class T, int D, class Index>
struct TreeTraits<LeftBalancedTree<MS, T, D, Index>> {
  static constexpr TreeKind kind = TreeKind::left_balanced;
  static constexpr int dimension = D;
  static constexpr std::size_t index_bytes = sizeof(Index);
  static constexpr char const* name = "LeftBalancedTree";
};
template <class MS, class T, int D, class Index>
struct TreeTraits<MedianTree<MS, T, D, Index>> {
  static constexpr TreeKind kind = TreeKind::median;
  static constexpr int dimension = D;
  static constexpr std::size_t index_bytes = sizeof(Index);
  static constexpr char const* name = "MedianTree";
};
template <class MS, class T, class Index>
struct TreeTraits<BucketTree<MS, T, Index>> {
  static constexpr TreeKind kind = TreeKind::bucket;
  static constexpr int dimension = 0; // run-time
  static constexpr std::size_t index_bytes = sizeof(Index);
  static constexpr char const* name = "BucketTree";
};
template <class MS, class T, class Index>
struct TreeTraits<VvhTree<MS, T, Index>> {
  static constexpr TreeKind kind = TreeKind::vvh;
  static constexpr int dimension = 3;
  static constexpr std::size_t index_bytes = sizeof(Index);
  static constexpr char const* name = "VvhTree";
};
template <class MS, class T>
struct TreeTraits<TriangleTree<MS, T>> {
  static constexpr TreeKind kind = TreeKind::triangle;
  static constexpr int dimension = 3;
  static constexpr std::size_t index_bytes = sizeof(std::int32_t);
  static constexpr char const* name = "TriangleTree";
};

template <class Tree>
TreeFileHeader header_of(Tree const& tree, std::int32_t dimension) {
  TreeFileHeader h{};
  h.kind = std::uint32_t(TreeTraits<Tree>::kind);
  h.coordinate_bytes = std::uint32_t(sizeof(typename Tree::coordinate_type));
  h.dimension = dimension;
  h.index_bytes = std::uint32_t(TreeTraits<Tree>::index_bytes);
  h.size = std::uint64_t(tree.size());
  h.nodes = std::uint64_t(tree.node_count());
  return h;
}

// --- level-order trees --------------------------------------------------

template <class MS, class T, int D, class Index>
void save_tree(TreeWriter& w, LeftBalancedTree<MS, T, D, Index> const& tree) {
  auto const& boxes = tree.node_boxes();
  w.section(tag("META"), std::vector<std::uint64_t>{std::uint64_t(tree.split_policy()), std::uint64_t(tree.dropped_count()),
                                                    bits_of(tree.box_fill()), std::uint64_t(boxes.count),
                                                    std::uint64_t(tree.split_dims().extent(0))});
  w.section(tag("BNDS"), box_values(tree.bounds()));
  w.section(tag("PNTS"), tree.points());
  w.section(tag("INDX"), tree.original_indices());
  w.section(tag("DIMS"), tree.split_dims());
  w.section(tag("BOXS"), boxes.records);
  w.finish(header_of(tree, D));
}

template <class MS, class T, int D, class Index>
void save_tree(TreeWriter& w, MedianTree<MS, T, D, Index> const& tree) {
  auto const& boxes = tree.node_boxes();
  w.section(tag("META"), std::vector<std::uint64_t>{std::uint64_t(tree.dropped_count()), bits_of(tree.box_fill()),
                                                    std::uint64_t(boxes.count)});
  w.section(tag("BNDS"), box_values(tree.bounds()));
  w.section(tag("PNTS"), tree.points());
  w.section(tag("INDX"), tree.original_indices());
  w.section(tag("BOXS"), boxes.records);
  w.finish(header_of(tree, D));
}

template <class Tree, class Exec>
Tree load_tree(TreeReader& r, Exec const& exec, TreeFileHeader const& h, Tree*,
               std::enable_if_t<TreeTraits<Tree>::kind == TreeKind::left_balanced ||
                                    TreeTraits<Tree>::kind == TreeKind::median,
                                int> = 0) {
  using MS = typename Tree::memory_space;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  constexpr int D = Tree::dimension;
  constexpr bool left_balanced = TreeTraits<Tree>::kind == TreeKind::left_balanced;
  std::uint64_t const n = h.size;
  if (n >= std::uint64_t(std::numeric_limits<Index>::max())) r.fail("corrupt header (" + std::to_string(n) + " points)");
  auto const meta = r.section<HostU64>(tag("META"), "kdforge::load::meta", left_balanced ? 5 : 3);
  auto const bounds = r.section<Kokkos::View<T*, Kokkos::HostSpace>>(tag("BNDS"), "kdforge::load::bounds", 2 * D);
  auto const points = r.section<Kokkos::View<Point<T, D>*, MS>>(tag("PNTS"), "kdforge::tree::points", n);
  auto const indices = r.section<Kokkos::View<Index*, MS>>(tag("INDX"), "kdforge::tree::indices", n);
  std::int64_t const dropped = std::int64_t(meta(left_balanced ? 1 : 0));
  if (meta(left_balanced ? 1 : 0) >= std::uint64_t(std::numeric_limits<Index>::max()) - n)
    r.fail("corrupt: " + std::to_string(meta(left_balanced ? 1 : 0)) + " dropped points");
  check_indices(r, exec, indices, n + std::uint64_t(dropped));
  double const fill = from_bits<double>(meta(left_balanced ? 2 : 1));
  std::uint64_t const box_count = meta(left_balanced ? 3 : 2);
  if (box_count != 0 && box_count != h.nodes / 2)
    r.fail("corrupt: " + std::to_string(box_count) + " node boxes for " + std::to_string(h.nodes) + " nodes");
  Tree tree;
  if constexpr (left_balanced) {
    auto const split = SplitPolicy(meta(0));
    if (split != SplitPolicy::round_robin && split != SplitPolicy::widest_dimension)
      r.fail("corrupt: split policy " + std::to_string(meta(0)));
    std::uint64_t const dims_count = split == SplitPolicy::widest_dimension ? n : 0;
    if (meta(4) != dims_count) r.fail("corrupt: " + std::to_string(meta(4)) + " split dimensions for " + std::to_string(n) + " points");
    auto const dims = r.section<Kokkos::View<std::uint8_t*, MS>>(tag("DIMS"), "kdforge::tree::split_dims", dims_count);
    if (dims_count > 0) {
      int largest = 0;
      Kokkos::parallel_reduce("kdforge::load::check_dims", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, 0, std::int64_t(n)),
                              MaxDim<decltype(dims)>{dims}, Kokkos::Max<int>(largest));
      if (largest >= D) r.fail("corrupt: split dimension " + std::to_string(largest) + " of " + std::to_string(D));
    }
    auto const nodes = backend::allocate<Kokkos::View<typename Tree::node_type*, MS>>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::tree::nodes"), n);
    advise_huge_pages(nodes);
    Kokkos::parallel_for("kdforge::load::nodes", Kokkos::RangePolicy<Exec, Kokkos::IndexType<std::int64_t>>(exec, 0, std::int64_t(n)),
                         PackNodes<T, D, Index, decltype(points), decltype(indices), decltype(nodes)>{points, indices, nodes});
    tree = Tree(points, indices, nodes, dims, box_from<T, D>(bounds), split, dropped);
  } else {
    tree = Tree(points, indices, box_from<T, D>(bounds), dropped);
    if (std::uint64_t(tree.node_count()) != h.nodes) r.fail("corrupt header (" + std::to_string(h.nodes) + " nodes)");
  }
  using Records = Kokkos::View<kernels::NodeRecord<T, D, Index>*, MS>;
  auto const records = r.section<Records>(tag("BOXS"), "kdforge::tree::node_boxes", box_count);
  kernels::NodeBoxes<MS, T, D, Index> boxes;
  if (box_count > 0) {
    boxes.records = records;
    boxes.count = Index(box_count);
  }
  tree.set_node_boxes(boxes, fill);
  return tree;
}

// --- trees with linked nodes and boxes ----------------------------------

template <class MS, class T, class Index>
void save_bucket_sections(TreeWriter& w, BucketTree<MS, T, Index> const& tree, std::vector<std::uint64_t> meta) {
  meta.insert(meta.begin(), {std::uint64_t(tree.height()), std::uint64_t(tree.bucket_size()),
                             std::uint64_t(tree.build_peak_bytes())});
  w.section(tag("META"), meta);
  w.section(tag("PNTS"), tree.points());
  w.section(tag("INDX"), tree.original_indices());
  w.section(tag("NODE"), tree.nodes());
  w.section(tag("BOXS"), tree.boxes());
}

template <class MS, class T, class Index>
void save_tree(TreeWriter& w, BucketTree<MS, T, Index> const& tree) {
  save_bucket_sections(w, tree, {});
  w.finish(header_of(tree, tree.dim()));
}

template <class MS, class T, class Index>
void save_tree(TreeWriter& w, VvhTree<MS, T, Index> const& tree) {
  save_bucket_sections(w, tree, {bits_of(tree.query_radius())});
  w.finish(header_of(tree, 3));
}

// The links of trees with linked nodes are checked on the host before any
// walk follows them: the checksums catch damage, not a file written to
// pass them, and a link out of range, a cycle or a tree deeper than the
// walks' fixed stacks would make a query read or write out of bounds or
// never end.

/// A bucket tree's nodes (as the builder numbers them, bfs_buckets/build.hpp):
/// every child after its parent and inside the node list, every node but
/// the root the child of exactly one, point ranges within the points,
/// split dimensions within the dimension, and no deeper than the walk's
/// stack (kernels::box_stack_capacity).
template <class Nodes>
void check_bucket_links(TreeReader const& r, Nodes const& device_nodes, std::uint64_t n, std::uint64_t dim) {
  auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, device_nodes);
  std::int64_t const count = std::int64_t(nodes.extent(0));
  std::vector<int> depth(std::size_t(count), -1);
  if (count > 0) depth[0] = 0;
  auto const bad = [&](std::int64_t i, std::string const& what) {
    r.fail("corrupt: node " + std::to_string(i) + " of " + std::to_string(count) + " " + what);
  };
  for (std::int64_t i = 0; i < count; ++i) {
    auto const nd = nodes(i);
    if (depth[std::size_t(i)] < 0) bad(i, "is no node's child");
    if (nd.begin < 0 || nd.begin > nd.end || std::uint64_t(nd.end) > n)
      bad(i, "holds points [" + std::to_string(nd.begin) + ", " + std::to_string(nd.end) + ") of " + std::to_string(n));
    if (nd.left < 0) {
      if (nd.left != -1) bad(i, "has child " + std::to_string(nd.left));
      continue;
    }
    if (nd.split_dim < 0 || std::uint64_t(nd.split_dim) >= dim)
      bad(i, "splits dimension " + std::to_string(nd.split_dim) + " of " + std::to_string(dim));
    decltype(nd.left) const children[2] = {nd.left, nd.right};
    for (auto const c : children) {
      if (c <= i || c >= count) bad(i, "has child " + std::to_string(c));
      if (depth[std::size_t(c)] >= 0) bad(std::int64_t(c), "is the child of two nodes");
      depth[std::size_t(c)] = depth[std::size_t(i)] + 1;
      if (depth[std::size_t(c)] >= kernels::box_stack_capacity - 1)
        bad(std::int64_t(c), "lies " + std::to_string(depth[std::size_t(c)]) + " levels deep; the walks hold " +
                                 std::to_string(kernels::box_stack_capacity - 2));
    }
  }
}

/// A triangle tree's nodes (depth first, as the builder writes them): each
/// inner node's left child the next node and its right child the node after
/// the left sub-tree, so that a walk from the root meets every node once and
/// in order; leaf lists within the leaf entries, leaf entries within the
/// triangles, and no deeper than kernels::triangle_tree_max_height.
template <class Nodes, class Leaves>
void check_triangle_links(TreeReader const& r, Nodes const& device_nodes, Leaves const& device_leaves,
                          std::uint64_t triangles) {
  auto const nodes = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, device_nodes);
  auto const leaves = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, device_leaves);
  std::int64_t const count = std::int64_t(nodes.extent(0)), entries = std::int64_t(leaves.extent(0));
  auto const bad = [&](std::int64_t i, std::string const& what) {
    r.fail("corrupt: node " + std::to_string(i) + " of " + std::to_string(count) + " " + what);
  };
  for (std::int64_t k = 0; k < entries; ++k)
    if (leaves(k) < 0 || std::uint64_t(leaves(k)) >= triangles)
      r.fail("corrupt: leaf entry " + std::to_string(k) + " names triangle " + std::to_string(leaves(k)) + " of " +
             std::to_string(triangles));
  if (count == 0) return;
  std::vector<std::pair<std::int64_t, int>> stack{{0, 0}}; // node, depth
  std::int64_t next = 0;                                    // the node a depth-first walk meets next
  while (!stack.empty()) {
    auto const [i, d] = stack.back();
    stack.pop_back();
    if (i != next)
      r.fail("corrupt: node " + std::to_string(i) + " of " + std::to_string(count) + " is reached where node " +
             std::to_string(next) + " is due (the links are not depth first)");
    ++next;
    if (d > kernels::triangle_tree_max_height)
      bad(i, "lies " + std::to_string(d) + " levels deep; the walks hold " + std::to_string(kernels::triangle_tree_max_height));
    auto const nd = nodes(i);
    if (nd.is_leaf()) {
      if (nd.a < 0 || nd.b < 0 || std::int64_t(nd.a) + nd.b > entries)
        bad(i, "lists leaf entries [" + std::to_string(nd.a) + ", " + std::to_string(std::int64_t(nd.a) + nd.b) + ") of " +
                   std::to_string(entries));
      continue;
    }
    if (nd.kind < 0 || nd.kind > 2) bad(i, "is of kind " + std::to_string(nd.kind));
    if (nd.a <= i + 1 || nd.a >= count || i + 1 >= count) bad(i, "has right child " + std::to_string(nd.a));
    stack.push_back({std::int64_t(nd.a), d + 1});
    stack.push_back({i + 1, d + 1});
  }
  if (next != count) bad(next, "is in no sub-tree of the root");
}

template <class Tree, class Exec>
Tree load_tree(TreeReader& r, Exec const& exec, TreeFileHeader const& h, Tree*,
               std::enable_if_t<TreeTraits<Tree>::kind == TreeKind::bucket || TreeTraits<Tree>::kind == TreeKind::vvh,
                                int> = 0) {
  using MS = typename Tree::memory_space;
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using Base = BucketTree<MS, T, Index>;
  constexpr bool vvh = TreeTraits<Tree>::kind == TreeKind::vvh;
  std::uint64_t const n = h.size, nodes = h.nodes;
  if (n >= std::uint64_t(std::numeric_limits<Index>::max()) || nodes >= std::uint64_t(std::numeric_limits<Index>::max()) ||
      h.dimension < 1 || (n > 0 && nodes == 0))
    r.fail("corrupt header (" + std::to_string(n) + " points, " + std::to_string(nodes) + " nodes, dimension " +
           std::to_string(h.dimension) + ")");
  std::uint64_t const dim = std::uint64_t(h.dimension);
  auto const meta = r.section<HostU64>(tag("META"), "kdforge::load::meta", vvh ? 4 : 3);
  using Rows = Kokkos::View<T**, Kokkos::LayoutRight, MS>;
  auto const points = r.section<Rows>(tag("PNTS"), "kdforge::bucket_tree::points", n, dim);
  auto const indices = r.section<Kokkos::View<Index*, MS>>(tag("INDX"), "kdforge::bucket_tree::indices", n);
  auto const node_view =
      r.section<Kokkos::View<typename Base::node_type*, MS>>(tag("NODE"), "kdforge::bucket_tree::nodes", nodes);
  auto const boxes = r.section<Rows>(tag("BOXS"), "kdforge::bucket_tree::boxes", nodes, 2 * dim);
  if (meta(0) > 4096) r.fail("corrupt: height " + std::to_string(meta(0)));
  check_bucket_links(r, node_view, n, dim);
  check_indices(r, exec, indices, n);
  Base base(points, indices, node_view, boxes, int(meta(0)), std::int64_t(meta(1)), std::int64_t(meta(2)));
  if constexpr (vvh) return Tree(base, from_bits<double>(meta(3)));
  else return base;
}

// --- triangle trees -------------------------------------------------------

template <class MS, class T>
void save_tree(TreeWriter& w, TriangleTree<MS, T> const& tree) {
  auto const costs = tree.costs();
  w.section(tag("META"), std::vector<std::uint64_t>{std::uint64_t(tree.height()), bits_of(costs.traversal),
                                                    bits_of(costs.intersection),
                                                    std::uint64_t(tree.leaf_triangles().extent(0))});
  w.section(tag("BNDS"), box_values(tree.bounds()));
  w.section(tag("NODE"), tree.nodes());
  w.section(tag("LEAF"), tree.leaf_triangles());
  w.section(tag("CRNS"), tree.corners());
  w.finish(header_of(tree, 3));
}

template <class Tree, class Exec>
Tree load_tree(TreeReader& r, Exec const&, TreeFileHeader const& h, Tree*,
               std::enable_if_t<TreeTraits<Tree>::kind == TreeKind::triangle, int> = 0) {
  using MS = typename Tree::memory_space;
  using T = typename Tree::coordinate_type;
  std::uint64_t const f = h.size, nodes = h.nodes;
  auto const limit = std::uint64_t(std::numeric_limits<std::int32_t>::max());
  if (f > limit || nodes > limit) r.fail("corrupt header (" + std::to_string(f) + " triangles, " + std::to_string(nodes) + " nodes)");
  auto const meta = r.section<HostU64>(tag("META"), "kdforge::load::meta", 4);
  if (meta(0) > std::uint64_t(kernels::triangle_tree_max_height) || meta(3) > limit)
    r.fail("corrupt: height " + std::to_string(meta(0)) + ", " + std::to_string(meta(3)) + " leaf entries");
  auto const bounds = r.section<Kokkos::View<T*, Kokkos::HostSpace>>(tag("BNDS"), "kdforge::load::bounds", 6);
  auto const node_view =
      r.section<Kokkos::View<typename Tree::node_type*, MS>>(tag("NODE"), "kdforge::sah::nodes", nodes);
  auto const leaves = r.section<Kokkos::View<std::int32_t*, MS>>(tag("LEAF"), "kdforge::sah::leaf_triangles", meta(3));
  auto const corners = r.section<typename Tree::corner_view>(tag("CRNS"), "kdforge::sah::corners", f);
  check_triangle_links(r, node_view, leaves, f);
  SahCosts costs;
  costs.traversal = from_bits<double>(meta(1));
  costs.intersection = from_bits<double>(meta(2));
  return Tree(node_view, leaves, corners, box_from<T, 3>(bounds), int(meta(0)), costs);
}

} // namespace detail

/// Writes `tree` to `out` in kdforge's tree format (detail/tree_file.hpp):
/// the arrays are copied from the tree's memory space through a host
/// buffer of at most 64 MiB. `out` must be binary and seekable (files and
/// string streams are: the header, written last, goes before the payload).
/// Errors (kdforge::Error): a stream that fails.
template <class Tree>
void save(Tree const& tree, std::ostream& out) {
  using MS = typename Tree::memory_space;
  detail::api_call<MS>("save", [&] {
    detail::TreeWriter w(out, "a stream");
    detail::save_tree(w, tree);
  });
}

/// Writes `tree` to the file `path` (created or replaced; written under a
/// temporary name and renamed, so a failure leaves no half-written file
/// at `path`). Errors (kdforge::Error): a path that cannot be written.
template <class Tree>
void save(Tree const& tree, std::string const& path) {
  using MS = typename Tree::memory_space;
  std::string const temporary = path + ".part";
  detail::api_call<MS>("save", [&] {
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      KDFORGE_REQUIRE(bool(out), "save", "cannot write ", temporary, ": ", std::strerror(errno));
      try {
        detail::TreeWriter w(out, path);
        detail::save_tree(w, tree);
      } catch (...) {
        out.close();
        std::remove(temporary.c_str());
        throw;
      }
    }
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
      int const err = errno;
      std::remove(temporary.c_str());
      detail::fail("save", "cannot rename ", temporary, " to ", path, ": ", std::strerror(err));
    }
  });
}

/// Reads a tree of type Tree (the type save() was given, with any memory
/// space: LeftBalancedTree, MedianTree, BucketTree, VvhTree, TriangleTree)
/// from `in`, into the memory space of `exec`, which must be Tree's. The
/// loaded tree answers every query as the saved one did. Errors
/// (kdforge::Error, naming what is wrong): not a tree file, another kind of
/// tree, coordinate type, dimension or index width than Tree's, a file of
/// another byte order or format version, a truncated or a corrupt file
/// (checksums); kdforge::OutOfMemoryError when the tree does not fit.
template <class TreeType, class Exec>
std::remove_cv_t<TreeType> load(Exec const& exec, std::istream& in, std::string const& what = "a stream") {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::load: the first argument must be a Kokkos execution space instance");
  using Tree = std::remove_cv_t<TreeType>;
  using MS = typename Tree::memory_space;
  static_assert(std::is_same<MS, typename Exec::memory_space>::value,
                "kdforge::load: Tree's memory space must be the execution space's (load<Tree with that space>)");
  using Traits = detail::TreeTraits<Tree>;
  return detail::api_call<MS>("load", [&] {
    detail::TreeReader r(in, what);
    auto const h = r.header(Traits::kind, sizeof(typename Tree::coordinate_type), Traits::dimension, Traits::index_bytes,
                            Traits::name);
    Tree tree = detail::load_tree<Tree>(r, exec, h, static_cast<Tree*>(nullptr));
    r.finish();
    exec.fence();
    return tree;
  });
}

/// Reads a tree of type Tree from the file `path` (see above).
template <class TreeType, class Exec>
std::remove_cv_t<TreeType> load(Exec const& exec, std::string const& path) {
  using Tree = std::remove_cv_t<TreeType>;
  std::ifstream in(path, std::ios::binary);
  KDFORGE_REQUIRE(bool(in), "load", "cannot read ", path, ": ", std::strerror(errno));
  Tree tree = load<Tree>(exec, in, path);
  KDFORGE_REQUIRE(in.peek() == std::ifstream::traits_type::eof(), "load", path,
                  ": bytes follow the tree (a damaged or concatenated file?)");
  return tree;
}

} // namespace kdforge
