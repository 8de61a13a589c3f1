#pragma once
// Invariants of built trees, checked on the host: every point once, every
// node's left sub-tree <= its split value <= its right sub-tree; and the
// split-and-sort tree the paper's method must give, built directly.
#include "test_helpers.hpp"

#include <kdforge/kdforge.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace kdforge::test {

template <class Tree>
struct HostTree {
  std::vector<typename Tree::point_type> pts;
  std::vector<typename Tree::index_type> idx;
  std::vector<std::uint8_t> dims;
};
template <class Tree>
HostTree<Tree> host_copy(Tree const& t) {
  return {to_host(t.points()), to_host(t.original_indices()), to_host(t.split_dims())};
}

// Every node's left sub-tree <= its split value <= its right sub-tree, in its
// split dimension; every input point appears exactly once.
template <class Tree, class T, int D>
void check_tree(Tree const& tree, std::vector<Point<T, D>> const& input) {
  auto h = host_copy(tree);
  std::int64_t const n = std::int64_t(h.pts.size());
  REQUIRE(n == std::int64_t(input.size()) - tree.dropped_count());
  std::vector<int> seen(input.size(), 0);
  for (std::int64_t s = 0; s < n; ++s) {
    REQUIRE(h.idx[s] >= 0);
    REQUIRE(std::size_t(h.idx[s]) < input.size());
    ++seen[h.idx[s]];
    for (int d = 0; d < D; ++d) REQUIRE(h.pts[s][d] == input[h.idx[s]][d]);
  }
  for (auto c : seen) REQUIRE(c <= 1);
  for (std::int64_t s = 0; s < n; ++s) {
    int const dim = tree.split_policy() == SplitPolicy::round_robin ? lb::level(s) % D : h.dims[s];
    T const split = h.pts[s][dim];
    // walk both sub-trees
    std::vector<std::int64_t> stack;
    if (2 * s + 1 < n) stack.push_back(2 * s + 1);
    while (!stack.empty()) {
      auto c = stack.back();
      stack.pop_back();
      REQUIRE(h.pts[c][dim] <= split);
      if (2 * c + 1 < n) stack.push_back(2 * c + 1);
      if (2 * c + 2 < n) stack.push_back(2 * c + 2);
    }
    if (2 * s + 2 < n) stack.push_back(2 * s + 2);
    while (!stack.empty()) {
      auto c = stack.back();
      stack.pop_back();
      REQUIRE(h.pts[c][dim] >= split);
      if (2 * c + 1 < n) stack.push_back(2 * c + 1);
      if (2 * c + 2 < n) stack.push_back(2 * c + 2);
    }
  }
}

// The tree the paper's method must give, built directly: recursive stable
// sorts of index ranges on the host, with the median rule of the appendix.
template <class T, int D>
void reference_build(std::vector<Point<T, D>> const& pts, std::vector<std::int64_t>& idx, std::int64_t lo,
                     std::int64_t hi, int l, std::int64_t c) {
  std::int64_t const n = std::int64_t(pts.size());
  int const L = split_sort::internal_levels(n);
  REQUIRE(lo == split_sort::chunk_begin(n, l, c));
  REQUIRE(hi == split_sort::chunk_end(n, l, c));
  if (l == L) {
    REQUIRE(hi - lo <= 1);
    return;
  }
  int const d = l % D;
  std::stable_sort(idx.begin() + lo, idx.begin() + hi, [&](std::int64_t a, std::int64_t b) {
    return kernels::ordered_bits(pts[a][d]) < kernels::ordered_bits(pts[b][d]);
  });
  std::int64_t const m = split_sort::median(n, l, c);
  REQUIRE(lo <= m);
  REQUIRE(m < hi);
  // a balanced median: the two sides differ by at most one element
  CHECK(std::abs((m - lo) - (hi - m - 1)) <= 1);
  reference_build(pts, idx, lo, m, l + 1, 2 * c);
  reference_build(pts, idx, m + 1, hi, l + 1, 2 * c + 1);
}

template <class T, int D>
std::vector<std::int64_t> reference_order(std::vector<Point<T, D>> const& pts) {
  std::vector<std::int64_t> idx(pts.size());
  std::iota(idx.begin(), idx.end(), 0);
  if (!pts.empty()) reference_build(pts, idx, 0, std::int64_t(pts.size()), 0, 0);
  return idx;
}

// Every node's left sub-tree <= its split value <= its right sub-tree.
template <class Tree, class T, int D>
void check_median_tree(Tree const& tree, std::vector<Point<T, D>> const& input) {
  auto pts = to_host(tree.points());
  auto idx = to_host(tree.original_indices());
  std::int64_t const n = std::int64_t(pts.size());
  REQUIRE(n == std::int64_t(input.size()) - tree.dropped_count());
  std::vector<int> seen(input.size(), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    ++seen[idx[i]];
    for (int d = 0; d < D; ++d) REQUIRE(pts[i][d] == input[idx[i]][d]);
  }
  for (auto c : seen) REQUIRE(c <= 1);
  std::int64_t const slots = tree.node_count();
  std::vector<int> node_of_position(n, 0);
  for (std::int64_t s = 0; s < slots; ++s)
    if (tree.has_node(typename Tree::index_type(s))) ++node_of_position[tree.position(typename Tree::index_type(s))];
  for (auto c : node_of_position) REQUIRE(c == 1); // every point is exactly one node
  auto exists = [&](std::int64_t s) { return s < slots && tree.has_node(typename Tree::index_type(s)); };
  for (std::int64_t s = 0; s < slots; ++s) {
    if (!exists(s)) continue;
    int const dim = lb::level(s) % D;
    T const split = pts[tree.position(typename Tree::index_type(s))][dim];
    for (int side = 1; side <= 2; ++side) {
      std::vector<std::int64_t> stack;
      if (exists(2 * s + side)) stack.push_back(2 * s + side);
      while (!stack.empty()) {
        auto c = stack.back();
        stack.pop_back();
        T const v = pts[tree.position(typename Tree::index_type(c))][dim];
        if (side == 1) REQUIRE(v <= split);
        else REQUIRE(v >= split);
        if (exists(2 * c + 1)) stack.push_back(2 * c + 1);
        if (exists(2 * c + 2)) stack.push_back(2 * c + 2);
      }
    }
  }
}


} // namespace kdforge::test
