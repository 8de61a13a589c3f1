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
long g_iters = 0, g_loads = 0;
struct Counting {
  Tree const* t;
  using coordinate_type = T; using index_type = int; using point_type = Point<T, D>;
  using node_type = Tree::node_type; static constexpr int dimension = D;
  int node_count() const { return t->node_count(); }
  bool has_node(int s) const { return t->has_node(s); }
  node_type load(int s) const { ++g_loads; return t->load(s); }
  int split_dim(int s, int l) const { return t->split_dim(s, l); }
};
// S = number of deepest pending plane distances kept in registers; S < 0: baseline loop
template <int S, class Tree, class Visitor>
void walk(Tree const& tree, Point<T, D> const& q, Visitor& visitor, int bucket_levels) {
  using Index = int; using Mask = std::uint32_t;
  Index const n = tree.node_count();
  if (n == 0) return;
  int const lb = bucket_level(n, bucket_levels);
  Mask pending = 0, far_right = 0, known = 0; // known: pending bits whose d2 is in dd[]
  T dd[S > 0 ? S : 1]; T rest_min = std::numeric_limits<T>::infinity();
  Index curr = 0; int level = 0; Index u = 0; bool popping = false;
  BucketCursor<Index> bucket;
  while (true) {
    ++g_iters;
    int const top = lb::highest_bit(pending);
    if (popping && top < 0) return;
    int const vl = popping ? top : level;
    Index const v = popping ? ((curr + 1) >> (level - top)) - 1 : u;
    pending &= popping ? ~(Mask(1) << top) : ~Mask(0);
    bool const scanning = !popping && level == lb;
    bool const exists = !scanning || tree.has_node(v);
    typename Tree::node_type p{};
    if (exists) p = tree.load(v);
    if (exists && !popping) visitor.visit(p.index, sq_distance(q, p));
    int const dim = tree.split_dim(v, vl);
    T const diff = component<D>(q, dim) - component<D>(p, dim);
    T const d2 = diff * diff;
    bool const within = d2 <= visitor.bound();
    Index const close = diff < 0 ? 2 * v + 1 : 2 * v + 2;
    Index const far = diff < 0 ? 2 * v + 2 : 2 * v + 1;
    BucketCursor<Index> next_bucket = bucket; Index next_u = 0;
    bool const scan_on = next_bucket.next(curr, bucket_levels, n, next_u) && scanning;
    bool const step = !popping && !scanning;
    bool const descend = step && node_exists(tree, close);
    bool const enter = popping && within;
    bool const push = step && within && node_exists(tree, far);
    if (push) {
      pending |= Mask(1) << level;
      far_right = (far_right & ~(Mask(1) << level)) | (diff < 0 ? Mask(1) << level : 0);
      if constexpr (S > 0) {
        if (known != 0 && __builtin_popcount(known) == S) { // the shallowest known falls off
          rest_min = std::min(rest_min, dd[S - 1]);
          known &= known - 1;
        }
        for (int i = S - 1; i > 0; --i) dd[i] = dd[i - 1];
        dd[0] = d2; known |= Mask(1) << level;
      }
    }
    bucket = scan_on ? next_bucket : BucketCursor<Index>{};
    Index const next = scan_on ? next_u : descend ? close : far;
    bool moves = scan_on || descend || enter;
    u = moves ? next : u;
    curr = descend || enter ? next : curr;
    level = descend ? level + 1 : enter ? vl + 1 : level;
    if constexpr (S > 0) {
      if (!moves) { // resolve from registers
        T const b = visitor.bound();
        for (int i = 0; i < S; ++i) {
          if (known == 0) break;
          int const l = lb::highest_bit(known);
          Mask const bit = Mask(1) << l;
          T const x = dd[0];
          for (int j = 0; j < S - 1; ++j) dd[j] = dd[j + 1];
          known &= ~bit; pending &= ~bit;
          if (x <= b) {
            Index const a = ((curr + 1) >> (level - l)) - 1;
            curr = 2 * a + ((far_right & bit) ? 2 : 1); far_right &= ~bit;
            u = curr; level = l + 1; moves = true; break;
          }
          far_right &= ~bit;
        }
        if (!moves && rest_min > b) return; // all the rest fail too
      }
    }
    popping = !moves;
  }
}
template <int CAP>
void run(std::vector<std::pair<uint32_t,int>> const& ord, Counting const& c, Kokkos::View<Point<T,D>*, Kokkos::HostSpace> qs, int k, int S) {
  int m = ord.size(); std::vector<long> it(m);
  double chk = 0;
  for (int i = 0; i < m; ++i) {
    int qi = ord[i].second; g_iters = 0;
    SortedCandidates<Counting, CAP> v(c, k, std::numeric_limits<T>::infinity());
    switch (S) { case -1: walk<0>(c, qs(qi), v, 2); break; case 1: walk<1>(c, qs(qi), v, 2); break; case 2: walk<2>(c, qs(qi), v, 2); break;
      case 3: walk<3>(c, qs(qi), v, 2); break; case 4: walk<4>(c, qs(qi), v, 2); break; case 6: walk<6>(c, qs(qi), v, 2); break; }
    it[i] = g_iters; chk += v.bound();
  }
  double sum = 0, summax = 0; int W = m / 32;
  for (int w = 0; w < W; ++w) { long mx = 0; for (int l = 0; l < 32; ++l) { mx = std::max(mx, it[w*32+l]); sum += it[w*32+l]; } summax += mx; }
  printf("k=%d S=%d: iters mean %.1f warp-max %.1f  (check %.6g)\n", k, S, sum / (W*32.0), summax / W, chk);
  for (int C : {40, 60, 80, 100, 120, 150, 200}) {
    double p1 = 0; std::vector<long> rest;
    for (int w = 0; w < W; ++w) { long mx = 0; for (int l = 0; l < 32; ++l) { long x = it[w*32+l]; mx = std::max(mx, std::min<long>(x, C)); if (x > C) rest.push_back(x - C); } p1 += mx; }
    double p2 = 0; for (size_t i = 0; i < rest.size(); i += 32) { long mx = 0; for (size_t j = i; j < std::min(rest.size(), i + 32); ++j) mx = std::max(mx, rest[j]); p2 += mx; }
    printf("   cap %d: pass1 %.1f + pass2 %.1f = %.1f per warp (%.1f%% queries continue)\n", C, p1 / W, p2 / W, (p1 + p2) / W, 100.0 * rest.size() / m);
  }
}
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int m = argc > 1 ? atoi(argv[1]) : 200000; int n = argc > 2 ? atoi(argv[2]) : 1000000;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  std::vector<std::pair<uint32_t,int>> ord(m);
  for (int i = 0; i < m; ++i) ord[i] = {kernels::morton_code(qs(i), tree.bounds()) >> 16, i};
  std::stable_sort(ord.begin(), ord.end(), [](auto a, auto b){return a.first < b.first;});
  Counting c{&tree};
  for (int S : {-1, 1, 2, 3, 4, 6}) { run<1>(ord, c, qs, 1, S); run<8>(ord, c, qs, 8, S); }
}
