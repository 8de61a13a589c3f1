#include <kdforge/kdforge.hpp>
#include <kdforge/kernels/query/traversal.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/morton.hpp>
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
#include <array>
using namespace kdforge;
using T = float; constexpr int D = 3;
using Tree = LeftBalancedTree<Kokkos::HostSpace, T, D>;
struct Counting {
  Tree const* t;
  mutable long loads = 0;
  using coordinate_type = T; using index_type = int; using point_type = Point<T, D>;
  using node_type = Tree::node_type; static constexpr int dimension = D;
  int node_count() const { return t->node_count(); }
  bool has_node(int) const { return true; }
  node_type load(int s) const { ++loads; return t->load(s); }
  int split_dim(int s, int l) const { return t->split_dim(s, l); }
};
template <int CAP> struct CountVis : kernels::SortedCandidates<Counting, CAP> {
  long visits = 0;
  using B = kernels::SortedCandidates<Counting, CAP>;
  CountVis(Counting const& c, int k) : B(c, k, std::numeric_limits<T>::infinity()) {}
  void visit(int i, T d2) { ++visits; B::visit(i, d2); }
};
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int n = 1000000, m = 1000000; int k = argc > 1 ? atoi(argv[1]) : 8; int bl = argc > 2 ? atoi(argv[2]) : 2;
  int trav = argc > 3 ? atoi(argv[3]) : 0;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::vector<std::pair<uint32_t,int>> ord(m);
  for (int i = 0; i < m; ++i) ord[i] = {kernels::morton_code(qs(i), tree.bounds()) >> 16, i};
  std::stable_sort(ord.begin(), ord.end(), [](auto a, auto b){return a.first < b.first;});
  std::vector<long> it(m), vis(m);
  Counting c{&tree};
  for (int i = 0; i < m; ++i) {
    int qi = ord[i].second; c.loads = 0;
    CountVis<8> v(c, k);
    if (trav == 0) kernels::traverse_trail(c, qs(qi), v, bl);
    else if (trav == 1) kernels::traverse_stack_free(c, qs(qi), v, bl);
    else kernels::traverse_stack(c, qs(qi), v, bl);
    it[i] = c.loads; vis[i] = v.visits;
  }
  double summax = 0, sum = 0, sumv = 0, summaxv = 0;
  for (int w = 0; w < m / 32; ++w) {
    long mx = 0, mxv = 0;
    for (int l = 0; l < 32; ++l) { mx = std::max(mx, it[w*32+l]); sum += it[w*32+l]; mxv = std::max(mxv, vis[w*32+l]); sumv += vis[w*32+l]; }
    summax += mx; summaxv += mxv;
  }
  int W = m / 32;
  printf("k=%d bl=%d trav=%d: mean iters %.1f, mean warp-max %.1f, ratio %.2f; visits mean %.1f warpmax %.1f\n", k, bl, trav, sum / (W*32.0), summax / W, summax / (sum / 32), sumv/(W*32.0), summaxv/W);
  // Persistent with static round-robin: T threads, thread t does queries t, t+T, ...
  for (long Tn : {65536L, 131072L, 270336L}) {
    std::vector<long> per(Tn, 0);
    for (int i = 0; i < m; ++i) per[i % Tn] += it[i];
    double s2 = 0; for (long w = 0; w < Tn / 32; ++w) { long mx = 0; for (int l = 0; l < 32; ++l) mx = std::max(mx, per[w*32+l]); s2 += mx; }
    printf("  static T=%ld: warp-sum-max/ideal %.2f\n", Tn, s2 / (sum / 32));
  }

  for (long R : {2048L, 4096L, 8192L}) { // resident warps, dynamic fetch
    std::vector<std::array<long,32>> rem(R); long next = 0; double total = 0;
    for (long w = 0; w < R; ++w) for (int l = 0; l < 32; ++l) rem[w][l] = next < m ? it[next++] : 0;
    bool any = true;
    while (any) { any = false;
      for (long w = 0; w < R; ++w) { bool act = false;
        for (int l = 0; l < 32; ++l) if (rem[w][l] > 0) { act = true; if (--rem[w][l] == 0 && next < m) rem[w][l] = it[next++]; }
        if (act) { total += 1; any = true; } } }
    printf("  dynamic R=%ld warps: %.2f\n", R, total / (sum / 32));
  }
}
