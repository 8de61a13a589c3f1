// Deferred first descent (host simulation): the first descent from the root to
// the query's bucket only tests planes (lockstep across a warp: every lane takes
// lb steps); the path's nodes are visited when their level is popped (a node's
// point lies on its plane, so a pop that fails the plane test needs no visit).
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
static int g_buffer = 0;
struct Cnt { long iters = 0, pre = 0, inserts = 0, visits = 0; std::vector<int> ins_at; };
template <class Tr, class Visitor>
Cnt walk(Tr const& tree, Point<T, D> const& q, Visitor& visitor, Buckets buckets, int defer) {
  using Index = int; using Mask = std::uint32_t;
  Cnt c; Index const n = tree.node_count();
  int const lb = bucket_level(n, buckets.levels);
  Mask pending = 0, unvisited = 0;
  Index curr = 0; int level = 0; Index u = 0; bool popping = false;
  BucketCursor<Index> bucket;
  using Key = typename Visitor::Key;
  Key buf = ~Key(0);
  constexpr int CAPV = sizeof(visitor.c) / sizeof(visitor.c[0]);
  auto vis = [&](Index i, T d2) { c.visits++;
    Key x = Visitor::Keys::make(d2, i);
    if (!(x < visitor.c[CAPV - 1])) return;
    if (!g_buffer) { c.inserts++; c.ins_at.push_back(c.iters); visitor.visit(i, d2); return; }
    if (buf == ~Key(0)) { buf = x; return; }
    Key lo = x < buf ? x : buf, hi = x < buf ? buf : x;
    c.inserts++; c.ins_at.push_back(c.iters);
    visitor.visit(Visitor::Keys::neighbor(lo).index, Visitor::Keys::neighbor(lo).sq_dist);
    buf = hi < visitor.c[CAPV - 1] ? hi : ~Key(0);
  };
  auto flush = [&]() { if (buf != ~Key(0)) { auto nb = Visitor::Keys::neighbor(buf); visitor.visit(nb.index, nb.sq_dist); buf = ~Key(0); } };
  if (defer) {
    while (level < lb) {
      c.pre++;
      auto const p = tree.load(curr);
      auto const o = offsets(q, p);
      T const diff = component<D>(o, tree.split_dim(curr, level));
      Mask const bit = Mask(1) << level;
      if (diff * diff <= visitor.bound()) { pending |= bit; unvisited |= bit; }
      Index const close = diff < 0 ? 2 * curr + 1 : 2 * curr + 2;
      if (!node_exists(tree, close)) { popping = true; break; }
      curr = close; ++level;
    }
    u = curr;
    if (popping) { /* path end above lb: curr's own bit set, pop it */ }
  }
  while (true) {
    int const top = lb::highest_bit(pending);
    if (popping && top < 0) { flush(); return c; }
    c.iters++;
    int const vl = popping ? top : level;
    Mask const vbit = Mask(1) << vl;
    Index const v = popping ? ((curr + 1) >> (level - top)) - 1 : u;
    pending &= popping ? ~vbit : ~Mask(0);
    bool const scanning = !popping && level == lb;
    bool const exists = !scanning || tree.has_node(v);
    typename Tr::node_type p{};
    if (exists) p = tree.load(v);
    auto const o = offsets(q, p);
    bool const late = popping && (unvisited & vbit);
    unvisited &= popping ? ~vbit : ~Mask(0);
    T const diff = component<D>(o, tree.split_dim(v, vl));
    bool const within0 = diff * diff <= visitor.bound();
    bool const step0 = !popping && !scanning;
    if (exists && ((!popping && !(defer == 2 && step0)) || (late && within0))) vis(p.index, sq_norm(o));
    bool const within = diff * diff <= visitor.bound();
    Index const close = diff < 0 ? 2 * v + 1 : 2 * v + 2;
    Index const far = diff < 0 ? 2 * v + 2 : 2 * v + 1;
    BucketCursor<Index> next_bucket = bucket;
    Index next_u = 0;
    bool const scan_on = next_bucket.next(curr, buckets.size, n, next_u) && scanning;
    bool const step = !popping && !scanning;
    bool const descend = step && node_exists(tree, close);
    bool const enter = popping && within && node_exists(tree, far);
    if (step && within && (defer == 2 || node_exists(tree, far))) { pending |= vbit; if (defer == 2) unvisited |= vbit; }
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
void run(std::vector<int> const& ord, Tree const& tree, Kokkos::View<Point<T,D>*, Kokkos::HostSpace> qs, int k, int bl, std::vector<unsigned long long>* ref) {
  int m = ord.size();
  for (int defer : {0, 2}) {
    std::vector<Cnt> it(m);
    for (int i = 0; i < m; ++i) {
      SortedCandidates<Tree, CAP> v(tree, k, std::numeric_limits<T>::infinity());
      g_buffer = defer >= 10; it[i] = walk(tree, qs(ord[i]), v, bl, defer % 10);
      if (defer == 0) (*ref)[i] = v.c[CAP-1]; else if ((*ref)[i] != v.c[CAP-1]) { printf("MISMATCH %d\n", i); exit(1); }
    }
    double s = 0, w = 0, wi = 0, pre = 0, ins = 0, vis = 0;
    for (int i = 0; i < m; ++i) { s += it[i].iters; pre += it[i].pre; ins += it[i].inserts; vis += it[i].visits; }
    double wins = 0;
    for (int b = 0; b + 32 <= m; b += 32) { long mx = 0; std::vector<int> u; for (int l = 0; l < 32; ++l) { mx = std::max(mx, it[b+l].iters); u.insert(u.end(), it[b+l].ins_at.begin(), it[b+l].ins_at.end()); } w += mx; std::sort(u.begin(), u.end()); wins += std::unique(u.begin(), u.end()) - u.begin(); }
    printf("   warp iterations with an insertion: %.1f\n", wins / (m / 32));
    printf("bl=%d k=%d defer=%d: loop iters/query %.1f warp-max %.1f | pre-steps %.1f | visits %.1f inserts %.1f\n", bl, k, defer, s/m, w/(m/32), pre/m, vis/m, ins/m);
  }
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = argc > 1 ? atoi(argv[1]) : 200000; int n = argc > 2 ? atoi(argv[2]) : 1000000;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  BuildOptions bo; bo.split = SplitPolicy::widest_dimension; auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts, bo);
  std::vector<std::pair<uint32_t,int>> o(m);
  for (int i = 0; i < m; ++i) o[i] = {kernels::morton_code(qs(i), tree.bounds()), i};
  std::stable_sort(o.begin(), o.end(), [](auto a, auto b){return a.first < b.first;});
  std::vector<int> ord(m); for (int i = 0; i < m; ++i) ord[i] = o[i].second;
  std::vector<unsigned long long> ref(m);
  for (int bl : {2}) { run<1>(ord, tree, qs, 1, bl, &ref); run<8>(ord, tree, qs, 8, bl, &ref); }
}
