#pragma once
// The photon k-d tree of Zhou, Hou, Wang & Guo 2008 (section 5.1): a tree
// over 3-D points built with the voxel volume heuristic (VVH), its nodes in
// preorder, each with its points as one contiguous range, its split plane,
// links to its children and its tight bounding box.
//
// It has the layout of Hu's bucket trees (bucket_tree.hpp: the same node
// record, boxes as rows, points as an N x 3 View in tree order), so the
// operations on bucket trees (kernels/query/bucket.hpp, walked by
// walks/box_stack.hpp: nearest box first) answer knn, closest_point,
// radius_count, radius_search and knn_approximate on it, with queries as
// an M x 3 View. What it adds: the query radius R its VVH costs assumed,
// and the nodes in preorder (the bucket builder leaves them breadth first).
#include <kdforge/kernels/trees/bucket_tree.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge {

template <class MemorySpace, class T, class Index = std::int32_t>
class VvhTree : public BucketTree<MemorySpace, T, Index> {
public:
  using base_type = BucketTree<MemorySpace, T, Index>;
  VvhTree() = default;
  VvhTree(base_type const& base, double query_radius) : base_type(base), m_query_radius(query_radius) {}
  /// R: the estimated query radius the VVH costs extended every cell by
  /// (VvhOptions::query_radius, or the builder's estimate).
  double query_radius() const { return m_query_radius; }
  /// The most points a leaf holds (small-node leaves hold at most
  /// VvhOptions::small_node_size; a node of copies of one point stays whole).
  std::int64_t max_leaf_size() const { return this->bucket_size(); }

private:
  double m_query_radius = 0.0;
};

} // namespace kdforge
