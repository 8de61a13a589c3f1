// Builds a k-d tree over random points and finds each query's 4 nearest
// neighbours, checking the first query against brute force.
#include <kdforge/kdforge.hpp>

#include <cstdio>
#include <random>

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard guard(argc, argv);
  using Exec = Kokkos::DefaultExecutionSpace;
  using P = kdforge::Point<float, 3>;
  int const n = 10000, m = 100, k = 4;
  Kokkos::View<P*, Exec::memory_space> points("points", n), queries("queries", m);
  auto hp = Kokkos::create_mirror_view(points);
  auto hq = Kokkos::create_mirror_view(queries);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (int i = 0; i < n; ++i) hp(i) = P{{u(rng), u(rng), u(rng)}};
  for (int i = 0; i < m; ++i) hq(i) = P{{u(rng), u(rng), u(rng)}};
  Kokkos::deep_copy(points, hp);
  Kokkos::deep_copy(queries, hq);

  auto tree = kdforge::build_left_balanced(Exec{}, points);
  auto result = kdforge::knn(Exec{}, tree, queries, k);
  auto idx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, result.indices);

  int best = 0; // brute force for query 0
  for (int i = 1; i < n; ++i)
    if (kdforge::sq_distance(hq(0), hp(i)) < kdforge::sq_distance(hq(0), hp(best))) best = i;
  std::printf("kdforge %s on %s: query 0 -> %d (brute force %d)\n", kdforge::version(), Exec::name(), idx(0, 0), best);
  return idx(0, 0) == best ? 0 : 1;
}
