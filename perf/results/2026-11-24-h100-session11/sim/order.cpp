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
long g_iters = 0;
struct Counting {
  Tree const* t;
  using coordinate_type = T; using index_type = int; using point_type = Point<T, D>;
  using node_type = Tree::node_type; static constexpr int dimension = D;
  int node_count() const { return t->node_count(); }
  bool has_node(int s) const { return t->has_node(s); }
  node_type load(int s) const { ++g_iters; return t->load(s); }
  int split_dim(int s, int l) const { return t->split_dim(s, l); }
};
template <int CAP>
void run(char const* name, std::vector<std::pair<uint32_t,int>> const& ord, Counting const& c, Kokkos::View<Point<T,D>*, Kokkos::HostSpace> qs, int k) {
  int m = ord.size(); std::vector<long> it(m);
  for (int i = 0; i < m; ++i) {
    int qi = ord[i].second; g_iters = 0;
    SortedCandidates<Counting, CAP> v(c, k, std::numeric_limits<T>::infinity());
    TrailState<int> st; trail_shrinking_run(c, qs(qi), v, 2, st, -1);
    it[i] = g_iters;
  }
  double sum = 0, summax = 0; int W = m / 32;
  for (int w = 0; w < W; ++w) { long mx = 0; for (int l = 0; l < 32; ++l) { mx = std::max(mx, it[w*32+l]); sum += it[w*32+l]; } summax += mx; }
  printf("%-14s k=%d: loads mean %.1f warp-max %.1f\n", name, k, sum / (W*32.0), summax / W);
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = argc > 1 ? atoi(argv[1]) : 200000; int n = argc > 2 ? atoi(argv[2]) : 1000000;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  Counting c{&tree};
  int mortonbits = morton_sort_bits<D>(m);
  std::vector<std::pair<uint32_t,int>> ord(m);
  for (int i = 0; i < m; ++i) ord[i] = {kernels::morton_code(qs(i), tree.bounds()) >> (30 - mortonbits), i};
  std::stable_sort(ord.begin(), ord.end(), [](auto a, auto b){return a.first < b.first;});
  char name[64]; snprintf(name, 64, "morton%d", mortonbits);
  run<1>(name, ord, c, qs, 1); run<8>(name, ord, c, qs, 8);
  for (int i = 0; i < m; ++i) ord[i] = {kernels::morton_code(qs(i), tree.bounds()), i};
  std::stable_sort(ord.begin(), ord.end(), [](auto a, auto b){return a.first < b.first;});
  run<1>("morton30", ord, c, qs, 1); run<8>("morton30", ord, c, qs, 8);
  int L = lb::num_levels(tree.node_count());
  for (int depth : {8, 10, 12, 13, 14, 15, 16, 18}) {
    for (int i = 0; i < m; ++i) {
      int s = 0;
      for (int l = 0; l < depth; ++l) {
        auto p = tree.load(s); int dim = tree.split_dim(s, l);
        int nx = qs(i)[dim] < p[dim] ? 2*s+1 : 2*s+2;
        if (nx >= tree.node_count()) break; // shallower cell
        s = nx;
      }
      // key: the cell's left-to-right position at 'depth' (a shallower stop counts as its leftmost descendant)
      int lvl = lb::highest_bit(uint32_t(s + 1));
      uint32_t key = uint32_t(s + 1 - (1u << lvl)) << (depth - lvl);
      ord[i] = {key, i};
    }
    std::stable_sort(ord.begin(), ord.end(), [](auto a, auto b){return a.first < b.first;});
    snprintf(name, 64, "kd%d", depth);
    run<1>(name, ord, c, qs, 1); run<8>(name, ord, c, qs, 8);
  }
  (void)L;
}
