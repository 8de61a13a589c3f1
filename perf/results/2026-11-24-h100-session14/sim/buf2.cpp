// One-candidate buffer with an exact bound (host simulation): walks are unchanged, only when
// the warp runs the insertion changes. A lane's second candidate forces a flush; every lane
// holding one flushes with it. Optional: flush when >= thr lanes hold one.
#define main pairs_main
#include "pairs.cpp"
#undef main
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = 1000000, n = 1000000, k = argc > 1 ? atoi(argv[1]) : 8;
  std::mt19937 rng(1); std::uniform_real_distribution<float> un(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = un(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = un(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::vector<std::pair<uint32_t,int>> o(m);
  for (int i = 0; i < m; ++i) o[i] = {kernels::morton_code(qs(i), tree.bounds()), i};
  std::stable_sort(o.begin(), o.end(), [](auto a, auto b){return a.first < b.first;});
  std::vector<long> len(m); std::vector<std::vector<int>> ins(m);
  for (int i = 0; i < m; ++i) { SortedCandidates<Tree, 16> v(tree, k, std::numeric_limits<T>::infinity()); auto c = walk(tree, qs(o[i].second), v, 2, false); len[i] = c.iters; ins[i] = c.ins1; }
  for (int thr : {33, 16, 8, 4}) {
    double base = 0, flushes = 0, buffers = 0; int W = 0;
    for (int b = 0; b + 32 <= m; b += 32, ++W) {
      std::vector<int> u; long mx = 0;
      for (int l = 0; l < 32; ++l) { u.insert(u.end(), ins[b+l].begin(), ins[b+l].end()); mx = std::max(mx, len[b+l]); }
      std::sort(u.begin(), u.end()); base += std::unique(u.begin(), u.end()) - u.begin();
      std::vector<int> pos(32, 0); std::vector<bool> full(32, false);
      for (long t = 0; t < mx; ++t) {
        bool forced = false, any_ev = false; int nfull = 0;
        for (int l = 0; l < 32; ++l) { bool ev = pos[l] < (int)ins[b+l].size() && ins[b+l][pos[l]] == t; if (ev) { any_ev = true; if (full[l]) forced = true; } }
        for (int l = 0; l < 32; ++l) nfull += full[l];
        bool flush = forced || nfull >= thr;
        if (flush) { flushes++; for (int l = 0; l < 32; ++l) full[l] = false; }
        if (any_ev) buffers++;
        for (int l = 0; l < 32; ++l) { bool ev = pos[l] < (int)ins[b+l].size() && ins[b+l][pos[l]] == t; if (ev) { full[l] = true; pos[l]++; } }
      }
    }
    printf("k=%d thr=%d: insertion iterations now %.1f -> flush iterations %.1f (+1 final), buffering iterations %.1f\n", k, thr, base / W, flushes / W, buffers / W);
  }
}
