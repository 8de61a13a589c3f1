#pragma once
// kdforge-bench: the registry of kdforge builders the driver measures.
//
// To add a builder: write a struct like the ones below (name, description,
// same_tree_group, and a static build() returning a tree that knn /
// closest_point / radius_count / radius_search accept) and append it to
// `Builders`. `--builder NAME`, `--builder all`, --help, the table, the JSON
// records and the comparison scripts pick it up from there.
#include <kdforge/kdforge.hpp>

#include <string>
#include <tuple>

namespace kdforge_bench {

/// Build settings from the command line that builders may use.
struct BenchBuildOptions {
  kdforge::SplitPolicy split = kdforge::SplitPolicy::automatic;
  kdforge::NodeBoxPolicy node_boxes = kdforge::NodeBoxPolicy::automatic;
};

struct AutoBuilder {
  static constexpr char const* name = "auto";
  static constexpr char const* description =
      "left-balanced tree, the default builder: recursive selection on CPUs, partition on GPUs";
  static constexpr char const* same_tree_group = "left_balanced";
  template <class Exec, class Points>
  static auto build(Exec const& exec, Points const& points, BenchBuildOptions const& o) {
    kdforge::BuildOptions bo;
    bo.split = o.split;
    bo.node_boxes = o.node_boxes;
    return kdforge::build_left_balanced(exec, points, bo);
  }
};

struct PartitionBuilder {
  static constexpr char const* name = "partition";
  static constexpr char const* description =
      "left-balanced tree: presort once per dimension, then stable per-level partitions";
  /// Builders of one group must produce the identical tree (checked).
  static constexpr char const* same_tree_group = "left_balanced";
  template <class Exec, class Points>
  static auto build(Exec const& exec, Points const& points, BenchBuildOptions const& o) {
    kdforge::BuildOptions bo;
    bo.builder = kdforge::Builder::presorted_partition;
    bo.split = o.split;
    bo.node_boxes = o.node_boxes;
    return kdforge::build_left_balanced(exec, points, bo);
  }
};

struct TagsBuilder {
  static constexpr char const* name = "tags";
  static constexpr char const* description = "left-balanced tree: Wald 2022, one tag sort per level";
  static constexpr char const* same_tree_group = "left_balanced";
  template <class Exec, class Points>
  static auto build(Exec const& exec, Points const& points, BenchBuildOptions const& o) {
    kdforge::BuildOptions bo;
    bo.builder = kdforge::Builder::wald_tags;
    bo.split = o.split;
    bo.node_boxes = o.node_boxes;
    return kdforge::build_left_balanced(exec, points, bo);
  }
};

struct SplitSortBuilder {
  static constexpr char const* name = "split_sort";
  static constexpr char const* description =
      "balanced median tree: Wehr & Radkowski 2018 adaptive split and sort (round robin only; --split ignored)";
  static constexpr char const* same_tree_group = ""; // a different tree: not compared with partition/tags
  template <class Exec, class Points>
  static auto build(Exec const& exec, Points const& points, BenchBuildOptions const& o) {
    kdforge::SplitSortOptions so;
    so.node_boxes = o.node_boxes;
    return kdforge::build_split_sort<std::int32_t>(exec, points, so);
  }
};

/// The registry, in the order `--builder all` runs them.
using Builders = std::tuple<AutoBuilder, PartitionBuilder, TagsBuilder, SplitSortBuilder>;

template <class F, std::size_t... I>
void for_each_builder_impl(F&& f, std::index_sequence<I...>) {
  (f(static_cast<std::tuple_element_t<I, Builders>*>(nullptr)), ...);
}
/// Calls f(static_cast<B*>(nullptr)) for every registered builder B.
template <class F>
void for_each_builder(F&& f) {
  for_each_builder_impl(f, std::make_index_sequence<std::tuple_size<Builders>::value>{});
}

} // namespace kdforge_bench
