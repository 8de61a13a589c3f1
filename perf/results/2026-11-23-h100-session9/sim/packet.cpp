#include <kdforge/kdforge.hpp>
#include <kdforge/kernels/query/morton.hpp>
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
using namespace kdforge;
using T = float; constexpr int D = 3;
using Tree = LeftBalancedTree<Kokkos::HostSpace, T, D>;
struct Lane { T q[D]; T d[16]; int k; T bound() const { return d[k-1]; }
  void ins(T x) { if (x >= d[k-1]) return; int i = k-1; while (i > 0 && d[i-1] > x) { d[i] = d[i-1]; --i; } d[i] = x; } };
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int n = 1000000, m = argc > 3 ? atoi(argv[3]) : 200000; int k = argc > 1 ? atoi(argv[1]) : 8; int mode = argc > 2 ? atoi(argv[2]) : 0;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", 1000000);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < 1000000; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::vector<std::pair<uint32_t,int>> ord(1000000);
  for (int i = 0; i < 1000000; ++i) ord[i] = {kernels::morton_code(qs(i), tree.bounds()) >> 16, i};
  std::stable_sort(ord.begin(), ord.end(), [](auto a, auto b){return a.first < b.first;});
  int N = tree.node_count();
  double loads = 0, pops = 0, lanevisits = 0; long W = m / 32;
  struct E { int s; T split; int dim; };
  for (long w = 0; w < W; ++w) {
    Lane L[32];
    for (int l = 0; l < 32; ++l) { auto q = qs(ord[w*32+l].second); for (int d = 0; d < D; ++d) L[l].q[d] = q[d]; L[l].k = k; for (int i = 0; i < k; ++i) L[l].d[i] = INFINITY; }
    std::vector<E> st; st.push_back({0, 0, -1});
    while (!st.empty()) {
      E e = st.back(); st.pop_back(); ++pops;
      if (e.dim >= 0) { bool any = false; for (int l = 0; l < 32; ++l) { T df = L[l].q[e.dim] - e.split; if (df*df < L[l].bound()) any = true; } if (!any) continue; }
      int s = e.s;
      // descend
      while (s < N) {
        ++loads; auto nd = tree.load(s); int lev = 63 - __builtin_clzll((unsigned long long)s + 1);
        int dim = tree.split_dim(s, lev);
        int cntl = 0;
        for (int l = 0; l < 32; ++l) { T dd = 0; for (int d = 0; d < D; ++d) { T df = L[l].q[d]-nd[d]; dd += df*df; } L[l].ins(dd); lanevisits++; if (L[l].q[dim] < nd[dim]) cntl++; }
        bool leftfirst = mode == 0 ? cntl * 2 >= 32 : (L[0].q[dim] < nd[dim]);
        int nearc = leftfirst ? 2*s+1 : 2*s+2, farc = leftfirst ? 2*s+2 : 2*s+1;
        if (farc < N) st.push_back({farc, nd[dim], dim});
        s = nearc;
      }
    }
  }
  printf("k=%d mode=%d: packet warp iterations (node loads) %.1f per warp, pops %.1f\n", k, mode, loads / W, pops / W);
}
