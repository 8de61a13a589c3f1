// How much of a kNN walk's work an initial bound could save (host simulation).
// Modes: 0 no seed (bound +inf); 1 oracle (bound = the exact k-th distance);
// 2 previous query in Morton order: (sqrt(prev kth) + |dq|)^2; 3 leader of the warp's 32 (its k-th + |dq|)
#include <kdforge/kdforge.hpp>
#include <kdforge/kernels/query/traversal.hpp>
#include <kdforge/kernels/query/candidates.hpp>
#include <kdforge/kernels/query/morton.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
using namespace kdforge;
using namespace kdforge::kernels;
using T = float; constexpr int D = 3;
using Tree = LeftBalancedTree<Kokkos::HostSpace, T, D>;
template <class V> struct Count { V& v; long visits = 0; T bound() const { return v.bound(); } bool done() const { return false; } void visit(int i, T d2) { ++visits; v.visit(i, d2); } };
struct Res { double visits = 0, warpmax = 0; };
template <int CAP>
void run(std::vector<int> const& ord, Tree const& tree, Kokkos::View<Point<T,D>*, Kokkos::HostSpace> qs, int k, int mode, Traversal tr, int bl, std::vector<T> const& kth) {
  int m = ord.size(); std::vector<long> vis(m);
  T prev_kth = 0; Point<T,D> prevq{};
  for (int i = 0; i < m; ++i) {
    auto q = qs(ord[i]);
    T B = std::numeric_limits<T>::infinity();
    auto dist = [&](Point<T,D> a, Point<T,D> b) { double s = 0; for (int d = 0; d < D; ++d) s += double(a[d]-b[d])*(a[d]-b[d]); return std::sqrt(s); };
    if (mode == 1) B = kth[ord[i]];
    if (mode == 2 && i > 0) { double r = std::sqrt(double(prev_kth)) + dist(q, prevq); B = T(r * r * 1.0001); }
    if (mode == 3) { int l = (i / 32) * 32 + 16; if (l >= m) l = i; double r = std::sqrt(double(kth[ord[l]])) + dist(q, qs(ord[l])); B = T(r * r * 1.0001); }
    SortedCandidates<Tree, CAP> c(tree, k, B);
    Count<SortedCandidates<Tree, CAP>> v{c};
    if (tr == Traversal::stack) traverse_stack(tree, q, v, bl); else traverse_trail(tree, q, v, bl);
    vis[i] = v.visits;
    prev_kth = c.bound(); prevq = q;
    if (c.bound() != kth[ord[i]]) { printf("mismatch %d\n", i); exit(1); }
  }
  double s = 0, w = 0; for (int i = 0; i < m; ++i) s += vis[i];
  for (int b = 0; b + 32 <= m; b += 32) w += *std::max_element(vis.begin() + b, vis.begin() + b + 32);
  printf("%s bl=%d k=%d mode=%d: visits/query %.1f  warp-max visits %.1f\n", tr == Traversal::stack ? "stack" : "trail", bl, k, mode, s / m, w / (m / 32));
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
  for (int k : {1, 8}) {
    std::vector<T> kth(m);
    for (int i = 0; i < m; ++i) { if (k == 1) { SortedCandidates<Tree,1> c(tree, 1, std::numeric_limits<T>::infinity()); traverse_stack(tree, qs(i), c, 3); kth[i] = c.bound(); } else { SortedCandidates<Tree,8> c(tree, 8, std::numeric_limits<T>::infinity()); traverse_stack(tree, qs(i), c, 3); kth[i] = c.bound(); } }
    for (int mode : {0, 1, 2, 3}) {
      if (k == 1) { run<1>(ord, tree, qs, 1, mode, Traversal::stack, 3, kth); run<1>(ord, tree, qs, 1, mode, Traversal::trail, 2, kth); }
      else { run<8>(ord, tree, qs, 8, mode, Traversal::stack, 3, kth); run<8>(ord, tree, qs, 8, mode, Traversal::trail, 2, kth); }
    }
  }
}
