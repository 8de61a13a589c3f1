#pragma once
// The ICP loop on the execution space, for core/include/kdforge/icp.hpp:
// after a setup of one to three kernels, one kernel per iteration and no
// host synchronisation until the call's results are read, once.
//
// Each iteration is one reduction (IcpIteration; Kokkos' parallel_reduce on
// CPUs, kernels/common/reduce_final.hpp on GPUs): every thread reads
// the current transform from device memory, moves its source point,
// finds the point's nearest target point (the exact walk of closest_point
// or Wehr & Radkowski's bounded-queue search of knn_approximate, k = 1)
// and adds the pair to the iteration's sums (icp.hpp); the reduction's
// final step, which runs once on the reduced value (on GPUs in the last
// team of kernels/common/reduce_final.hpp's reduction), solves the 4x4
// or 6x6 system with the same code
// the host reference uses, decides convergence, and writes the next
// transform, the RMSE history and the flags into device memory. Once
// converged (or failed), the remaining iterations return at once; one
// last reduction measures the RMSE, the correspondences and the
// degeneracy at the final transform.
//
// What differs from closest_point / knn_approximate called per iteration:
// the source's processing order (Morton order in the tree's box) is
// computed once, for the initially moved source, instead of for every
// moved copy (a rigid motion keeps neighbouring points neighbours); the
// moved points are never stored; and the exact search starts each point's
// walk with its previous correspondence as the candidate to beat, which
// prunes most of the walk once the iterations settle and returns the same
// point (the nearest by squared distance, ties to the smaller index, is
// unique). Sums are reduced in the processing order: another order than
// the reference loop's, the same to rounding.
//
// A region (track_frame in core/include/kdforge/icp_tracking.hpp): the tree
// then holds only the target points near where the source starts, and is
// exact for a moved point inside `region` alone (there every target point
// within the cutoff is in the tree; the setup writes it into the loop's
// state, so the iteration's functor stays a kernel argument). A moved
// point outside it sets
// LoopState::left_region, and the loop stops: the caller repeats the
// registration over the whole target.
#include <kdforge/backends/intrinsics.hpp>
#include <kdforge/base/registration.hpp>
#include <kdforge/base/types.hpp>
#include <kdforge/kernels/common/distance.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/launch.hpp>
#include <kdforge/kernels/query/morton.hpp>
#include <kdforge/kernels/query/walks/priority.hpp>
#include <kdforge/kernels/registration/icp.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::kernels::registration {

/// What the loop keeps in device memory between its kernels; the host
/// reads it (with the RMSE history after it) once, at the end of the call.
/// Plain data: written field by field by the setup's final step.
struct LoopState {
  RigidTransform x;      ///< the current transform
  double c[3];           ///< reference point of the sums
  double scale;          ///< RMS radius of the initially moved source (point to plane)
  double previous_rmse;  ///< -1 before the first iteration
  int iterations;        ///< increments applied
  int history;           ///< RMSE values recorded
  int done;              ///< converged or failed: later iterations do nothing
  int converged;
  int failed;            ///< fewer than 3 correspondences ...
  int failed_iteration;  ///< ... at this iteration ...
  std::int64_t failed_count; ///< ... this many
  std::int64_t first_bad;    ///< the first source point with a NaN, infinite or out-of-range coordinate, or -1
  int left_region;           ///< a moved source point left IcpIteration::region (set atomically; read in final)
  int region_failed;         ///< left_region seen by a final step: later kernels do nothing
  int check_region;          ///< the tree answers moved points inside [region_lo, region_hi] only
  double region_lo[3], region_hi[3];
  // at the final transform (the measuring pass)
  double rmse;
  std::int64_t count;
  double singular_values[3];
  double weakest_axis[3];
  double largest_eigenvalue;
};

/// The setup's sum: centroid sums about the origin and the first
/// non-finite source point.
struct SetupSums {
  double v[5];
  std::int64_t first_bad;
};

/// Setup, one pass over the source: the initially moved points' Morton
/// codes (processing order, sorted next by sort_morton_order), their
/// centroid, no previous correspondences yet; the final step initialises
/// the loop's state.
template <class T, class Source, class Box, class Codes, class Order, class Previous, class State>
struct IcpSetup {
  using value_type = SetupSums;
  Source source;
  DeviceTransform<double> d; // the initial transform, for the points
  RigidTransform initial;    // ... and for the state
  Box box;
  Codes codes;
  Order order;
  Previous previous; // empty: no warm start
  State state;
  int check_region; // the region, kept in the state (the iteration's functor stays small)
  double region_lo[3], region_hi[3];

  KOKKOS_INLINE_FUNCTION void init(value_type& s) const {
    for (int u = 0; u < 5; ++u) s.v[u] = 0;
    s.first_bad = -1;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, value_type const& b) const {
    for (int u = 0; u < 5; ++u) a.v[u] += b.v[u];
    if (b.first_bad >= 0 && (a.first_bad < 0 || b.first_bad < a.first_bad)) a.first_bad = b.first_bad;
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, volatile value_type const& b) const {
    for (int u = 0; u < 5; ++u) a.v[u] += b.v[u];
    if (b.first_bad >= 0 && (a.first_bad < 0 || b.first_bad < a.first_bad)) a.first_bad = b.first_bad;
  }
#endif
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, value_type& s) const {
    Point<T, 3> const p = source(i);
    Point<T, 3> const q = moved_point<T>(d, p);
    codes(i) = morton_code(q, box);
    order(i) = typename Order::value_type(i);
    if (previous.extent(0)) previous(i) = -1;
    if (!kdforge::detail::is_usable(p) && (s.first_bad < 0 || i < s.first_bad))
      s.first_bad = i;
    double const origin[3] = {0, 0, 0};
    add_centroid<T>(s.v, q, origin);
  }
  KOKKOS_INLINE_FUNCTION void final(value_type& s) const {
    LoopState& st = state();
    st.x = initial;
    centroid_of(s.v, st.c);
    st.scale = 1;
    st.previous_rmse = -1;
    st.iterations = st.history = st.done = st.converged = st.failed = st.failed_iteration = 0;
    st.left_region = st.region_failed = 0;
    st.check_region = check_region;
    for (int u = 0; u < 3; ++u) {
      st.region_lo[u] = region_lo[u];
      st.region_hi[u] = region_hi[u];
    }
    st.failed_count = 0;
    st.first_bad = s.first_bad;
    if (s.first_bad >= 0) st.done = 1;
    st.rmse = 0;
    st.count = 0;
    st.largest_eigenvalue = 0;
    for (int u = 0; u < 3; ++u) st.singular_values[u] = st.weakest_axis[u] = 0;
  }
};

/// Point to plane: the RMS radius of the initially moved source about c,
/// which scales the rotations in the normal equations.
template <class T, class Source, class State>
struct IcpRadius {
  using value_type = Sums<5>;
  Source source;
  DeviceTransform<double> d;
  State state;
  KOKKOS_INLINE_FUNCTION void init(value_type& s) const {
    for (int u = 0; u < 5; ++u) s.v[u] = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, value_type const& b) const {
    for (int u = 0; u < 5; ++u) a.v[u] += b.v[u];
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, volatile value_type const& b) const {
    for (int u = 0; u < 5; ++u) a.v[u] += b.v[u];
  }
#endif
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, value_type& s) const {
    LoopState const& st = state();
    double const c[3] = {st.c[0], st.c[1], st.c[2]};
    add_centroid<T>(s.v, moved_point<T>(d, source(i)), c);
  }
  KOKKOS_INLINE_FUNCTION void final(value_type& s) const { state().scale = radius_of(s.v); }
};

/// The exact nearest target point: closest_point's walk, started from the
/// previous correspondence `seed` where there is one.
template <class Tree, class Target>
struct ExactNearest {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  kdforge::detail::Walk walk;
  Target target; // the tree's points in the caller's order (the seed's coordinates)
  KOKKOS_FORCEINLINE_FUNCTION Neighbor<T, Index> operator()(Tree const& tree, Point<T, 3> const& q, T sq_cutoff,
                                                            std::int64_t, Index seed) const {
    SortedCandidates<Tree, 1> cand(tree, 1, sq_cutoff);
    if (seed >= 0) cand.visit(seed, kdforge::sq_distance(q, target(seed))); // the walk's own rounding
    kdforge::detail::traverse(walk, tree, q, cand);
    return SortedCandidates<Tree, 1>::Keys::neighbor(cand.c[0]);
  }
};

/// Wehr & Radkowski's approximate nearest point: knn_approximate's
/// priority search with a bounded queue (capacity Q; QCAP > 0: in
/// registers/local memory, Q <= QCAP; else row i of `queue`).
template <class Tree, int QCAP, class QueueView>
struct ApproximateNearest {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using B = PendingBranch<T, Index>;
  int queue_capacity;
  std::int64_t max_leaves;
  T scale; ///< (1 + eps)^2
  QueueView queue;
  KOKKOS_FORCEINLINE_FUNCTION Neighbor<T, Index> operator()(Tree const& tree, Point<T, 3> const& q, T sq_cutoff,
                                                            std::int64_t i, Index) const {
    SortedCandidates<Tree, 1> cand(tree, 1, sq_cutoff);
    if constexpr (QCAP > 0) {
      MinMaxHeap<B, LocalStorage<B, QCAP>> heap(LocalStorage<B, QCAP>{}, queue_capacity);
      priority_search(tree, q, cand, heap, max_leaves, scale);
    } else {
      MinMaxHeap<B, QueueRow<QueueView>> heap(QueueRow<QueueView>{queue, i}, queue_capacity);
      priority_search(tree, q, cand, heap, max_leaves, scale);
    }
    return SortedCandidates<Tree, 1>::Keys::neighbor(cand.c[0]);
  }
};

/// The convergence options the final step applies.
struct LoopCriteria {
  double relative_rmse, rotation_epsilon, translation_epsilon, degenerate_ratio;
};

/// One ICP iteration (or, with `measure`, the measuring pass at the final
/// transform): correspondences and sums in parallel, the solve and the
/// update in the final step. Plane: point to plane (target normals).
template <bool Plane, class Tree, class Nearest, class Source, class Order, class Target, class Normals,
          class Previous, class State, class History>
struct IcpIteration {
  using T = typename Tree::coordinate_type;
  using Index = typename Tree::index_type;
  using value_type = Sums<Plane ? plane_sums : point_sums>;
  static constexpr int N = Plane ? plane_sums : point_sums;
  Tree tree;
  Nearest nearest;
  Source source;
  Order order; // processing order (empty: as given)
  Target target;
  Normals normals;
  Previous previous; // previous correspondences (empty: none kept)
  State state;
  History history;
  T sq_cutoff;
  LoopCriteria criteria;
  int iteration;
  bool measure;

  KOKKOS_INLINE_FUNCTION void init(value_type& s) const {
    for (int u = 0; u < N; ++u) s.v[u] = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& a, value_type const& b) const {
    for (int u = 0; u < N; ++u) a.v[u] += b.v[u];
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& a, volatile value_type const& b) const {
    for (int u = 0; u < N; ++u) a.v[u] += b.v[u];
  }
#endif
  KOKKOS_INLINE_FUNCTION bool skip(LoopState const& st) const {
    return measure ? (st.failed || st.first_bad >= 0 || st.region_failed) : st.done != 0;
  }
  /// Inside LoopState's region (bounds of type T, held exactly in double).
  KOKKOS_INLINE_FUNCTION static bool in_region(LoopState const& st, Point<T, 3> const& q) {
    bool in = true;
    for (int d = 0; d < 3; ++d) in = in && double(q[d]) >= st.region_lo[d] && double(q[d]) <= st.region_hi[d];
    return in;
  }

  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, value_type& acc) const {
    LoopState const& st = state();
    if (skip(st)) return;
    std::int64_t const qi = order.extent(0) ? std::int64_t(order(i)) : i;
    Point<T, 3> const q = moved_point<T>(device_transform<double>(st.x), source(qi));
    if (st.check_region && !in_region(st, q)) {
      Kokkos::atomic_fetch_or(&state().left_region, 1);
      return;
    }
    Index const seed = previous.extent(0) ? previous(qi) : Index(-1);
    auto const nb = nearest(tree, q, sq_cutoff, i, seed);
    Index const j = nb.index == empty_slot_index<Index>() ? Index(-1) : nb.index;
    if (previous.extent(0)) previous(qi) = j;
    if (j < 0) return;
    double const c[3] = {st.c[0], st.c[1], st.c[2]};
    if constexpr (Plane) {
      add_plane_pair<T>(acc, q, target(j), normals(j), double(nb.sq_dist), c, 1.0 / st.scale);
    } else {
      add_point_pair<T>(acc, q, target(j), double(nb.sq_dist), c);
    }
  }

  KOKKOS_INLINE_FUNCTION Step solve(value_type const& s, LoopState const& st, bool singular_values) const {
    if constexpr (Plane) {
      (void)singular_values;
      return solve_point_to_plane(s, st.c, st.scale, criteria.degenerate_ratio);
    } else {
      return solve_point_to_point(s, st.c, singular_values);
    }
  }

  /// The state is read once into registers and written back once: read
  /// in place, each field's load waited behind the stores before it.
  /// left_region is read atomically: other threads set it, and this
  /// thread's cache may hold the line from the start of the kernel.
  KOKKOS_INLINE_FUNCTION void final(value_type& s) const {
    LoopState st = state();
    st.left_region = Kokkos::atomic_fetch_add(&state().left_region, 0);
    if (skip(st)) return;
    update(s, st);
    state() = st;
  }

  KOKKOS_INLINE_FUNCTION void update(value_type& s, LoopState& st) const {
    if (st.left_region) { // the results do not hold: the caller starts again
      st.region_failed = st.done = 1;
      return;
    }
    Step const step = solve(s, st, measure);
    if (step.count < 3) { // fewer than 3 correspondences: the host reports it
      st.failed = 1;
      st.failed_iteration = measure ? st.iterations : iteration;
      st.failed_count = step.count;
      st.done = 1;
      return;
    }
    double const rmse = ::sqrt(step.sq_error);
    if (measure) {
      st.rmse = rmse;
      st.count = step.count;
      for (int u = 0; u < 3; ++u) {
        st.singular_values[u] = step.singular_values[u];
        st.weakest_axis[u] = step.weakest_axis[u];
      }
      st.largest_eigenvalue = step.largest_eigenvalue;
      return;
    }
    history(iteration) = rmse;
    st.history = iteration + 1;
    double const previous_rmse = st.previous_rmse;
    if (previous_rmse >= 0 && ::fabs(previous_rmse - rmse) <= criteria.relative_rmse * previous_rmse) {
      st.converged = st.done = 1;
      return;
    }
    st.previous_rmse = rmse;
    st.x = step.increment * st.x;
    st.iterations = iteration + 1;
    // the increment's motion of c: its translation about the reference point
    double moved_c[3];
    step.increment.apply(st.c, moved_c);
    double const dc = ::sqrt((moved_c[0] - st.c[0]) * (moved_c[0] - st.c[0]) +
                             (moved_c[1] - st.c[1]) * (moved_c[1] - st.c[1]) +
                             (moved_c[2] - st.c[2]) * (moved_c[2] - st.c[2]));
    if (step.increment.angle() <= criteria.rotation_epsilon && dc <= criteria.translation_epsilon)
      st.converged = st.done = 1;
  }
};

} // namespace kdforge::kernels::registration
