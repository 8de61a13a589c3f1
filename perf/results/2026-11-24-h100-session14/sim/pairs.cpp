// Pair scanning (host simulation): a bucket's nodes below its root visited two siblings per iteration.
// multi.cpp and buf2.cpp include this file (pairs_main); run: ./pairs 1000000 1000000 8
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
struct Cnt { long iters = 0, inserts = 0; std::vector<int> ins1, ins2; };
template <class Visitor>
Cnt walk(Tree const& tree, Point<T, D> const& q, Visitor& visitor, Buckets buckets, bool pairs) {
  using Index = int; using Mask = std::uint32_t;
  Cnt c; Index const n = tree.node_count();
  int const lb = bucket_level(n, buckets.levels);
  auto vis = [&](Index i, T d2, std::vector<int>& at) { if (Visitor::Keys::make(d2, i) < visitor.c[sizeof(visitor.c)/8 - 1]) { c.inserts++; at.push_back(c.iters); } visitor.visit(i, d2); };
  auto st = trail_descend(tree, q, visitor.bound(), buckets);
  Mask pending = st.pending; Index curr = st.curr; int level = st.level; bool popping = st.popping;
  int j = 0; // bucket position
  while (true) {
    int const top = lb::highest_bit(pending);
    if (popping && top < 0) return c;
    c.iters++;
    int const vl = popping ? top : level;
    Mask const vbit = Mask(1) << vl;
    bool const scanning = !popping && level == lb;
    if (scanning) {
      int const h = lb::highest_bit(std::uint32_t(j + 1));
      Index const u = (curr << h) + j;
      bool two = pairs && j > 0;
      if (u < n) { auto p = tree.load(u); vis(p.index, sq_norm(offsets(q, p)), c.ins1); }
      if (two && u + 1 < n) { auto p = tree.load(u + 1); vis(p.index, sq_norm(offsets(q, p)), c.ins2); }
      int const nj = j + (two ? 2 : 1);
      Index const nu = (curr << lb::highest_bit(std::uint32_t(nj + 1))) + nj;
      if (nj < buckets.size && nu < n) { j = nj; continue; }
      j = 0; popping = true; continue;
    }
    Index const v = popping ? ((curr + 1) >> (level - top)) - 1 : curr;
    if (popping) pending &= ~vbit;
    auto p = tree.load(v);
    auto o = offsets(q, p);
    if (popping) vis(p.index, sq_norm(o), c.ins1);
    T const diff = component<D>(o, tree.split_dim(v, vl));
    bool const within = diff * diff <= visitor.bound();
    Index const close = diff < 0 ? 2 * v + 1 : 2 * v + 2;
    Index const far = diff < 0 ? 2 * v + 2 : 2 * v + 1;
    if (!popping) {
      if (within) pending |= vbit;
      if (node_exists(tree, close)) { curr = close; level++; } else popping = true;
    } else if (within && node_exists(tree, far)) { curr = far; level = vl + 1; popping = false; }
  }
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = argc > 1 ? atoi(argv[1]) : 200000; int n = argc > 2 ? atoi(argv[2]) : 1000000; int k = argc > 3 ? atoi(argv[3]) : 8;
  std::mt19937 rng(1); std::uniform_real_distribution<float> un(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = un(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = un(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::vector<std::pair<uint32_t,int>> o(m);
  for (int i = 0; i < m; ++i) o[i] = {kernels::morton_code(qs(i), tree.bounds()), i};
  std::stable_sort(o.begin(), o.end(), [](auto a, auto b){return a.first < b.first;});
  std::vector<int> ord(m); for (int i = 0; i < m; ++i) ord[i] = o[i].second;
  for (int bl : {2, 3, 4}) for (bool pairs : {false, true}) {
    std::vector<Cnt> it(m); std::vector<unsigned long long> ref(m);
    for (int i = 0; i < m; ++i) { SortedCandidates<Tree, 8> v(tree, k, std::numeric_limits<T>::infinity()); it[i] = walk(tree, qs(ord[i]), v, bl, pairs); ref[i] = v.c[7]; }
    double w = 0, w1 = 0, w2 = 0, mean = 0, ins = 0;
    for (int b = 0; b + 32 <= m; b += 32) { long mx = 0; std::vector<int> u1, u2; for (int l = 0; l < 32; ++l) { mean += it[b+l].iters; ins += it[b+l].inserts; mx = std::max(mx, it[b+l].iters); u1.insert(u1.end(), it[b+l].ins1.begin(), it[b+l].ins1.end()); u2.insert(u2.end(), it[b+l].ins2.begin(), it[b+l].ins2.end()); } w += mx; std::sort(u1.begin(), u1.end()); w1 += std::unique(u1.begin(), u1.end()) - u1.begin(); std::sort(u2.begin(), u2.end()); w2 += std::unique(u2.begin(), u2.end()) - u2.begin(); }
    int W = m / 32;
    printf("k=%d bl=%d pairs=%d: mean %.1f warp-max %.1f | inserts/query %.1f | warp insertion blocks: first %.1f second %.1f\n", k, bl, pairs, mean / m, w / W, ins / m, w1 / W, w2 / W);
  }
}
