#pragma once
// The distributed tree: a local tree per rank over that rank's points, and
// the top (distributed/top.hpp) every rank holds: each rank's box and
// sub-boxes, how many points it holds, where its points begin in the global
// order. After ArborX's DistributedTree (Lebrun-Grandie, Prokopenko, Turcksin
// & Slattery 2020, section 3.3): local trees, rank boxes gathered, queries
// forwarded to the ranks whose boxes can hold answers.
//
// What differs, and why: ties. A single tree breaks ties at equal distance
// by the smaller input index; here the input index of the union is the
// global index (rank-major: rank 0's points, then rank 1's, ...; or ids the
// caller gives), and the results are those of one tree over the union, ties
// included (distributed/queries.hpp says how). With caller ids, each rank
// orders its points by id before its build, so that its local tree breaks
// ties by id too.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/access.hpp>
#include <kdforge/base/error.hpp>
#include <kdforge/base/options.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/base/workspace.hpp>
#include <kdforge/build_left_balanced.hpp>
#include <kdforge/distributed/communicator.hpp>
#include <kdforge/distributed/results.hpp>
#include <kdforge/distributed/scratch.hpp>
#include <kdforge/distributed/top.hpp>
#include <kdforge/kernels/common/points.hpp>
#include <kdforge/kernels/trees/concept.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kdforge {

/// Options of build_distributed_tree.
struct DistributedOptions {
  /// Boxes each rank contributes to the top: 2^box_levels, the sub-trees
  /// below that level of its local tree (0: the rank's bounding box only).
  /// At most 4. More boxes send fewer queries to ranks whose points leave
  /// much of their box empty, for a scan of more boxes per query.
  int box_levels = 2;
  /// GPU memory handed to MPI directly, or staged through host memory.
  GpuAwareMpi gpu_aware = GpuAwareMpi::automatic;
};

namespace distributed {

template <class MemorySpace, class LocalTree>
struct State {
  using T = typename LocalTree::coordinate_type;
  using Index = typename LocalTree::index_type;
  static constexpr int D = LocalTree::dimension;
  State(MPI_Comm c, GpuAwareMpi g) : comm(c, g) {}
  Communicator<MemorySpace> comm;
  LocalTree tree;
  int boxes_per_rank = 1;
  Kokkos::View<TopBox<T, D>*, MemorySpace> rank_boxes; // P
  Kokkos::View<TopBox<T, D>*, MemorySpace> sub_boxes;  // P x boxes_per_rank
  RankGrid<MemorySpace, D> grid;                        // the ranks' boxes on a grid (top.hpp)
  Kokkos::View<std::int64_t*, MemorySpace> tree_sizes; // P: points in each rank's tree
  Kokkos::View<std::int64_t*, MemorySpace> offsets;    // P + 1: global index of each rank's first input point
  std::vector<std::int64_t> h_tree_sizes, h_input_sizes, h_offsets;
  std::vector<Box<T, D>> h_rank_boxes;
  // with caller ids: tree position -> the caller's local index, and -> id
  Kokkos::View<Index*, MemorySpace> perm;
  Kokkos::View<std::int64_t*, MemorySpace> ids;
  bool has_ids = false;
  QueryWorkspace<MemorySpace> workspace;
  Scratch<MemorySpace> scratch; // the calls' buffers (scratch.hpp)
  // closest point's M x 1 rows, which it copies into the caller's result:
  // kept, so that repeated calls of one size allocate them once
  DistributedKnnResult<MemorySpace, T, Index> closest_rows;
  DistributedStats stats;
  double build_local_s = 0, build_top_s = 0;
};

} // namespace distributed

/// A k-d tree over the points of all ranks of an MPI communicator: each rank
/// holds a local tree over its own points (any level-order builder:
/// build_left_balanced with any BuildOptions, build_split_sort) and the top
/// of every rank. Made by build_distributed_tree; queried by the overloads
/// of knn, closest_point, radius_count and radius_search in
/// kdforge/distributed_tree.hpp, which every rank calls together (collective,
/// each with its own queries, possibly none). A handle: copies share the
/// tree. Destroy it before MPI_Finalize.
template <class MemorySpace, class LocalTree>
class DistributedTree {
public:
  using memory_space = MemorySpace;
  using local_tree_type = LocalTree;
  using coordinate_type = typename LocalTree::coordinate_type;
  using index_type = typename LocalTree::index_type;
  using point_type = typename LocalTree::point_type;
  static constexpr int dimension = LocalTree::dimension;
  using state_type = distributed::State<MemorySpace, LocalTree>;

  DistributedTree() = default;
  explicit DistributedTree(std::shared_ptr<state_type> s) : m_state(std::move(s)) {}

  /// The tree's own communicator (a duplicate of the one it was built on).
  MPI_Comm comm() const { return m_state->comm.comm(); }
  int rank() const { return m_state->comm.rank(); }
  int comm_size() const { return m_state->comm.size(); }
  /// This rank's tree; its indices are positions in this rank's points
  /// (with caller ids: in the points ordered by id).
  LocalTree const& local_tree() const { return m_state->tree; }
  /// Points in all ranks' trees.
  std::int64_t size() const { return m_state->h_offsets.empty() ? 0 : sum(m_state->h_tree_sizes); }
  /// Points in rank r's tree (points NonFinitePolicy::drop left out excluded).
  std::int64_t tree_size(int r) const { return m_state->h_tree_sizes.at(std::size_t(r)); }
  /// Points rank r passed to the build.
  std::int64_t input_size(int r) const { return m_state->h_input_sizes.at(std::size_t(r)); }
  /// Global index of rank r's point 0 (rank-major order; without caller ids).
  std::int64_t global_offset(int r) const { return m_state->h_offsets.at(std::size_t(r)); }
  /// The global index of point `index` of rank r: global_offset(r) + index,
  /// its position in the union of the ranks' points in rank order. With
  /// caller ids the results carry the ids instead (global_indices).
  std::int64_t global_index(int r, std::int64_t index) const {
    KDFORGE_REQUIRE(!m_state->has_ids, "DistributedTree::global_index",
                    "the tree was built with caller ids; read them from the results' global_indices");
    return global_offset(r) + index;
  }
  bool has_global_ids() const { return m_state->has_ids; }
  /// Bounding box of rank r's points.
  Box<coordinate_type, dimension> rank_bounds(int r) const { return m_state->h_rank_boxes.at(std::size_t(r)); }
  int boxes_per_rank() const { return m_state->boxes_per_rank; }
  /// How Views travel between ranks: host memory, GPU-aware MPI or host staging.
  MpiTransport transport() const { return m_state->comm.transport(); }
  /// This rank's timings and traffic of the last query call.
  DistributedStats const& last_stats() const { return m_state->stats; }
  /// Bytes this rank keeps between query calls: the buffers of the calls
  /// (routes, exchanges, rows; each grown to the largest call so far, so
  /// that repeated calls allocate nothing but what their results need),
  /// closest point's rows of its last call, and the local queries'
  /// workspace.
  std::size_t scratch_bytes() const {
    auto const& c = m_state->closest_rows;
    return m_state->scratch.bytes() + m_state->workspace.bytes() + bytes_of(c.ranks) + bytes_of(c.indices) +
           bytes_of(c.global_indices) + bytes_of(c.sq_distances);
  }
  /// Frees what scratch_bytes() counts on this rank (not collective); the
  /// next call allocates it again.
  void release_scratch() const {
    m_state->scratch.release();
    m_state->workspace.release();
    m_state->closest_rows = {};
  }
  /// This rank's seconds for its local build and for the top (all-gathers).
  double build_local_seconds() const { return m_state->build_local_s; }
  double build_top_seconds() const { return m_state->build_top_s; }

  state_type& state() const { return *m_state; }

private:
  template <class V>
  static std::size_t bytes_of(V const& v) {
    return v.span() * sizeof(typename V::value_type);
  }
  static std::int64_t sum(std::vector<std::int64_t> const& v) {
    std::int64_t s = 0;
    for (auto x : v) s += x;
    return s;
  }
  std::shared_ptr<state_type> m_state;
};

namespace distributed {

template <class V, class Out>
struct Iota {
  Out out;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const { out(i) = V(i); }
};

// Signed ids as unsigned keys of the same order.
template <class Ids, class Keys>
struct IdKeys {
  Ids ids;
  Keys keys;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    keys(i) = std::uint64_t(std::int64_t(ids(i))) ^ (std::uint64_t(1) << 63);
  }
};

template <class Points, class Perm, class Ids, class OutPoints, class OutIds>
struct Permute {
  Points points;
  Perm perm;
  Ids ids;
  OutPoints out_points;
  OutIds out_ids;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    out_points(i) = points(perm(i));
    out_ids(i) = std::int64_t(ids(perm(i)));
  }
};

struct NoIds {};

/// The common build: the local tree (by `builder`, on the points ordered by
/// id where ids are given), its top boxes, and the all-gathers of the top.
template <class Exec, class Points, class Ids, class Builder>
auto build_distributed(Exec const& exec, MPI_Comm comm, Points const& points, Ids const& ids, Builder const& builder,
                       DistributedOptions const& options) {
  static_assert(Kokkos::is_execution_space<Exec>::value,
                "kdforge::build_distributed_tree: the first argument must be a Kokkos execution space instance");
  static_assert(detail::check_points_container<Points, Exec>());
  using A = AccessTraits<Points>;
  using T = typename A::coordinate_type;
  constexpr int D = A::dimension;
  using MS = typename Exec::memory_space;
  using PV = Kokkos::View<Point<T, D>*, MS>;
  constexpr bool with_ids = !std::is_same<Ids, NoIds>::value;
  using LocalTree = std::decay_t<decltype(builder(exec, std::declval<std::conditional_t<with_ids, PV, Points> const&>()))>;
  static_assert(kernels::is_level_order_tree<LocalTree>,
                "kdforge::build_distributed_tree: the local trees must be point trees of a compile-time dimension "
                "(build_left_balanced with any BuildOptions, build_split_sort)");
  static_assert(std::is_same<typename LocalTree::memory_space, MS>::value,
                "kdforge::build_distributed_tree: the builder must build in the execution space's memory");
  using StateT = State<MS, LocalTree>;
  using Index = typename LocalTree::index_type;

  auto state = std::make_shared<StateT>(comm, options.gpu_aware); // collective: duplicates the communicator
  auto& c = state->comm;
  return c.call("build_distributed_tree", [&] {
    int const P = c.size();
    Kokkos::Timer timer;
    std::vector<Box<T, D>> boxes;
    std::int64_t input_size = 0;
    c.collectively([&] {
      KDFORGE_REQUIRE(options.box_levels >= 0 && options.box_levels <= 4, "build_distributed_tree",
                      "DistributedOptions::box_levels must be in [0, 4] (got ", options.box_levels, ")");
      input_size = std::int64_t(A::size(points));
      if constexpr (with_ids) {
        static_assert(Kokkos::is_view<Ids>::value && Ids::rank == 1 &&
                          std::is_integral<typename Ids::non_const_value_type>::value,
                      "kdforge::build_distributed_tree: ids must be a rank-1 View of integers, one per point");
        static_assert(Kokkos::SpaceAccessibility<Exec, typename Ids::memory_space>::accessible,
                      "kdforge::build_distributed_tree: the ids must be in memory the execution space can read");
        KDFORGE_REQUIRE(std::int64_t(ids.extent(0)) == input_size, "build_distributed_tree", "ids has ",
                        ids.extent(0), " entries for ", input_size, " points; pass one id per point");
        detail::check_point_count<Index, Exec>(std::size_t(input_size), "build_distributed_tree");
        PV pts = to_points(exec, points, "kdforge::distributed::points");
        std::int64_t const n = input_size;
        auto keys = backend::allocate<Kokkos::View<std::uint64_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::distributed::id_keys"), n);
        auto perm = backend::allocate<Kokkos::View<Index*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::distributed::perm"), n);
        Kokkos::parallel_for("kdforge::distributed::id_keys", Kokkos::RangePolicy<Exec>(exec, 0, n),
                             IdKeys<Ids, decltype(keys)>{ids, keys});
        Kokkos::parallel_for("kdforge::distributed::iota", Kokkos::RangePolicy<Exec>(exec, 0, n),
                             Iota<Index, decltype(perm)>{perm});
        backend::sort_by_key(exec, keys, perm); // stable: equal ids keep the caller's order
        PV sorted(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::distributed::points_by_id"), n);
        auto sorted_ids = backend::allocate<Kokkos::View<std::int64_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::distributed::ids"), n);
        Kokkos::parallel_for("kdforge::distributed::permute", Kokkos::RangePolicy<Exec>(exec, 0, n),
                             Permute<PV, decltype(perm), Ids, PV, decltype(sorted_ids)>{pts, perm, ids, sorted, sorted_ids});
        state->tree = builder(exec, sorted);
        state->perm = perm;
        state->ids = sorted_ids;
        state->has_ids = true;
      } else {
        (void)ids;
        state->tree = builder(exec, points);
      }
      boxes = local_top_boxes(exec, state->tree, options.box_levels);
      exec.fence();
    });
    state->build_local_s = timer.seconds();
    timer.reset();

    // The top: sizes, bounds and sub-boxes of every rank.
    struct RankInfo {
      std::int64_t input_size;
      std::int64_t tree_size;
      Box<T, D> bounds;
    };
    RankInfo mine{input_size, std::int64_t(state->tree.size()), state->tree.bounds()};
    auto const info = c.allgather(&mine, 1);
    int const B = 1 << options.box_levels;
    auto const all_boxes = c.allgather(boxes.data(), B);
    state->boxes_per_rank = B;
    state->h_tree_sizes.resize(std::size_t(P));
    state->h_input_sizes.resize(std::size_t(P));
    state->h_offsets.assign(std::size_t(P) + 1, 0);
    state->h_rank_boxes.resize(std::size_t(P));
    for (int p = 0; p < P; ++p) {
      state->h_tree_sizes[std::size_t(p)] = info[std::size_t(p)].tree_size;
      state->h_input_sizes[std::size_t(p)] = info[std::size_t(p)].input_size;
      state->h_offsets[std::size_t(p) + 1] = state->h_offsets[std::size_t(p)] + info[std::size_t(p)].input_size;
      state->h_rank_boxes[std::size_t(p)] = info[std::size_t(p)].bounds;
    }
    auto to_device = [&](auto const& host, char const* label) {
      using V = typename std::decay_t<decltype(host)>::value_type;
      auto d = backend::allocate<Kokkos::View<V*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), host.size());
      Kokkos::deep_copy(exec, d, Kokkos::View<V const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                     host.data(), host.size()));
      return d;
    };
    std::size_t const np = std::size_t(P);
    std::vector<TopBox<T, D>> h_rank_top(np), h_sub_top(all_boxes.size());
    for (int p = 0; p < P; ++p) h_rank_top[std::size_t(p)] = top_box(info[std::size_t(p)].bounds);
    for (std::size_t i = 0; i < all_boxes.size(); ++i) h_sub_top[i] = top_box(all_boxes[i]);
    state->rank_boxes = to_device(h_rank_top, "kdforge::distributed::rank_boxes");
    state->sub_boxes = to_device(h_sub_top, "kdforge::distributed::sub_boxes");
    state->tree_sizes = to_device(state->h_tree_sizes, "kdforge::distributed::tree_sizes");
    state->grid = make_rank_grid<MS>(state->h_rank_boxes, state->h_tree_sizes);
    state->offsets = to_device(state->h_offsets, "kdforge::distributed::offsets");
    exec.fence();
    state->build_top_s = timer.seconds();
    return DistributedTree<MS, LocalTree>(state);
  });
}

struct LeftBalancedBuilder {
  BuildOptions options;
  template <class Exec, class Points>
  auto operator()(Exec const& exec, Points const& points) const {
    return build_left_balanced(exec, points, options);
  }
};

} // namespace distributed

/// Builds the distributed tree over every rank's `points` (collective: every
/// rank of `comm` calls it, with its own points, possibly none): a
/// left-balanced tree per rank with `build` options, and the top. Global
/// indices are rank-major: rank 0's points first. A NaN point on one rank
/// (NonFinitePolicy::reject) makes every rank throw the same kdforge::Error.
template <class Exec, class Points>
auto build_distributed_tree(Exec const& exec, MPI_Comm comm, Points const& points, BuildOptions const& build = {},
                            DistributedOptions const& options = {}) {
  return distributed::build_distributed(exec, comm, points, distributed::NoIds{},
                                        distributed::LeftBalancedBuilder{build}, options);
}

/// As above with the local trees made by `builder(exec, points)`, e.g.
/// `[](auto const& e, auto const& p) { return kdforge::build_split_sort(e, p); }`
/// or a left-balanced tree of 64-bit indices.
template <class Exec, class Points, class Builder,
          std::enable_if_t<!Kokkos::is_view<Builder>::value && !std::is_same<Builder, BuildOptions>::value, int> = 0>
auto build_distributed_tree(Exec const& exec, MPI_Comm comm, Points const& points, Builder const& builder,
                            DistributedOptions const& options = {}) {
  return distributed::build_distributed(exec, comm, points, distributed::NoIds{}, builder, options);
}

/// As above with the caller's global id of every point (`ids`: a View of
/// integers, one per point, unique over all ranks): results carry the ids as
/// global_indices, and ties go to the smaller id, as in one tree over the
/// union ordered by id. Costs 8 more bytes per returned neighbour.
template <class Exec, class Points, class Ids, std::enable_if_t<Kokkos::is_view<Ids>::value, int> = 0>
auto build_distributed_tree(Exec const& exec, MPI_Comm comm, Points const& points, Ids const& ids,
                            BuildOptions const& build = {}, DistributedOptions const& options = {}) {
  return distributed::build_distributed(exec, comm, points, ids, distributed::LeftBalancedBuilder{build},
                                        options);
}

template <class Exec, class Points, class Ids, class Builder,
          std::enable_if_t<Kokkos::is_view<Ids>::value && !std::is_same<Builder, BuildOptions>::value, int> = 0>
auto build_distributed_tree(Exec const& exec, MPI_Comm comm, Points const& points, Ids const& ids,
                            Builder const& builder, DistributedOptions const& options = {}) {
  return distributed::build_distributed(exec, comm, points, ids, builder, options);
}

} // namespace kdforge
