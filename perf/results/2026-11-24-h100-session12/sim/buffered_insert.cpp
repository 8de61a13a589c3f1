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
// trail walk, counting iteration kinds; mode 1: pending plane d2 stored (pops resolved without loads)
struct Cnt { std::vector<char> acc; long visit = 0, scanmiss = 0, popfail = 0, popenter = 0; long iters() const { return visit + scanmiss + popfail + popenter; } };
template <class Tr, class Visitor>
Cnt walk(Tr const& tree, Point<T, D> const& q, Visitor& visitor, int bucket_levels, int mode, T thr) {
  using Index = int; using Mask = std::uint32_t;
  Cnt c; Index const n = tree.node_count();
  int const lb = bucket_level(n, bucket_levels);
  Mask pending = 0, far_right = 0; T dd[32];
  Index curr = 0; int level = 0; Index u = 0; bool popping = false;
  BucketCursor<Index> bucket;
  Mask tight = 0;
  while (true) {
    if (mode == 2 && visitor.bound() <= thr) pending &= tight;
    int const top = lb::highest_bit(pending);
    if (popping && top < 0) return c;
    if (popping && mode == 1) {
      // resolve pops from stored distances: no load
      pending &= ~(Mask(1) << top);
      if (dd[top] <= visitor.bound()) {
        Index const a = ((curr + 1) >> (level - top)) - 1;
        curr = 2 * a + ((far_right >> top) & 1 ? 2 : 1); u = curr; level = top + 1; popping = false;
        c.popenter++; // counted but cheap
      } else c.popfail++;
      continue;
    }
    int const vl = popping ? top : level;
    Index const v = popping ? ((curr + 1) >> (level - top)) - 1 : u;
    pending &= popping ? ~(Mask(1) << top) : ~Mask(0);
    bool const scanning = !popping && level == lb;
    bool const exists = !scanning || tree.has_node(v);
    typename Tr::node_type p{};
    if (exists) p = tree.load(v);
    auto const o = offsets(q, p);
    bool accepted = false;
    if (exists && !popping) { T b0 = visitor.bound(); auto x = visitor.c[0]; (void)x; T d2 = sq_norm(o); auto last = visitor.c[sizeof(visitor.c)/sizeof(visitor.c[0])-1]; visitor.visit(p.index, d2); accepted = visitor.c[sizeof(visitor.c)/sizeof(visitor.c[0])-1] != last; (void)b0; c.visit++; }
    else if (!popping) c.scanmiss++;
    c.acc.push_back(accepted);
    int const dim = tree.split_dim(v, vl);
    T const diff = component<D>(o, dim);
    bool const within = diff * diff <= visitor.bound();
    if (popping) { if (within) c.popenter++; else c.popfail++; }
    Index const close = diff < 0 ? 2 * v + 1 : 2 * v + 2;
    Index const far = diff < 0 ? 2 * v + 2 : 2 * v + 1;
    BucketCursor<Index> next_bucket = bucket; Index next_u = 0;
    bool const scan_on = next_bucket.next(curr, bucket_levels, n, next_u) && scanning;
    bool const step = !popping && !scanning;
    bool const descend = step && node_exists(tree, close);
    bool const enter = popping && within;
    if (step && within && node_exists(tree, far)) { pending |= Mask(1) << level; dd[level] = diff * diff; if (diff*diff <= thr) tight |= Mask(1) << level; far_right = (far_right & ~(Mask(1) << level)) | (diff < 0 ? Mask(1) << level : 0); }
    bucket = scan_on ? next_bucket : BucketCursor<Index>{};
    Index const next = scan_on ? next_u : descend ? close : far;
    bool const moves = scan_on || descend || enter;
    u = moves ? next : u;
    curr = descend || enter ? next : curr;
    level = descend ? level + 1 : enter ? vl + 1 : level;
    popping = !moves;
  }
}
template <int CAP>
void run(std::vector<int> const& ord, Tree const& c, Kokkos::View<Point<T,D>*, Kokkos::HostSpace> qs, int k, int mode, int bl, double f = 0) {
  int n = c.node_count(); double r = std::cbrt(3.0 * k / (4 * 3.14159265 * n)); T thr = T(f * f * r * r);
  int m = ord.size(); std::vector<Cnt> it(m);
  for (int i = 0; i < m; ++i) {
    SortedCandidates<Tree, CAP> v(c, k, std::numeric_limits<T>::infinity());
    it[i] = walk(c, qs(ord[i]), v, bl, mode, thr);
  }
  { int W = m / 32; double base = 0, buf1 = 0, buf1x = 0, iters = 0;
    for (int w = 0; w < W; ++w) {
      size_t mx = 0; for (int l = 0; l < 32; ++l) mx = std::max(mx, it[w*32+l].acc.size());
      iters += mx;
      bool hb[32] = {}, hb2[32] = {};
      for (size_t t = 0; t < mx + 2; ++t) {
        bool anyx = false, must = false, must2 = false;
        for (int l = 0; l < 32; ++l) { auto& a = it[w*32+l].acc; bool x = t < a.size() && a[t]; anyx |= x; must |= x && hb[l]; must2 |= x && hb2[l]; }
        bool endflush = false; for (int l = 0; l < 32; ++l) if (t == it[w*32+l].acc.size() && (hb[l])) endflush = true;
        base += anyx;
        // policy 1: buffer one; block runs on must; runners: lanes with b insert b, b=x; lanes with only x insert x
        if (must || endflush) { buf1 += 1; for (int l = 0; l < 32; ++l) { auto& a = it[w*32+l].acc; bool x = t < a.size() && a[t]; hb[l] = hb[l] && x; } }
        else { for (int l = 0; l < 32; ++l) { auto& a = it[w*32+l].acc; bool x = t < a.size() && a[t]; hb[l] = hb[l] || x; } }
        (void)must2;
      }
    }
    printf("  warp iters %.1f, insertion blocks: base %.1f, buffer-1 %.1f\n", iters / W, base / W, buf1 / W);
  }
  Cnt s; double wmax = 0, wmaxload = 0; int W = m / 32;
  for (int w = 0; w < W; ++w) { long mx = 0, ml = 0; for (int l = 0; l < 32; ++l) { auto& x = it[w*32+l]; mx = std::max(mx, x.iters()); ml = std::max(ml, x.visit + x.scanmiss + (mode == 0 ? x.popfail + x.popenter : 0));
      s.visit += x.visit; s.scanmiss += x.scanmiss; s.popfail += x.popfail; s.popenter += x.popenter; } wmax += mx; wmaxload += ml; }
  double M = W * 32.0;
  printf("f=%.1f bl=%d k=%d mode=%d: visit %.1f scanmiss %.1f popfail %.1f popenter %.1f | warp-max iters %.1f, warp-max load-iters %.1f\n", f, bl, k, mode,
         s.visit / M, s.scanmiss / M, s.popfail / M, s.popenter / M, wmax / W, wmaxload / W);
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = argc > 1 ? atoi(argv[1]) : 200000; int n = argc > 2 ? atoi(argv[2]) : 1000000;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::vector<std::pair<uint32_t,int>> o(m);
  for (int i = 0; i < m; ++i) o[i] = {kernels::morton_code(qs(i), tree.bounds()), i};
  std::stable_sort(o.begin(), o.end(), [](auto a, auto b){return a.first < b.first;});
  std::vector<int> ord(m); for (int i = 0; i < m; ++i) ord[i] = o[i].second;
  int bl = 2; run<1>(ord, tree, qs, 1, 0, bl); run<8>(ord, tree, qs, 8, 0, bl); run<16>(ord, tree, qs, 16, 0, bl);
}
