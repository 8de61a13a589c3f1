#pragma once
// Options of tree builds and queries. Plain structs: set what you need.
#include <cstdint>
#include <limits>

namespace kdforge {

/// Which builder makes the left-balanced tree. Every builder produces the
/// identical tree for the same input and options.
enum class Builder {
  automatic,          ///< the fastest one measured: presorted_partition on GPUs, recursive_select on CPUs
  presorted_partition,///< sort each dimension once, then stable per-level partitions
  wald_tags,          ///< Wald 2022: per level one radix sort of (tag, coordinate rank) + tag update
  recursive_select,   ///< CPUs only: depth-first selection (nth_element) per node, sub-trees as tasks
};

/// Split dimension of each node.
enum class SplitPolicy {
  automatic,        ///< round_robin when the points' box is about as wide in every dimension, else widest_dimension
  round_robin,      ///< level mod D (Wald 2022, sections 2-5)
  widest_dimension, ///< widest side of the node's domain box (Wald 2022, section 6)
};

/// What to do with points that have a NaN or infinite coordinate.
enum class NonFinitePolicy {
  reject, ///< throw kdforge::Error naming the first offending index
  drop,   ///< leave them out of the tree; Tree::dropped_count() says how many
};

/// Whether a tree keeps the boxes of its inner nodes' sub-trees, which let
/// the queries prune by where the points are (surfaces, planes, lines,
/// clusters) rather than by the split planes alone. Radius searches leave
/// them aside where they cost more than they prune (see
/// kernels/query/radius.hpp, radius_walk_tree).
enum class NodeBoxPolicy {
  automatic, ///< kept when the points leave most of their cells empty (see kernels/trees/node_boxes.hpp)
  always,
  never,
};

struct BuildOptions {
  Builder builder = Builder::automatic;
  SplitPolicy split = SplitPolicy::automatic;
  NonFinitePolicy non_finite = NonFinitePolicy::reject;
  NodeBoxPolicy node_boxes = NodeBoxPolicy::automatic;
};

/// How a query walks the tree.
enum class Traversal {
  automatic,  ///< the faster one measured for the target (trail on GPUs, stack on CPUs)
  stack,      ///< depth-first with a small per-thread stack of far children
  stack_free, ///< parent/child arithmetic only (Wald's stack-free traversal)
  trail,      ///< stack-free too: pending far children as one bit per level, no climbing back up
  /// Bucket trees only (kNN and closest point, k <= 32): a team of vector
  /// lanes per query (a warp on NVIDIA GPUs), the lanes splitting each sum
  /// over the dimensions; the automatic choice on GPUs from 16 dimensions
  /// on. Every other value, and larger k, walks bucket trees with a thread
  /// per query; level-order trees refuse team.
  team,
};

/// In which order a batch of queries is processed (results are always
/// returned in the caller's order). Bucket trees' kNN and closest point take
/// morton as automatic: Morton order for the thread-per-query walk on CPUs
/// (from 4,096 queries), the leaves' order for the team walk on GPUs, as
/// given otherwise; as_given turns both off. Their radius searches and
/// approximate kNN take the queries as given whatever the option says.
enum class QueryOrder {
  automatic, ///< the faster one measured: Morton order on every target for level-order trees (bucket trees: above)
  as_given,
  morton,    ///< sorted by the Morton code of the query point (bucket trees: as automatic)
};

/// The bottom levels of the tree that queries scan instead of traverse:
/// each node on level L - bucket_levels is a bucket whose whole sub-tree
/// (at most 2^bucket_levels - 1 points) is checked without plane tests.
/// Results never depend on it, except the order of unsorted radius rows
/// (traversal order: the same on every backend for the same bucket_levels).
/// -1: the measured best for the target (2 on GPUs, 3 on CPUs); 0: plain
/// traversal; at most 6.
inline constexpr int automatic_bucket_levels = -1;

/// kNN and closest point with the trail traversal (k <= 32): queries still
/// walking after this many loop iterations are set aside (their walk's state
/// and candidates saved) and finished by a second pass that packs them
/// densely, so the lanes of a GPU warp stop waiting for the warp's slowest
/// query. Results never depend on it. -1: automatic (on GPUs, for closest
/// point and k = 1 with at least 65536 queries: 3 x the tree's levels, near
/// the mean iterations of a query; measured 8% faster on an H100, while k = 8
/// and 16 were slower with every cap tried; off on CPUs, whose threads do
/// not wait for each other); 0: off; > 0: that many iterations (requires
/// Traversal::trail). While a call runs its workspace holds up to M saved
/// walks (32 bytes each for k = 1, float; ~100 for k = 8).
inline constexpr int automatic_regroup = -1;

/// How an exact kNN or closest-point query on a bucket tree
/// (build_bucket_tree) finds its answer. Either way the answer is the same,
/// ties and rounding included.
enum class KnnStrategy {
  /// The tree in 1 to 3 dimensions. Above: on GPUs the tree up to 8
  /// dimensions, and from 9 on where a sample of up to 256 walks looks at
  /// less than a share of the points that falls with the dimension (4% up
  /// to 128 dimensions, 0.7% in 512), brute force otherwise (and always
  /// where the walk is a thread per query, Traversal::team's note); on CPUs
  /// up to 64 of the queries are answered both ways first, timed, and the
  /// faster way answers the batch. Either sample waits for its result.
  automatic,
  tree,        ///< walk the tree (best for low intrinsic dimension)
  brute_force, ///< every query against every point, in tiles (kernels/query/brute_force.hpp)
};

/// How brute force finds the k nearest (knn_brute_force, and bucket trees
/// answering by brute force). The answer is the same either way, ties and
/// rounding included.
enum class BruteForceMethod {
  /// gemm where the build has a GEMM for the execution space (cuBLAS in
  /// Cuda builds, the machine's BLAS in CPU builds), the points have at
  /// least 64 dimensions and k <= 256; tiles otherwise.
  automatic,
  /// kdforge's own kernel: distances summed in dimension order in tiles
  /// (kernels/query/brute_force.hpp).
  tiles,
  /// candidates from ||q||^2 + ||p||^2 - 2 q.p by a vendor GEMM, the answer
  /// from their exact distances (kernels/query/brute_force_gemm.hpp);
  /// refused where the build has no GEMM for the execution space.
  gemm,
};

struct QueryOptions {
  /// Only neighbours with distance <= cutoff_radius are reported (not squared).
  double cutoff_radius = std::numeric_limits<double>::infinity();
  Traversal traversal = Traversal::automatic;
  QueryOrder order = QueryOrder::automatic;
  int bucket_levels = automatic_bucket_levels;
  int regroup_iterations = automatic_regroup; ///< see automatic_regroup
  /// Refuse queries with a NaN or infinite coordinate (kdforge::Error naming
  /// the first). The check shares the pass that orders the queries, but
  /// reads one value back, so the call returns with its results complete;
  /// false skips it and leaves the call asynchronous (fence the execution
  /// space before reading the results), for queries known to be finite.
  bool check_queries = true;
  /// Bucket trees: tree walk or brute force (see KnnStrategy). Other trees
  /// always walk and refuse KnnStrategy::brute_force.
  KnnStrategy strategy = KnnStrategy::automatic;
  /// Bucket trees answering by brute force: how (see BruteForceMethod).
  BruteForceMethod brute_force_method = BruteForceMethod::automatic;
  /// Self-queries: the queries are the tree's points in the caller's order
  /// (row i of the queries is point i), and row i leaves point i out of its
  /// answer (its other copies, if the points repeat, stay in). Bucket trees
  /// only; other trees refuse it.
  bool exclude_self = false;
};

struct RadiusOptions {
  /// Sort each row by (squared distance, index). Rows limited by
  /// max_neighbors are always sorted.
  bool sort = false;
  /// At most this many neighbours per query, the nearest ones; -1: no limit.
  std::int64_t max_neighbors = -1;
  /// How radius_search without max_neighbors finds its rows (the results
  /// are the same either way, unsorted rows included):
  /// -1 (automatic): one traversal on CPUs, whose chunks of queries append
  ///    their rows to growing host buffers that are then copied into the CSR
  ///    arrays (extra memory: about the size of the results); count, then
  ///    fill (0) on GPUs.
  /// 0: count first, then fill (two traversals, no scratch).
  /// > 0: per-query scratch slots that let one traversal both count and
  ///    record the neighbours. Rows with at most this many neighbours are
  ///    then copied into the CSR arrays; only longer rows are traversed
  ///    again. Costs M x buffer_size x (sizeof(index) + sizeof(coordinate))
  ///    bytes while the search runs.
  std::int64_t buffer_size = -1;
  Traversal traversal = Traversal::automatic;
  QueryOrder order = QueryOrder::automatic;
  int bucket_levels = automatic_bucket_levels; ///< as QueryOptions::bucket_levels
  bool check_queries = true; ///< as QueryOptions::check_queries
};

/// Approximate kNN (knn_approximate) with Wehr & Radkowski's bounded queue.
struct ApproximateOptions {
  /// Q: capacity of the pending-branch queue, >= 1. Up to 32 it lives in
  /// registers/local memory; larger queues use a scratch View of
  /// (queries in flight) x Q entries, processed in batches of bounded memory.
  int queue_capacity = 32;
  /// Stop each query after this many leaves (0: no limit). On bucket trees
  /// a leaf is a bucket, searched nearest box first: FLANN's "checks".
  std::int64_t max_leaves = 0;
  /// (1 + eps)-approximate search (eps >= 0): a branch is skipped once its
  /// distance exceeds the k-th distance found so far divided by (1 + eps),
  /// so the j-th neighbour reported is within (1 + eps) of the true j-th
  /// distance, when the queue and max_leaves do not cut the search first.
  double eps = 0.0;
  /// As QueryOptions::exclude_self (bucket trees only).
  bool exclude_self = false;
  /// Only neighbours with distance <= cutoff_radius are reported (not squared).
  double cutoff_radius = std::numeric_limits<double>::infinity();
  QueryOrder order = QueryOrder::automatic;
  bool check_queries = true; ///< as QueryOptions::check_queries
};

/// Build options of SAH triangle trees (Zhou, Hou, Wang & Guo 2008; see
/// kernels/builders/sah/build.hpp). The defaults are the paper's where it
/// names a value (T = 64, Ce = 25%, chunks of 256).
struct SahOptions {
  /// C_ts of the surface area heuristic: the cost of stepping through one
  /// inner node, in the unit of cost_intersection's scale (the paper names
  /// no value; 1 : 1.5 is the ratio of common SAH builders, e.g. Wald &
  /// Havran 2006 use 15 : 20).
  double traversal_cost = 1.0;
  /// The cost of one ray-triangle test.
  double intersection_cost = 1.5;
  /// Ce: a large node's side of empty space wider than this fraction of the
  /// node is cut off before the spatial median split.
  double empty_space_ratio = 0.25;
  /// T: nodes of at most this many triangles are split by exact SAH over
  /// 64-bit masks (1 to 64).
  int small_node_size = 64;
  /// The deepest level a node may be on (the root: 0); 0 picks
  /// 8 + 1.3 log2(F), at most 60. Bounds the walks' stacks and the work on
  /// degenerate input (many coincident or overlapping triangles).
  int max_depth = 0;
};

} // namespace kdforge
