// Callgrind driver: the host stack walk for kNN k = 8 on 1M uniform points, Morton-ordered queries.
#include <kdforge/kdforge.hpp>
#include <kdforge/kernels/query/traversal.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/morton.hpp>
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
using namespace kdforge;
using namespace kdforge::kernels;
using T = float; constexpr int D = 3;
using Tree = LeftBalancedTree<Kokkos::HostSpace, T, D>;
template <class Tr>
__attribute__((noinline)) double run_queries(Tr const& tree, std::vector<Point<T, D>> const& qs) {
  double s = 0;
  for (auto const& q : qs) {
    SortedCandidates<Tr, 8> c(tree, 8, std::numeric_limits<T>::infinity());
    traverse_stack(tree, q, c, 3);
    s += c.bound();
  }
  return s;
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = argc > 1 ? atoi(argv[1]) : 20000, n = 1000000;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  std::vector<Point<T, D>> qs(m);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs[i][d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::sort(qs.begin(), qs.end(), [&](auto const& a, auto const& b) { return morton_code(a, tree.bounds()) < morton_code(b, tree.bounds()); });
  if (argc > 2 && atoi(argv[2]) == 1) printf("%f\n", run_queries(kdforge::detail::FixedSplitTree<Tree, SplitPolicy::round_robin>(tree), qs));
  else printf("%f\n", run_queries(tree, qs));
}
