#pragma once
// How the query kernels run: the execution policy, the walk a call chose,
// and the dispatch from a walk to its file in walks/.
#include <kdforge/base/options.hpp>
#include <kdforge/kernels/query/walks/stack.hpp>
#include <kdforge/kernels/query/walks/stack_free.hpp>
#include <kdforge/kernels/query/walks/trail.hpp>
#include <kdforge/kernels/trees/concept.hpp>
#include <kdforge/kernels/trees/left_balanced_tree.hpp>
#include <kdforge/kernels/trees/node_boxes.hpp>

#include <Kokkos_Core.hpp>

#include <type_traits>
#include <utility>

namespace kdforge::detail {

template <class Exec>
constexpr bool runs_on_gpu() {
  return !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
}

/// `tree` with its node boxes left aside, for walks that gain nothing from
/// them: radius searches (radius_walk_tree) and ICP's seeded closest point
/// (kdforge::icp), whose bounds are fixed or start near the answer, so a
/// box prunes little that the split planes do not, at the cost of loading
/// it. Results do not change (boxes are lower bounds). GPUs keep the boxes
/// of points whose box has no width in some dimension (an axis-aligned
/// plane or line): their walks of trees without boxes test the split planes
/// alone (see with_fixed_split), and there only the boxes prune a query off
/// the points; CPU walks start from q's offsets to the points' box, which do.
template <class Exec, class Tree>
Tree walk_tree_without_boxes(Tree const& tree) {
  if constexpr (kernels::has_node_boxes<Tree>) {
    if (tree.node_boxes().empty()) return tree;
    if constexpr (runs_on_gpu<Exec>())
      if (kernels::flat_bounds(tree)) return tree;
    Tree t = tree;
    t.set_node_boxes({}, tree.box_fill());
    return t;
  } else {
    return tree;
  }
}

/// The policy of the per-query kernels (kNN, closest point, radius,
/// approximate kNN). On CPUs, Kokkos' dynamic schedule: each thread starts
/// on its own contiguous share of the (Morton-ordered) queries, as with the
/// static one, and takes chunks from the others' shares when it runs out,
/// so one slower core does not hold the whole call back (faster and far
/// less spread between repetitions on 16 cores: docs/performance.md). GPUs:
/// the plain policy (Kokkos ignores the schedule there).
template <class Exec>
using QueryPolicy = std::conditional_t<runs_on_gpu<Exec>(), Kokkos::RangePolicy<Exec>,
                                       Kokkos::RangePolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>>;

template <class Tree, class = void>
struct has_split_dim_as : std::false_type {};
template <class Tree>
struct has_split_dim_as<Tree, std::void_t<decltype(std::declval<Tree const&>().template split_dim_as<SplitPolicy::round_robin>(
                                  typename Tree::index_type(0), 0))>> : std::true_type {};

/// Calls f(tree), or on GPUs f(FixedSplitTree<Tree, P>(tree)) for the
/// tree's split policy P: the query kernels are compiled once per policy
/// there (see FixedSplitTree). CPUs predict the policy's branch, so their
/// kernels are not doubled.
///
/// GPU kernels are also compiled twice by whether the tree has node boxes:
/// a tree without them is passed as kernels::WithoutBoxes, whose walks
/// compile the box code out (see node_boxes.hpp).
template <class Exec, class Tree, class F>
void with_fixed_split(Tree const& tree, F const& f) {
  if constexpr (runs_on_gpu<Exec>()) {
    auto const boxed = [&](auto const& t) {
      using TT = std::decay_t<decltype(t)>;
      if (t.node_boxes().empty()) f(kernels::WithoutBoxes<TT>(t));
      else f(t);
    };
    if constexpr (has_split_dim_as<Tree>::value) {
      if (tree.split_policy() == SplitPolicy::round_robin) boxed(FixedSplitTree<Tree, SplitPolicy::round_robin>(tree));
      else boxed(FixedSplitTree<Tree, SplitPolicy::widest_dimension>(tree));
    } else {
      boxed(tree);
    }
  } else {
    f(tree);
  }
}

/// How the queries of one call walk the tree.
struct Walk {
  Traversal traversal; // never automatic
  kernels::Buckets buckets;
};

/// Runs the walk a call chose on a level-order tree.
template <class Tree, class Visitor>
KOKKOS_FORCEINLINE_FUNCTION void traverse(Walk const& walk, Tree const& tree, typename Tree::point_type const& q,
                                          Visitor& v) {
  static_assert(kernels::check_level_order_tree<Tree>());
  if (walk.traversal == Traversal::trail) kernels::traverse_trail(tree, q, v, walk.buckets);
  else if (walk.traversal == Traversal::stack_free) kernels::traverse_stack_free(tree, q, v, walk.buckets);
  else kernels::traverse_stack(tree, q, v, walk.buckets);
}

} // namespace kdforge::detail
