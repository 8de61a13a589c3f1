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
struct Grid {
  int G = 0; T lo[D], w[D]; std::vector<int> start; // start node per cell
  // expanded faces of cell g in dim d
  T flo(int d, int g) const { return lo[d] + T(g) * w[d] - w[d] * T(1.0 / 1024); }
  T fhi(int d, int g) const { return lo[d] + T(g + 1) * w[d] + w[d] * T(1.0 / 1024); }
};
Grid make_grid(Tree const& t, int G, int lb) {
  Grid g; g.G = G;
  for (int d = 0; d < D; ++d) { g.lo[d] = t.bounds().lo[d]; g.w[d] = (t.bounds().hi[d] - t.bounds().lo[d]) / G; }
  g.start.resize(size_t(G) * G * G);
  double lvsum = 0;
  for (int c = 0; c < G * G * G; ++c) {
    int gi[3] = {c % G, (c / G) % G, c / (G * G)};
    int s = 0, l = 0;
    while (l < lb) {
      auto p = t.load(s); int d = t.split_dim(s, l);
      if (g.fhi(d, gi[d]) < p.c[d]) s = 2 * s + 1; else if (g.flo(d, gi[d]) >= p.c[d]) s = 2 * s + 2; else break;
      ++l;
    }
    g.start[c] = s; lvsum += l;
  }
  printf("grid %d: mean start level %.2f\n", G, lvsum / (G * G * G));
  return g;
}
template <class Visitor>
void walk(Tree const& tree, Grid const* grid, Point<T, D> const& q, Visitor& visitor, int bucket_levels) {
  using Index = int; using Mask = std::uint32_t;
  Index const n = tree.node_count();
  int const lb = bucket_level(n, bucket_levels);
  Mask pending = 0, far_right = 0, unvisited = 0;
  Index curr = 0; int level = 0;
  T face[D][2]; int s0 = 0, ls = 0; bool added = true;
  if (grid) {
    int gi[D]; bool inside = true;
    for (int d = 0; d < D; ++d) {
      int g = int((q[d] - grid->lo[d]) / grid->w[d]); g = std::min(std::max(g, 0), grid->G - 1); gi[d] = g;
      T const a = grid->flo(d, g), b = grid->fhi(d, g);
      inside = inside && a <= q[d] && q[d] <= b;
      face[d][0] = q[d] - a; face[d][1] = b - q[d];
    }
    if (inside) { s0 = grid->start[gi[0] + grid->G * (gi[1] + grid->G * gi[2])]; ls = lb::level(s0); }
    curr = s0; level = ls; added = ls == 0;
  }
  Index u = curr; bool popping = false;
  BucketCursor<Index> bucket;
  while (true) {
    ++g_iters;
    int top = lb::highest_bit(pending);
    if (popping && top < 0) {
      if (added) return;
      added = true;
      T const b = visitor.bound();
      for (int l = 0; l < ls; ++l) {
        int const right = ((s0 + 1) >> (ls - 1 - l)) & 1; // path went right at level l
        int const d = l % D; // round robin (sim)
        T const f = right ? face[d][0] : face[d][1];
        if (f * f <= b) { pending |= Mask(1) << l; if (!right) far_right |= Mask(1) << l; else far_right &= ~(Mask(1) << l); }
      }
      unvisited = pending;
      top = lb::highest_bit(pending);
      if (top < 0) return;
    }
    int const vl = popping ? top : level;
    Index const v = popping ? ((curr + 1) >> (level - top)) - 1 : u;
    Mask const topbit = popping ? Mask(1) << top : 0;
    pending &= ~topbit;
    bool const scanning = !popping && level == lb;
    auto const p = tree.load(v);
    if (!popping || (unvisited & topbit)) visitor.visit(p.index, sq_distance(q, p));
    unvisited &= ~topbit;
    int const dim = tree.split_dim(v, vl);
    T const diff = component<D>(q, dim) - component<D>(p, dim);
    bool const within = diff * diff <= visitor.bound();
    Index const close = diff < 0 ? 2 * v + 1 : 2 * v + 2;
    Index const far = diff < 0 ? 2 * v + 2 : 2 * v + 1;
    Index const popfar = 2 * v + ((far_right & topbit) ? 2 : 1);
    BucketCursor<Index> next_bucket = bucket; Index next_u = 0;
    bool const scan_on = next_bucket.next(curr, bucket_levels, n, next_u) && scanning;
    bool const step = !popping && !scanning;
    bool const descend = step && node_exists(tree, close);
    bool const enter = popping && within && node_exists(tree, popfar);
    if (step && within && node_exists(tree, far)) {
      pending |= Mask(1) << level;
      far_right = (far_right & ~(Mask(1) << level)) | (diff < 0 ? Mask(1) << level : 0);
    }
    bucket = scan_on ? next_bucket : BucketCursor<Index>{};
    Index const next = scan_on ? next_u : descend ? close : popfar;
    bool const moves = scan_on || descend || enter;
    u = moves ? next : u;
    curr = descend || enter ? next : curr;
    level = descend ? level + 1 : enter ? vl + 1 : level;
    popping = !moves;
  }
}
template <int CAP>
void run(std::vector<std::pair<uint32_t,int>> const& ord, Tree const& t, Grid const* grid, Kokkos::View<Point<T,D>*, Kokkos::HostSpace> qs, int k) {
  int m = ord.size(); std::vector<long> it(m);
  double chk = 0;
  for (int i = 0; i < m; ++i) {
    int qi = ord[i].second; g_iters = 0;
    SortedCandidates<Tree, CAP> v(t, k, std::numeric_limits<T>::infinity());
    walk(t, grid, qs(qi), v, 2);
    it[i] = g_iters; for (int j = 0; j < CAP; ++j) chk += double(v.c[j] & 0xffffffff) * 1e-6 + PairKeys<T,int>::dist(v.c[j]);
  }
  double sum = 0, summax = 0; int W = m / 32;
  for (int w = 0; w < W; ++w) { long mx = 0; for (int l = 0; l < 32; ++l) { mx = std::max(mx, it[w*32+l]); sum += it[w*32+l]; } summax += mx; }
  printf("k=%d G=%d: iters mean %.1f warp-max %.1f  (check %.9g)\n", k, grid ? grid->G : 0, sum / (W*32.0), summax / W, chk);
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int n = 1000000, m = argc > 1 ? atoi(argv[1]) : 200000;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::vector<std::pair<uint32_t,int>> ord(m);
  for (int i = 0; i < m; ++i) ord[i] = {kernels::morton_code(qs(i), tree.bounds()) >> 16, i};
  std::stable_sort(ord.begin(), ord.end(), [](auto a, auto b){return a.first < b.first;});
  int lb = bucket_level(n, 2);
  run<1>(ord, tree, nullptr, qs, 1); run<8>(ord, tree, nullptr, qs, 8);
  for (int G : {16, 32, 64, 128}) { Grid gr = make_grid(tree, G, lb); run<1>(ord, tree, &gr, qs, 1); run<8>(ord, tree, &gr, qs, 8); }
}
