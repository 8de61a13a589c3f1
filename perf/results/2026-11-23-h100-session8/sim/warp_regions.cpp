#include <kdforge/kdforge.hpp>
#include <kdforge/kernels/query/traversal.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/morton.hpp>
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>
using namespace kdforge;
using T = float; constexpr int D = 3;
using Tree = LeftBalancedTree<Kokkos::HostSpace, T, D>;
// per-iteration event codes: bit0 visit, bit1 insert, bit2 scanning node, bit3 pop
std::vector<unsigned char>* ev;
int LB;
struct Counting {
  Tree const* t;
  using coordinate_type = T; using index_type = int; using point_type = Point<T, D>;
  using node_type = Tree::node_type; static constexpr int dimension = D;
  int node_count() const { return t->node_count(); }
  bool has_node(int) const { return true; }
  node_type load(int s) const { int lvl = 31 - __builtin_clz(unsigned(s + 1)); ev->push_back(8 | (lvl >= LB ? 4 : 0)); return t->load(s); }
  int split_dim(int s, int l) const { return t->split_dim(s, l); }
};
template <int CAP> struct CountVis : kernels::SortedCandidates<Counting, CAP> {
  using B = kernels::SortedCandidates<Counting, CAP>;
  CountVis(Counting const& c, int k) : B(c, k, std::numeric_limits<T>::infinity()) {}
  void visit(int i, T d2) { auto& e = ev->back(); e &= ~8; e |= 1; auto x = B::Keys::make(d2, i); if (x < B::c[CAP-1]) e |= 2; B::visit(i, d2); }
};
int main(int argc, char** argv) {
  Kokkos::ScopeGuard g(argc, argv);
  int n = 1000000, m = 1000000; int k = argc > 1 ? atoi(argv[1]) : 8; int bl = argc > 2 ? atoi(argv[2]) : 2;
  std::mt19937 rng(1); std::uniform_real_distribution<float> u(0, 1);
  Kokkos::View<Point<T, D>*, Kokkos::HostSpace> pts("p", n), qs("q", m);
  for (int i = 0; i < n; ++i) for (int d = 0; d < D; ++d) pts(i)[d] = u(rng);
  for (int i = 0; i < m; ++i) for (int d = 0; d < D; ++d) qs(i)[d] = u(rng);
  auto tree = build_left_balanced(Kokkos::DefaultHostExecutionSpace(), pts);
  LB = kernels::bucket_level(n, bl);
  std::vector<std::pair<uint32_t,int>> ord(m);
  for (int i = 0; i < m; ++i) ord[i] = {kernels::morton_code(qs(i), tree.bounds()) >> 16, i};
  std::stable_sort(ord.begin(), ord.end(), [](auto a, auto b){return a.first < b.first;});
  Counting c{&tree};
  double wit = 0, lanesum = 0; double reg[6] = {}; double lanereg[6] = {};
  const char* names[6] = {"pop", "visit", "insert", "plane(tree+pop)", "scan-next", "any"};
  std::vector<std::vector<unsigned char>> L(32);
  for (int w = 0; w < m / 32; ++w) {
    size_t mx = 0;
    for (int l = 0; l < 32; ++l) { L[l].clear(); ev = &L[l]; int qi = ord[w*32+l].second;
      if (k == 1) { CountVis<1> v(c, 1); kernels::traverse_trail(c, qs(qi), v, bl); }
      else if (k == 8) { CountVis<8> v(c, k); kernels::traverse_trail(c, qs(qi), v, bl); }
      else { CountVis<16> v(c, k); kernels::traverse_trail(c, qs(qi), v, bl); }
      mx = std::max(mx, L[l].size()); lanesum += L[l].size(); }
    wit += mx;
    for (size_t t = 0; t < mx; ++t) { bool r[6] = {}; 
      for (int l = 0; l < 32; ++l) if (t < L[l].size()) { unsigned e = L[l][t];
        bool f[6] = {bool(e & 8), bool(e & 1), bool(e & 2), !(e & 4) || (e & 8), (e & 4) && (e & 1), true};
        for (int j = 0; j < 6; ++j) { r[j] |= f[j]; lanereg[j] += f[j]; } }
      for (int j = 0; j < 6; ++j) reg[j] += r[j]; }
  }
  int W = m / 32;
  printf("k=%d bl=%d: lane iters %.1f warp iters %.1f\n", k, bl, lanesum / m, wit / W);
  for (int j = 0; j < 6; ++j) printf("  %-16s warp-iters with it %.1f (%.0f%%), lanes per such %.1f, per-lane count %.1f\n", names[j], reg[j] / W, 100 * reg[j] / wit, lanereg[j] / reg[j], lanereg[j] / m);
}
