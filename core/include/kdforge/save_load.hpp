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

template <class Tree, class Exec>
Tree load_tree(TreeReader& r, Exec const&, TreeFileHeader const& h, Tree*,
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
  auto const corners = r.section<Kokkos::View<T* [3][3], MS>>(tag("CRNS"), "kdforge::sah::corners", f);
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
