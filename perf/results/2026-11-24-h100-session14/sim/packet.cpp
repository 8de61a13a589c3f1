// Packet (warp-uniform) kNN traversal vs per-lane trail walk (host simulation).
// Built next to ../../2026-11-24-h100-session13/sim/defer.cpp (its walk and main are reused); run: ./packet 1000000 1000000 8
#define main defer_main
#include "defer.cpp"
#undef main
template <int CAP>
struct PacketRes { double iters = 0, ins_iters = 0, pops = 0, failed = 0, scans = 0, steps = 0; };
template <int CAP>
PacketRes<CAP> packet(Tree const& tree, std::vector<Point<T,D>> const& qs, int k, Buckets buckets, std::vector<unsigned long long>* ref, int base) {
  using Index = int; using Mask = std::uint32_t;
  int P = qs.size();
  std::vector<SortedCandidates<Tree, CAP>> c; for (int l = 0; l < P; ++l) c.emplace_back(tree, k, std::numeric_limits<T>::infinity());
  PacketRes<CAP> r; Index const n = tree.node_count();
  int const lb = bucket_level(n, buckets.levels);
  Mask pending = 0, first_right = 0;
  Index curr = 0; int level = 0; Index u = 0; bool popping = false;
  BucketCursor<Index> bucket;
  while (true) {
    int const top = lb::highest_bit(pending);
    if (popping && top < 0) break;
    r.iters++;
    int const vl = popping ? top : level;
    Mask const vbit = Mask(1) << vl;
    Index const v = popping ? ((curr + 1) >> (level - top)) - 1 : u;
    pending &= popping ? ~vbit : ~Mask(0);
    bool const scanning = !popping && level == lb;
    bool const exists = !scanning || tree.has_node(v);
    auto p = exists ? tree.load(v) : typename Tree::node_type{};
    bool any_ins = false;
    auto visit_all = [&] { for (int l = 0; l < P; ++l) { T d2 = sq_norm(offsets(qs[l], p)); if (SortedCandidates<Tree,CAP>::Keys::make(d2, p.index) < c[l].c[CAP-1]) any_ins = true; c[l].visit(p.index, d2); } };
    if (scanning) {
      r.scans++;
      if (exists) visit_all();
      Index nu; if (bucket.next(curr, buckets.size, n, nu)) { u = nu; if (any_ins) r.ins_iters++; continue; }
      popping = true; if (any_ins) r.ins_iters++; continue;
    }
    int const dim = tree.split_dim(v, vl);
    if (!popping) {
      r.steps++;
      int right = 0; for (int l = 0; l < P; ++l) right += component<D>(offsets(qs[l], p), dim) >= 0;
      bool const fr = 2 * right > P;
      bool need = false;
      for (int l = 0; l < P; ++l) { T diff = component<D>(offsets(qs[l], p), dim); bool side = diff >= 0; if (side != fr || diff * diff <= c[l].bound()) need = true; }
      if (fr) first_right |= vbit; else first_right &= ~vbit;
      if (need) pending |= vbit;
      Index const first = 2 * v + 1 + (fr ? 1 : 0);
      if (node_exists(tree, first)) { curr = first; u = first; level++; }
      else popping = true;
    } else {
      r.pops++;
      bool const fr = first_right & vbit;
      bool need = false;
      for (int l = 0; l < P; ++l) { T diff = component<D>(offsets(qs[l], p), dim); bool side = diff >= 0; if (side != fr || diff * diff <= c[l].bound()) need = true; }
      if (!need) { r.failed++; continue; }
      visit_all(); if (any_ins) r.ins_iters++;
      Index const other = 2 * v + 1 + (fr ? 0 : 1);
      if (node_exists(tree, other)) { curr = other; u = other; level = vl + 1; popping = false; }
    }
  }
  for (int l = 0; l < P; ++l) if ((*ref)[base + l] != c[l].c[CAP-1]) { printf("MISMATCH %d\n", base + l); exit(1); }
  return r;
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
  std::vector<unsigned long long> ref(m);
  Buckets bl(2);
  // per-lane walk (current code: defer 2)
  std::vector<Cnt> it(m);
  for (int i = 0; i < m; ++i) { SortedCandidates<Tree, 8> v(tree, k, std::numeric_limits<T>::infinity()); it[i] = walk(tree, qs(ord[i]), v, bl, 2); ref[i] = v.c[7]; }
  double w = 0, wins = 0, mean = 0;
  for (int b = 0; b + 32 <= m; b += 32) { long mx = 0; std::vector<int> u; for (int l = 0; l < 32; ++l) { mean += it[b+l].iters; mx = std::max(mx, it[b+l].iters); u.insert(u.end(), it[b+l].ins_at.begin(), it[b+l].ins_at.end()); } w += mx; std::sort(u.begin(), u.end()); wins += std::unique(u.begin(), u.end()) - u.begin(); }
  int W = m / 32;
  printf("per-lane trail walk k=%d: mean %.1f warp-max %.1f (+18 descent) ins-iters %.1f\n", k, mean / m, w / W, wins / W);
  for (int P : {32, 16, 8, 4}) {
    PacketRes<8> s; int np = 0;
    for (int b = 0; b + P <= m; b += P) { std::vector<Point<T,D>> q; for (int l = 0; l < P; ++l) q.push_back(qs(ord[b+l])); auto r = packet<8>(tree, q, k, bl, &ref, b); s.iters += r.iters; s.ins_iters += r.ins_iters; s.pops += r.pops; s.failed += r.failed; s.scans += r.scans; s.steps += r.steps; ++np; }
    printf("packet P=%d: iters %.1f (steps %.1f pops %.1f failed %.1f scans %.1f) ins-iters %.1f; per 32 queries: %.1f\n", P, s.iters/np, s.steps/np, s.pops/np, s.failed/np, s.scans/np, s.ins_iters/np, s.iters/np * 32 / P);
  }
}
