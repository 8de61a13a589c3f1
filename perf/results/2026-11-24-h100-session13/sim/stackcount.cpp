// Visits and insertions per query of the CPU stack walk (bucket_levels 3), 1M uniform points, Morton-ordered queries.
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
template <class V> struct Count { V& v; long visits = 0, inserts = 0; T bound() const { return v.bound(); } bool done() const { return false; }
  void visit(int i, T d2) { ++visits; if (V::Keys::make(d2, i) < v.c[sizeof(v.c) / sizeof(v.c[0]) - 1]) ++inserts; v.visit(i, d2); } };
template <int CAP> void run(Tree const& tree, Kokkos::View<Point<T,D>*, Kokkos::HostSpace> qs, int k) {
  double vis = 0, ins = 0; int m = qs.extent(0);
  for (int i = 0; i < m; ++i) { SortedCandidates<Tree, CAP> c(tree, k, std::numeric_limits<T>::infinity()); Count<SortedCandidates<Tree, CAP>> v{c}; traverse_stack(tree, qs(i), v, 3); vis += v.visits; ins += v.inserts; }
  printf("stack bl=3 k=%d: visits/query %.1f insertions/query %.1f\n", k, vis / m, ins / m);
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = 131072, n = 1000000;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  run<1>(tree, qs, 1); run<8>(tree, qs, 8); run<16>(tree, qs, 16);
}
