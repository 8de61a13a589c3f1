// Several queries per GPU thread, one after the other (host simulation): warp iterations per query.
#define main pairs_main
#include "pairs.cpp"
#undef main
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = 1000000, n = 1000000, k = 8;
  std::mt19937 rng(1); std::uniform_real_distribution<float> un(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = un(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = un(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::vector<std::pair<uint32_t,int>> o(m);
  for (int i = 0; i < m; ++i) o[i] = {kernels::morton_code(qs(i), tree.bounds()), i};
  std::stable_sort(o.begin(), o.end(), [](auto a, auto b){return a.first < b.first;});
  std::vector<long> len(m); std::vector<std::vector<int>> ins(m);
  for (int i = 0; i < m; ++i) { SortedCandidates<Tree, 8> v(tree, k, std::numeric_limits<T>::infinity()); auto c = walk(tree, qs(o[i].second), v, 2, false); len[i] = c.iters; ins[i] = c.ins1; }
  for (int Q : {1, 2, 4, 8}) {
    // lane l of warp w: queries w*32*Q + j*32 + l, j = 0..Q-1; later queries' descents (18 steps) in the main loop
    double iters = 0, insit = 0; int W = 0;
    for (int b = 0; b + 32 * Q <= m; b += 32 * Q, ++W) {
      long mx = 0; std::vector<int> u;
      for (int l = 0; l < 32; ++l) { long t = 0; for (int j = 0; j < Q; ++j) { int i = b + j * 32 + l; long off = t + (j ? 18 : 0); for (int x : ins[i]) u.push_back(int(off + x)); t = off + len[i]; } mx = std::max(mx, t); }
      iters += mx; std::sort(u.begin(), u.end()); insit += std::unique(u.begin(), u.end()) - u.begin();
    }
    printf("Q=%d: warp iterations per 32 queries %.1f (with an insertion %.1f), +18 lockstep descent steps\n", Q, iters / W / Q, insit / W / Q);
  }
}
