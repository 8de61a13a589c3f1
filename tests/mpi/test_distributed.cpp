// The distributed tree against one tree over the union of all ranks'
// points (gathered on every rank): kNN (k = 1, 8), closest point, radius
// count and radius search, for decompositions random, slabs, all on one
// rank, an empty rank, duplicates split across ranks, clusters far apart,
// queries on one rank only, caller ids; bad input (NaN on one rank: every
// rank throws the same error, nobody hangs); each allocation of each
// operation failing on one rank (every rank throws OutOfMemoryError).
// Results must be identical: global indices, ranks, local indices and
// squared distances, ties included. Run with any number of ranks (ctest: 1
// to 4).
#include <doctest/doctest.h>

#include <kdforge/build_split_sort.hpp>
#include <kdforge/distributed_tree.hpp>
#include <kdforge/kdforge.hpp>

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;
using MS = Exec::memory_space;
using P3 = kdforge::Point<float, 3>;

int comm_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int comm_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

template <class T>
Kokkos::View<T*, MS> device(std::vector<T> const& v, char const* label = "test") {
  Kokkos::View<T*, MS> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), v.size());
  Kokkos::deep_copy(d, Kokkos::View<T const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.size()));
  return d;
}

template <class V>
auto host(V const& v) {
  auto h = Kokkos::create_mirror_view(v);
  Kokkos::deep_copy(h, v);
  return h;
}

/// Every rank's values, concatenated in rank order.
template <class T>
std::vector<T> allgatherv(std::vector<T> const& mine) {
  int const P = comm_size();
  int n = int(mine.size() * sizeof(T));
  std::size_t const np = std::size_t(P);
  std::vector<int> counts(np), displ(np, 0);
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  for (int p = 1; p < P; ++p) displ[std::size_t(p)] = displ[std::size_t(p) - 1] + counts[std::size_t(p) - 1];
  std::vector<T> all(std::size_t((displ.back() + counts.back()) / int(sizeof(T))));
  MPI_Allgatherv(mine.data(), n, MPI_BYTE, all.data(), counts.data(), displ.data(), MPI_BYTE, MPI_COMM_WORLD);
  return all;
}

/// Whether every rank's `ok` holds (a check that cannot pass on one rank
/// while another fails silently).
bool all_ranks(bool ok) {
  int v = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

enum class Split { random, slabs, first_rank, last_rank, empty_second, duplicates, far_apart };

char const* name(Split s) {
  switch (s) {
  case Split::random: return "random";
  case Split::slabs: return "slabs";
  case Split::first_rank: return "all on rank 0";
  case Split::last_rank: return "all on the last rank";
  case Split::empty_second: return "rank 1 empty";
  case Split::duplicates: return "duplicates across ranks";
  case Split::far_apart: return "clusters far apart";
  }
  return "?";
}

/// This rank's points of a global set of n points (the same on every rank,
/// seeded), decomposed by `split`.
std::vector<P3> my_points(Split split, std::size_t n, std::uint64_t seed) {
  int const P = comm_size(), me = comm_rank();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<P3> mine;
  for (std::size_t i = 0; i < n; ++i) {
    P3 p{{u(rng), u(rng), u(rng)}};
    int owner = int(rng() % std::uint64_t(P));
    switch (split) {
    case Split::random: break;
    case Split::slabs: owner = std::min(P - 1, int(p[0] * float(P))); break;
    case Split::first_rank: owner = 0; break;
    case Split::last_rank: owner = P - 1; break;
    case Split::empty_second:
      if (P > 1 && owner == 1) owner = 0;
      break;
    case Split::duplicates: // 7 distinct points, each copy on any rank
      for (int d = 0; d < 3; ++d) p[d] = float(rng() % 7) / 7.f;
      break;
    case Split::far_apart: { // each rank's points in two clusters, 1e4 apart
      int const c = int(rng() % 2);
      for (int d = 0; d < 3; ++d) p[d] = p[d] * 0.1f + 1.0e4f * float(2 * owner + c) * (d == 0 ? 1.f : 0.f);
      break;
    }
    }
    if (owner == me) mine.push_back(p);
  }
  return mine;
}

/// Queries of this rank: uniform over the points' domain, and for far-apart
/// clusters between and beside them too.
std::vector<P3> my_queries(Split split, std::size_t m, std::uint64_t seed) {
  int const P = comm_size();
  std::mt19937_64 rng(seed + 1000 * std::uint64_t(comm_rank()));
  std::uniform_real_distribution<float> u(0.f, 1.f);
  std::vector<P3> q(m);
  for (auto& p : q) {
    for (int d = 0; d < 3; ++d) p[d] = u(rng) * 1.2f - 0.1f;
    if (split == Split::far_apart) p[0] = (u(rng) * float(2 * P) - 0.25f) * 1.0e4f;
  }
  return q;
}

/// The union's tree (rank-major order) and the offsets of the ranks.
struct Reference {
  std::vector<P3> all;
  std::vector<std::int64_t> offsets;
  kdforge::LeftBalancedTree<MS, float, 3> tree;
};

Reference reference(std::vector<P3> const& mine) {
  Reference r;
  r.all = allgatherv(mine);
  auto const sizes = allgatherv(std::vector<std::int64_t>{std::int64_t(mine.size())});
  r.offsets.assign(sizes.size() + 1, 0);
  for (std::size_t p = 0; p < sizes.size(); ++p) r.offsets[p + 1] = r.offsets[p] + sizes[p];
  r.tree = kdforge::build_left_balanced(Exec{}, device(r.all, "union"));
  return r;
}

/// kNN rows equal to the reference's, and (rank, index) consistent with the
/// global index.
template <class Got, class Want>
bool same_knn(Got const& got, Want const& want, std::vector<std::int64_t> const& offsets, std::string const& what) {
  auto gr = host(got.ranks);
  auto gi = host(got.indices);
  auto gg = host(got.global_indices);
  auto gd = host(got.sq_distances);
  auto wi = host(want.indices);
  auto wd = host(want.sq_distances);
  bool ok = gg.extent(0) == wi.extent(0) && gg.extent(1) == wi.extent(1);
  for (std::size_t i = 0; ok && i < wi.extent(0); ++i)
    for (std::size_t j = 0; j < wi.extent(1); ++j) {
      std::int64_t const want_g = wi(i, j);
      bool const here = gg(i, j) == want_g && gd(i, j) == wd(i, j) &&
                        (want_g < 0 ? gr(i, j) == -1 && gi(i, j) == -1
                                    : gr(i, j) >= 0 && offsets[std::size_t(gr(i, j))] + gi(i, j) == want_g);
      if (!here) {
        MESSAGE(what << ": query " << i << " slot " << j << ": got (" << gr(i, j) << ", " << gi(i, j) << ", "
                     << gg(i, j) << ", " << gd(i, j) << "), want (" << want_g << ", " << wd(i, j) << ")");
        ok = false;
        break;
      }
    }
  return ok;
}

template <class Got, class Want>
bool same_closest(Got const& got, Want const& want, std::vector<std::int64_t> const& offsets) {
  auto gr = host(got.ranks);
  auto gi = host(got.indices);
  auto gg = host(got.global_indices);
  auto gd = host(got.sq_distances);
  auto wi = host(want.indices);
  auto wd = host(want.sq_distances);
  if (gg.extent(0) != wi.extent(0)) return false;
  for (std::size_t i = 0; i < wi.extent(0); ++i) {
    bool const here = gg(i) == std::int64_t(wi(i)) && gd(i) == wd(i) &&
                      (wi(i) < 0 ? gr(i) == -1 : offsets[std::size_t(gr(i))] + gi(i) == std::int64_t(wi(i)));
    if (!here) {
      MESSAGE("closest: query " << i << ": got " << gg(i) << " " << gd(i) << ", want " << wi(i) << " " << wd(i));
      return false;
    }
  }
  return true;
}

/// CSR rows equal (sorted: entry by entry; unsorted: as sets of (global
/// index, distance)).
template <class Got, class Want>
bool same_rows(Got const& got, Want const& want, bool sorted, std::vector<std::int64_t> const& offsets) {
  auto go = host(got.offsets);
  auto gg = host(got.global_indices);
  auto gr = host(got.ranks);
  auto gi = host(got.indices);
  auto gd = host(got.sq_distances);
  auto wo = host(want.offsets);
  auto wi = host(want.indices);
  auto wd = host(want.sq_distances);
  if (go.extent(0) != wo.extent(0)) return false;
  for (std::size_t q = 0; q + 1 < wo.extent(0); ++q) {
    if (go(q) != wo(q) || go(q + 1) != wo(q + 1)) {
      MESSAGE("radius: query " << q << " has " << go(q + 1) - go(q) << " neighbours, want " << wo(q + 1) - wo(q));
      return false;
    }
    std::vector<std::pair<std::int64_t, float>> a, b;
    for (auto e = go(q); e < go(q + 1); ++e) {
      if (offsets[std::size_t(gr(e))] + gi(e) != gg(e)) return false;
      a.emplace_back(gg(e), gd(e));
    }
    for (auto e = wo(q); e < wo(q + 1); ++e) b.emplace_back(std::int64_t(wi(e)), wd(e));
    if (!sorted) {
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
    }
    if (a != b) {
      MESSAGE("radius: query " << q << " differs");
      return false;
    }
  }
  return true;
}

/// All operations of one decomposition against the reference.
template <class DTree>
void check_all(DTree const& tree, Reference const& ref, std::vector<P3> const& queries, std::string const& what,
               float radius) {
  Exec exec;
  auto q = device(queries, "queries");
  for (int k : {1, 8}) {
    auto got = kdforge::knn(exec, tree, q, k);
    auto want = kdforge::knn(exec, ref.tree, q, k);
    CHECK_MESSAGE(all_ranks(same_knn(got, want, ref.offsets, what)), what, ": knn k = ", k);
  }
  {
    auto got = kdforge::closest_point(exec, tree, q);
    auto want = kdforge::closest_point(exec, ref.tree, q);
    CHECK_MESSAGE(all_ranks(same_closest(got, want, ref.offsets)), what, ": closest point");
  }
  {
    auto got = kdforge::radius_count(exec, tree, q, radius);
    auto want = kdforge::radius_count(exec, ref.tree, q, radius);
    auto g = host(got);
    auto w = host(want);
    bool ok = g.extent(0) == w.extent(0);
    for (std::size_t i = 0; ok && i < w.extent(0); ++i) ok = g(i) == w(i);
    CHECK_MESSAGE(all_ranks(ok), what, ": radius count");
  }
  for (int variant = 0; variant < 3; ++variant) {
    kdforge::RadiusOptions ro;
    ro.sort = variant == 1;
    if (variant == 2) ro.max_neighbors = 5; // capped rows: the nearest 5, sorted
    auto got = kdforge::radius_search(exec, tree, q, radius, ro);
    auto want = kdforge::radius_search(exec, ref.tree, q, radius, ro);
    CHECK_MESSAGE(all_ranks(same_rows(got, want, variant != 0, ref.offsets)), what, ": radius search, variant ", variant);
  }
}

std::string error_of(std::function<void()> const& f) {
  try {
    f();
  } catch (kdforge::Error const& e) {
    return e.what();
  }
  return "";
}

/// Whether every rank holds the same string.
bool same_everywhere(std::string const& s) {
  auto const all = allgatherv(std::vector<char>(s.begin(), s.end()));
  auto const lengths = allgatherv(std::vector<std::size_t>{s.size()});
  for (auto l : lengths)
    if (l != s.size()) return false;
  for (std::size_t p = 0; p < lengths.size(); ++p)
    if (!std::equal(s.begin(), s.end(), all.begin() + std::ptrdiff_t(p * s.size()))) return false;
  return true;
}

} // namespace

TEST_CASE("distributed queries equal one tree over the union, for every decomposition") {
  for (Split split : {Split::random, Split::slabs, Split::first_rank, Split::last_rank, Split::empty_second,
                      Split::duplicates, Split::far_apart}) {
    auto const points = my_points(split, 2000, 7);
    auto const ref = reference(points);
    auto const queries = my_queries(split, 150, 11);
    auto tree = kdforge::build_distributed_tree(Exec{}, MPI_COMM_WORLD, device(points, "points"));
    CHECK(tree.size() == std::int64_t(ref.all.size()));
    float const radius = split == Split::duplicates ? 0.2f : 0.1f;
    check_all(tree, ref, queries, name(split), radius);
  }
}

TEST_CASE("distributed queries: one rank asks, the others have no queries") {
  auto const points = my_points(Split::slabs, 1500, 3);
  auto const ref = reference(points);
  auto queries = my_queries(Split::slabs, 200, 5);
  if (comm_rank() != comm_size() - 1) queries.clear();
  auto tree = kdforge::build_distributed_tree(Exec{}, MPI_COMM_WORLD, device(points, "points"));
  check_all(tree, ref, queries, "queries on the last rank", 0.1f);
}

TEST_CASE("distributed queries: one box per rank, a split-sort local tree, cutoff radius") {
  auto const points = my_points(Split::slabs, 1500, 13);
  auto const ref = reference(points);
  auto const queries = my_queries(Split::slabs, 150, 17);
  kdforge::DistributedOptions one_box;
  one_box.box_levels = 0;
  auto tree = kdforge::build_distributed_tree(Exec{}, MPI_COMM_WORLD, device(points, "points"), kdforge::BuildOptions{}, one_box);
  check_all(tree, ref, queries, "one box per rank", 0.1f);
  auto median = kdforge::build_distributed_tree(
      Exec{}, MPI_COMM_WORLD, device(points, "points"),
      [](auto const& exec, auto const& pts) { return kdforge::build_split_sort(exec, pts); });
  check_all(median, ref, queries, "split-sort local trees", 0.1f);

  kdforge::QueryOptions cut;
  cut.cutoff_radius = 0.05;
  auto q = device(queries, "queries");
  auto got = kdforge::knn(Exec{}, tree, q, 8, cut);
  auto want = kdforge::knn(Exec{}, ref.tree, q, 8, cut);
  CHECK(all_ranks(same_knn(got, want, ref.offsets, "cutoff")));
}

TEST_CASE("distributed queries with caller ids: ties go to the smaller id") {
  int const P = comm_size();
  // duplicates everywhere, and ids a permutation of the global order
  auto const points = my_points(Split::duplicates, 1200, 23);
  auto const all = allgatherv(points);
  auto const sizes = allgatherv(std::vector<std::int64_t>{std::int64_t(points.size())});
  std::int64_t first = 0;
  for (int p = 0; p < comm_rank(); ++p) first += sizes[std::size_t(p)];
  std::vector<std::int64_t> perm(all.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(29));
  std::vector<std::int64_t> ids(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) ids[i] = 1000 + 3 * perm[std::size_t(first) + i]; // sparse ids
  // the reference: the union ordered by id
  std::vector<P3> by_id(all.size());
  for (std::size_t g = 0; g < all.size(); ++g) by_id[std::size_t(perm[g])] = all[g];
  auto ref_tree = kdforge::build_left_balanced(Exec{}, device(by_id, "by id"));
  auto tree = kdforge::build_distributed_tree(Exec{}, MPI_COMM_WORLD, device(points, "points"), device(ids, "ids"));
  CHECK(tree.has_global_ids());
  auto const queries = my_queries(Split::duplicates, 100, 31);
  auto q = device(queries, "queries");
  auto got = kdforge::knn(Exec{}, tree, q, 8);
  auto want = kdforge::knn(Exec{}, ref_tree, q, 8);
  auto gg = host(got.global_indices);
  auto gr = host(got.ranks);
  auto gi = host(got.indices);
  auto gd = host(got.sq_distances);
  auto wi = host(want.indices);
  auto wd = host(want.sq_distances);
  auto const all_ids = allgatherv(ids);
  bool ok = true;
  for (std::size_t i = 0; i < wi.extent(0); ++i)
    for (std::size_t j = 0; j < wi.extent(1); ++j) {
      std::int64_t const want_id = wi(i, j) < 0 ? -1 : 1000 + 3 * std::int64_t(wi(i, j));
      // the (rank, index) named holds that id
      std::int64_t off = 0;
      for (int p = 0; p < gr(i, j); ++p) off += sizes[std::size_t(p)];
      ok = ok && gg(i, j) == want_id && gd(i, j) == wd(i, j) && all_ids[std::size_t(off + gi(i, j))] == want_id;
    }
  CHECK(all_ranks(ok));
  (void)P;
}

TEST_CASE("distributed tree: NaN on one rank, every rank throws the same error") {
  int const P = comm_size(), me = comm_rank();
  auto points = my_points(Split::random, 600, 41);
  if (me == P - 1) {
    points.push_back(P3{{0.5f, std::numeric_limits<float>::quiet_NaN(), 0.5f}});
  }
  auto const build_error = error_of([&] { kdforge::build_distributed_tree(Exec{}, MPI_COMM_WORLD, device(points, "points")); });
  CHECK(all_ranks(!build_error.empty()));
  CHECK(all_ranks(same_everywhere(build_error)));
  CHECK(all_ranks(build_error.find("rank " + std::to_string(P - 1)) != std::string::npos));

  // dropped instead: the tree works, and its indices skip the NaN point
  kdforge::BuildOptions drop;
  drop.non_finite = kdforge::NonFinitePolicy::drop;
  auto tree = kdforge::build_distributed_tree(Exec{}, MPI_COMM_WORLD, device(points, "points"), drop);
  auto const ref_all = allgatherv(points);
  auto ref_tree = kdforge::build_left_balanced(Exec{}, device(ref_all, "union"), drop);
  auto const queries = my_queries(Split::random, 50, 43);
  auto got = kdforge::knn(Exec{}, tree, device(queries, "q"), 8);
  auto want = kdforge::knn(Exec{}, ref_tree, device(queries, "q"), 8);
  std::vector<std::int64_t> offsets(std::size_t(P) + 1, 0);
  for (int p = 0; p < P; ++p) offsets[std::size_t(p) + 1] = offsets[std::size_t(p)] + tree.input_size(p);
  CHECK(all_ranks(same_knn(got, want, offsets, "NaN dropped")));

  // a NaN query on one rank only: every rank throws, and the tree still answers after
  auto bad = queries;
  if (me == 0) bad[7][2] = std::numeric_limits<float>::infinity();
  auto const query_error = error_of([&] { kdforge::knn(Exec{}, tree, device(bad, "bad"), 4); });
  CHECK(all_ranks(!query_error.empty() && same_everywhere(query_error)));
  CHECK(all_ranks(query_error.find("query 7 of rank 0") != std::string::npos));
  auto const radius_error = error_of([&] { kdforge::radius_search(Exec{}, tree, device(bad, "bad"), 0.1); });
  CHECK(all_ranks(!radius_error.empty() && same_everywhere(radius_error)));
  auto const k_error = error_of([&] { kdforge::knn(Exec{}, tree, device(queries, "q"), me == 0 ? 0 : 4); });
  CHECK(all_ranks(!k_error.empty() && same_everywhere(k_error)));
  auto again = kdforge::knn(Exec{}, tree, device(queries, "q"), 8);
  CHECK(all_ranks(same_knn(again, want, offsets, "after errors")));
}

TEST_CASE("distributed tree: empty everywhere, one point, and the statistics") {
  std::vector<P3> none;
  auto empty = kdforge::build_distributed_tree(Exec{}, MPI_COMM_WORLD, device(none, "none"));
  CHECK(empty.size() == 0);
  auto const queries = my_queries(Split::random, 20, 47);
  auto nn = kdforge::knn(Exec{}, empty, device(queries, "q"), 3);
  auto r = host(nn.ranks);
  bool ok = true;
  for (std::size_t i = 0; i < r.extent(0); ++i)
    for (std::size_t j = 0; j < r.extent(1); ++j) ok = ok && r(i, j) == -1;
  CHECK(all_ranks(ok));

  std::vector<P3> one;
  if (comm_rank() == comm_size() / 2) one.push_back(P3{{0.25f, 0.5f, 0.75f}});
  auto single = kdforge::build_distributed_tree(Exec{}, MPI_COMM_WORLD, device(one, "one"));
  auto cp = kdforge::closest_point(Exec{}, single, device(queries, "q"));
  auto g = host(cp.global_indices);
  auto rk = host(cp.ranks);
  ok = true;
  for (std::size_t i = 0; i < g.extent(0); ++i) ok = ok && g(i) == 0 && rk(i) == comm_size() / 2;
  CHECK(all_ranks(ok));
  auto const& st = single.last_stats();
  CHECK(st.phases == 2);
  CHECK(st.phase2_s > 0); // timed: fences around it
  CHECK(st.phase2_s <= st.total_s());
  CHECK(st.queries == 20);
  CHECK(st.sent_pairs == 20); // each query to the one rank with a point, once
  CHECK(st.remote_pairs == (comm_rank() == comm_size() / 2 ? 0 : 20));
  if (comm_rank() != comm_size() / 2) CHECK(st.bytes_sent >= 20 * std::int64_t(sizeof(P3)));
  (void)kdforge::radius_count(Exec{}, single, device(queries, "q"), 0.5);
  CHECK(single.last_stats().phases == 1);
  CHECK(single.last_stats().phase2_s == 0);
}

/// What `f` threw on this rank: "oom: <message>", "error: <message>", or "".
std::string outcome_of(std::function<void()> const& f) {
  try {
    f();
  } catch (kdforge::OutOfMemoryError const& e) {
    return std::string("oom: ") + e.what();
  } catch (kdforge::Error const& e) {
    return std::string("error: ") + e.what();
  }
  return "";
}

/// The bytes of a View, copied to the host.
template <class V>
std::string bytes_of(V const& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, v);
  return std::string(reinterpret_cast<char const*>(h.data()), h.span() * sizeof(typename V::value_type));
}

TEST_CASE("distributed tree: each allocation failing on one rank makes every rank throw OutOfMemoryError") {
  // Every allocation kdforge makes on the failing rank during a call fails
  // in turn (and every one after it). A rank that threw where the others
  // went on to an exchange would leave them waiting: the test would hang.
  // The results passed in must stay as they were on every rank: each call
  // holds the results of queries A and fails on queries B (as many: the
  // Views would be written in place) or C (more: new Views).
  int const P = comm_size(), me = comm_rank();
  int const failing = P - 1;
  Exec exec;
  auto const points = my_points(Split::random, 800, 61);
  auto const ref = reference(points);
  auto const queries = my_queries(Split::random, 70, 63);
  auto const qa = device(queries, "queries A");
  auto const qb = device(my_queries(Split::random, 70, 67), "queries B");
  auto const qc = device(my_queries(Split::random, 90, 69), "queries C");
  auto const dp = device(points, "points");
  auto tree = kdforge::build_distributed_tree(exec, MPI_COMM_WORLD, dp);
  using Tree = decltype(tree);
  kdforge::DistributedKnnResult<MS, float, Tree::index_type> nn;
  kdforge::DistributedClosestResult<MS, float, Tree::index_type> cp;
  Kokkos::View<std::int64_t*, MS> counts;
  kdforge::DistributedRadiusResult<MS, float, Tree::index_type> rows;
  kdforge::RadiusOptions sorted;
  sorted.sort = true;

  auto pick = [&](int b) { return b == 0 ? qa : b == 1 ? qb : qc; };
  struct Op {
    char const* name;
    std::function<void(int)> call; // on queries A, B or C
    std::function<std::string()> bytes; // of the result passed in
  };
  std::vector<Op> const ops = {
      {"build_distributed_tree", [&](int) { (void)kdforge::build_distributed_tree(exec, MPI_COMM_WORLD, dp); },
       [&] { return std::string(); }},
      {"knn", [&](int b) { kdforge::knn(exec, tree, pick(b), 8, nn); },
       [&] { return bytes_of(nn.ranks) + bytes_of(nn.indices) + bytes_of(nn.global_indices) + bytes_of(nn.sq_distances); }},
      {"closest_point", [&](int b) { kdforge::closest_point(exec, tree, pick(b), cp); },
       [&] { return bytes_of(cp.ranks) + bytes_of(cp.indices) + bytes_of(cp.global_indices) + bytes_of(cp.sq_distances); }},
      {"radius_count", [&](int b) { kdforge::radius_count(exec, tree, pick(b), 0.1, counts); },
       [&] { return bytes_of(counts); }},
      {"radius_search", [&](int b) { kdforge::radius_search(exec, tree, pick(b), 0.1, rows, sorted); },
       [&] {
         return bytes_of(rows.offsets) + bytes_of(rows.ranks) + bytes_of(rows.indices) + bytes_of(rows.global_indices) +
                bytes_of(rows.sq_distances);
       }},
  };
  for (auto const& op : ops) for (int other : {1, 2}) {
    std::string const name = op.name;
    CAPTURE(name);
    CAPTURE(other);
    op.call(0);
    std::string const kept = op.bytes();
    CHECK(all_ranks(name == "build_distributed_tree" || kept != (op.call(other), op.bytes())));
    op.call(0);
    // the j-th allocation fails, j = 0, 1, ... until the call needs fewer;
    // each call starts without the tree's buffers, so it allocates them all
    int failures = 0;
    for (std::int64_t j = 0;; ++j) {
      REQUIRE(j < 2000);
      CAPTURE(j);
      tree.release_scratch();
      if (me == failing) kdforge::detail::fail_allocation_after(j);
      std::string const outcome = outcome_of([&] { op.call(other); });
      kdforge::detail::fail_allocation_after(-1);
      if (all_ranks(outcome.empty())) break;
      bool const oom = outcome.rfind("oom: ", 0) == 0 && outcome.find("out of memory") != std::string::npos &&
                       outcome.find("[rank " + std::to_string(failing) + " of ") != std::string::npos;
      CAPTURE(outcome);
      CHECK(all_ranks(oom));
      CHECK(all_ranks(same_everywhere(outcome)));
      CHECK(all_ranks(op.bytes() == kept));
      ++failures;
    }
    CHECK(failures >= 3);
  }
  // the tree answers as before
  check_all(tree, ref, queries, "after failed allocations", 0.1f);
}

TEST_CASE("distributed tree: repeated calls reuse the tree's buffers, and release_scratch frees them") {
  // A call of the sizes of an earlier one allocates nothing but its
  // results' Views where they change size: the routes, exchanges and rows
  // (closest point's too) live in the tree between calls. Released, they
  // are allocated again, and the answers never change.
  Exec exec;
  auto const points = my_points(Split::random, 900, 71);
  auto const ref = reference(points);
  auto const queries = my_queries(Split::random, 80, 73);
  auto const dq = device(queries, "queries");
  auto const more = device(my_queries(Split::random, 120, 75), "more queries");
  auto tree = kdforge::build_distributed_tree(exec, MPI_COMM_WORLD, device(points, "points"));
  using Tree = decltype(tree);
  kdforge::DistributedKnnResult<MS, float, Tree::index_type> nn;
  Kokkos::View<std::int64_t*, MS> counts;
  kdforge::DistributedRadiusResult<MS, float, Tree::index_type> rows;
  kdforge::RadiusOptions sorted;
  sorted.sort = true;
  auto allocations = [](auto const& f) {
    std::int64_t const before = kdforge::detail::allocations_made();
    f();
    return kdforge::detail::allocations_made() - before;
  };
  auto knn = [&](auto const& q) { kdforge::knn(exec, tree, q, 8, nn); };
  CHECK(allocations([&] { knn(dq); }) > 0);
  std::string const first = bytes_of(nn.global_indices) + bytes_of(nn.sq_distances);
  CHECK(tree.scratch_bytes() > 0);
  CHECK(all_ranks(allocations([&] { knn(dq); }) == 0));
  CHECK(bytes_of(nn.global_indices) + bytes_of(nn.sq_distances) == first);
  kdforge::radius_count(exec, tree, dq, 0.1, counts);
  CHECK(all_ranks(allocations([&] { kdforge::radius_count(exec, tree, dq, 0.1, counts); }) == 0));
  // closest point's own rows (copied into its result) are kept too
  kdforge::DistributedClosestResult<MS, float, Tree::index_type> cp;
  kdforge::closest_point(exec, tree, dq, cp);
  std::string const closest_first = bytes_of(cp.global_indices) + bytes_of(cp.sq_distances);
  CHECK(all_ranks(allocations([&] { kdforge::closest_point(exec, tree, dq, cp); }) == 0));
  CHECK(bytes_of(cp.global_indices) + bytes_of(cp.sq_distances) == closest_first);
  // more queries: the buffers grow to fit both sizes; then the first
  // queries allocate only their results' four Views (their extents changed)
  knn(more);
  check_all(tree, ref, queries, "after a larger call", 0.1f);
  knn(dq);
  knn(more);
  std::size_t const grown = tree.scratch_bytes();
  CHECK(all_ranks(allocations([&] { knn(dq); }) == 4));
  CHECK(bytes_of(nn.global_indices) + bytes_of(nn.sq_distances) == first);
  CHECK(tree.scratch_bytes() == grown);
  // the kept buffers do not leak into results: a later call leaves them be
  auto const kept = nn;
  std::string const kept_bytes = bytes_of(kept.global_indices) + bytes_of(kept.sq_distances);
  kdforge::DistributedKnnResult<MS, float, Tree::index_type> other;
  kdforge::knn(exec, tree, more, 8, other);
  kdforge::radius_search(exec, tree, more, 0.1, rows, sorted);
  CHECK(bytes_of(kept.global_indices) + bytes_of(kept.sq_distances) == kept_bytes);
  tree.release_scratch();
  CHECK(tree.scratch_bytes() == 0);
  CHECK(all_ranks(allocations([&] { knn(dq); }) > 0));
  CHECK(bytes_of(nn.global_indices) + bytes_of(nn.sq_distances) == first);
  check_all(tree, ref, queries, "after release_scratch", 0.1f);
}

// A rule that sends query i to i % 7 ranks (some more than once): more
// destinations than the count pass keeps (route_cached) for some queries.
struct ManyDestinations {
  int P;
  template <class Emit>
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, Emit& emit) const {
    for (std::int64_t j = 0; j < i % 7; ++j) emit(int((i + j) % P));
  }
};

TEST_CASE("distributed routes: queries with more destinations than the count pass keeps") {
  static_assert(kdforge::distributed::route_cached < 6, "the rule must exceed what the count pass keeps");
  Exec exec;
  kdforge::distributed::Communicator<MS> comm(MPI_COMM_WORLD, kdforge::GpuAwareMpi::automatic);
  kdforge::distributed::Scratch<MS> scratch;
  int const P = comm_size();
  std::int64_t const m = 1000;
  for (int call = 0; call < 2; ++call) { // the second with the kept buffers
    scratch.begin();
    auto const r = kdforge::distributed::route(exec, comm, ManyDestinations{P}, m, scratch);
    auto const offsets = host(r.query_offsets);
    auto const dest = host(r.dest);
    auto const pair_query = host(r.pair_query);
    auto const sorted = host(r.sorted);
    auto const position = host(r.position);
    bool rows = true;
    std::vector<std::int64_t> per_rank(std::size_t(P), 0);
    for (std::int64_t i = 0; i < m; ++i) {
      rows = rows && offsets(i + 1) - offsets(i) == i % 7;
      for (std::int64_t j = 0; j < i % 7; ++j) {
        std::int64_t const pos = offsets(i) + j;
        rows = rows && dest(pos) == int((i + j) % P) && pair_query(pos) == i;
        ++per_rank[std::size_t((i + j) % P)];
      }
    }
    CHECK(rows);
    CHECK(r.pairs == offsets(m));
    CHECK(r.send_counts == per_rank);
    // sorted by rank, stably: each rank's pairs in pair order
    bool order = true;
    for (std::int64_t s = 0; s + 1 < r.pairs; ++s) {
      std::int64_t const a = sorted(s), b = sorted(s + 1);
      order = order && (dest(a) < dest(b) || (dest(a) == dest(b) && a < b));
    }
    for (std::int64_t s = 0; s < r.pairs; ++s) order = order && position(sorted(s)) == s;
    CHECK(order);
  }
}

// The grid of the ranks' boxes (top.hpp) is a shortcut: each rule must name
// the same ranks in the same order with it as by the scan of every rank.
// Host Views and one process: no communication is involved.
TEST_CASE("distributed routes: the grid of ranks' boxes names the same ranks as the scan of all ranks") {
  namespace dt = kdforge::distributed;
  using HS = Kokkos::HostSpace;
  using Box3 = kdforge::Box<float, 3>;
  std::mt19937 rng(29);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  auto set = [](Box3& b, std::array<float, 3> lo, std::array<float, 3> hi) {
    for (int d = 0; d < 3; ++d) {
      b.lo[d] = lo[std::size_t(d)];
      b.hi[d] = hi[std::size_t(d)];
    }
  };
  for (int layout = 0; layout < 3; ++layout) {
    CAPTURE(layout);
    // 0: a 4 x 3 x 2 grid of slabs (faces shared); 1: the same, grown to
    // overlap, one rank empty, one a point, one far off; 2: a flat
    // decomposition (every box at z = 0.5: no width in z)
    std::vector<Box3> boxes;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 2; ++k) {
          Box3 b;
          set(b, {i / 4.0f, j / 3.0f, k / 2.0f}, {(i + 1) / 4.0f, (j + 1) / 3.0f, (k + 1) / 2.0f});
          if (layout == 1)
            for (int d = 0; d < 3; ++d) {
              b.lo[d] -= 0.03f * u(rng);
              b.hi[d] += 0.03f * u(rng);
            }
          if (layout == 2) b.lo[2] = b.hi[2] = 0.5f;
          boxes.push_back(b);
        }
    std::vector<std::int64_t> sizes(boxes.size(), 100);
    if (layout == 1) {
      sizes[5] = 0;
      set(boxes[7], {0.3f, 0.3f, 0.3f}, {0.3f, 0.3f, 0.3f});
      set(boxes[11], {3.0f, 3.0f, 3.0f}, {3.5f, 3.0f, 3.2f});
    }
    int const P = int(boxes.size());
    auto grid = dt::make_rank_grid<HS>(boxes, sizes);
    REQUIRE(grid.cells > 1);
    dt::Top<HS, float, 3> with;
    with.rank_boxes = Kokkos::View<dt::TopBox<float, 3>*, HS>("rank_boxes", std::size_t(P));
    for (int p = 0; p < P; ++p) with.rank_boxes(p) = dt::top_box(boxes[std::size_t(p)]);
    with.sub_boxes = with.rank_boxes;
    with.tree_sizes = Kokkos::View<std::int64_t*, HS>("sizes", std::size_t(P));
    for (int p = 0; p < P; ++p) with.tree_sizes(p) = sizes[std::size_t(p)];
    with.per_rank = 1;
    with.P = P;
    with.grid = grid;
    auto without = with;
    without.grid = dt::RankGrid<HS, 3>{};
    // queries: uniform, on the slabs' faces and corners, on a cell's sides,
    // outside the boxes, and NaN
    std::vector<P3> qs;
    for (int i = 0; i < 3000; ++i) qs.push_back(P3{{1.2f * u(rng) - 0.1f, 1.2f * u(rng) - 0.1f, 1.2f * u(rng) - 0.1f}});
    for (int i = 0; i <= 4; ++i)
      for (int j = 0; j <= 3; ++j)
        for (int k = 0; k <= 2; ++k) qs.push_back(P3{{i / 4.0f, j / 3.0f, k / 2.0f}});
    for (int i = 0; i < 200; ++i) {
      P3 q{{u(rng), u(rng), u(rng)}};
      int const d = i % 3;
      q[d] = float(grid.lo[d] + double(1 + i % std::max(1, grid.n[d] - 1)) * grid.width[d]);
      if (layout == 2) q[2] = 0.5f;
      qs.push_back(q);
    }
    qs.push_back(P3{{std::nanf(""), 0.5f, 0.5f}});
    qs.push_back(P3{{3.2f, 3.0f, 3.1f}});
    Kokkos::View<P3*, HS> q("q", qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) q(i) = qs[i];
    struct Collect {
      std::vector<int>* out;
      void operator()(int p) { out->push_back(p); }
    };
    auto names = [&](auto const& rule, std::int64_t i) {
      std::vector<int> out;
      Collect c{&out};
      rule(i, c);
      return out;
    };
    std::int64_t differ = 0, from_grid = 0;
    for (int me : {0, 7, P - 1}) {
      with.me = without.me = me;
      for (std::int64_t i = 0; i < std::int64_t(qs.size()); ++i) {
        for (float r : {0.0f, 1e-4f, 0.01f, 0.1f, 0.6f}) {
          differ += names(dt::RadiusRule<HS, float, 3>{with, q, r * r}, i) !=
                    names(dt::RadiusRule<HS, float, 3>{without, q, r * r}, i);
          double gap;
          std::int64_t const c = grid.cell(q(i), gap);
          from_grid += c >= 0 && decltype(grid)::settles(gap, double(r * r));
        }
        for (std::int64_t k : {1, 100, 101, 250}) {
          float const inf = std::numeric_limits<float>::infinity();
          differ += names(dt::NearestRule<HS, float, 3>{with, q, k, inf}, i) !=
                    names(dt::NearestRule<HS, float, 3>{without, q, k, inf}, i);
          differ += names(dt::NearestRule<HS, float, 3>{with, q, k, 0.01f}, i) !=
                    names(dt::NearestRule<HS, float, 3>{without, q, k, 0.01f}, i);
        }
      }
    }
    CHECK(differ == 0);
    CHECK(from_grid > 500); // the grid answered, not only the scan
  }
}
