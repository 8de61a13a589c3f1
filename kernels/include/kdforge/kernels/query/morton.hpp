#pragma once
// Spatially coherent processing order for batched queries: queries sorted by
// the Morton code of their position (in the tree's bounding box). Neighbouring
// GPU threads then walk nearly the same nodes: fewer divergent branches and
// far better reuse of the tree's nodes in L1/L2; a CPU thread's consecutive
// queries find the nodes of the previous one in its caches (kNN k = 8,
// 1M x 1M on 16 cores: 130 ms instead of 160). Results are still written in
// the caller's order.
#include <kdforge/backends/memory.hpp>
#include <kdforge/backends/primitives.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace kdforge::kernels {

/// 32-bit codes: 32 / D bits per dimension (10 for D = 3, a 1024^3 grid;
/// 24 for D = 1, a cell index exact in float and a shift below the word's
/// width), and only the first 32 dimensions above D = 32. Coarser than the
/// points' precision on purpose: the order only needs to group nearby
/// queries, and a 30-bit key sorts in 4 radix passes where a 63-bit one
/// takes 8.
template <int D>
KOKKOS_INLINE_FUNCTION constexpr int morton_dims() { return D < 32 ? D : 32; }
template <int D>
KOKKOS_INLINE_FUNCTION constexpr int morton_bits_per_dim() { return D == 1 ? 24 : 32 / morton_dims<D>(); }
template <int D>
KOKKOS_INLINE_FUNCTION constexpr int morton_key_bits() { return morton_bits_per_dim<D>() * morton_dims<D>(); }

template <class T, int D>
KOKKOS_FUNCTION std::uint32_t morton_code(Point<T, D> const& q, Box<T, D> const& box) {
  constexpr int dims = morton_dims<D>();
  constexpr int bits = morton_bits_per_dim<D>();
  std::uint32_t cell[dims];
  for (int d = 0; d < dims; ++d) {
    T const extent = box.hi[d] - box.lo[d];
    T t = extent > 0 ? (q[d] - box.lo[d]) / extent : T(0);
    t = t >= T(0) ? (t <= T(1) ? t : T(1)) : T(0); // also maps NaN to 0
    cell[d] = std::uint32_t(t * T((std::uint32_t(1) << bits) - 1));
  }
  std::uint32_t code = 0;
  for (int b = bits - 1; b >= 0; --b)
    for (int d = 0; d < dims; ++d) code = (code << 1) | ((cell[d] >> b) & 1u);
  return code;
}

/// Morton codes of the queries and the identity order, and, where `bad` is
/// allocated, the smallest index of a query with a NaN, infinite or
/// out-of-range coordinate in it (base/types.hpp, is_usable) (checked in the same pass: the queries are read once).
template <class QV, class B, class Codes, class Order, class Bad>
struct MortonCodes {
  QV queries;
  B box;
  Codes codes;
  Order order;
  Bad bad;
  KOKKOS_FUNCTION void operator()(std::int64_t i) const {
    auto const q = queries(i);
    codes(i) = morton_code(q, box);
    order(i) = typename Order::value_type(i);
    if (bad.data() && !kdforge::detail::is_usable(q)) Kokkos::atomic_fetch_min(&bad(), std::int64_t(i));
  }
};

/// How many of the top bits of the D-dimensional codes the processing order
/// sorts by, for m queries: the fewest whole radix passes (8 bits each, as
/// CUB and the host radix sorts take them) that leave at most ~32 queries
/// per cell of the coarser grid on average (m <= 32 * 2^bits), and never
/// more than the code has. Inside a cell the queries keep their given order
/// (the sort is stable); a cell is no larger than a GPU warp's share of
/// space, so ordering it further buys no coherence: 1M queries need two
/// passes instead of the four of a 30-bit key (each ~18 us on an H100).
template <int D>
inline int morton_sort_bits(std::int64_t m) {
  int bits = 8;
  while (bits < morton_key_bits<D>() && m > (std::int64_t(32) << bits)) bits += 8;
  return bits < morton_key_bits<D>() ? bits : morton_key_bits<D>();
}

/// The Morton codes of m queries in `codes` and the identity order in
/// `order_bytes` (both grown as needed), the first non-finite query in
/// `bad`; returns the order, which sort_morton_order then sorts.
/// Asynchronous: the caller keeps the Views alive, and does not reuse them
/// on another instance, until its own kernels that read them have run.
template <class Exec, class T, int D, class Index>
Kokkos::View<Index*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
morton_codes(Exec const& exec, Kokkos::View<Point<T, D>*, typename Exec::memory_space> const& queries,
             Box<T, D> const& box, Kokkos::View<std::uint32_t*, typename Exec::memory_space>& codes,
             Kokkos::View<char*, typename Exec::memory_space>& order_bytes,
             Kokkos::View<std::int64_t, typename Exec::memory_space> const& bad) {
  using MS = typename Exec::memory_space;
  std::int64_t const m = std::int64_t(queries.extent(0));
  if (std::int64_t(codes.extent(0)) < m)
    codes = backend::allocate<Kokkos::View<std::uint32_t*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::query::morton"), m);
  if (std::int64_t(order_bytes.extent(0)) < m * std::int64_t(sizeof(Index)))
    order_bytes = backend::allocate<Kokkos::View<char*, MS>>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kdforge::query::order"),
                                          m * std::int64_t(sizeof(Index)));
  Kokkos::View<Index*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> order(reinterpret_cast<Index*>(order_bytes.data()), m);
  auto const c = Kokkos::subview(codes, Kokkos::make_pair(std::int64_t(0), m));
  Kokkos::parallel_for("kdforge::query::morton", Kokkos::RangePolicy<Exec>(exec, 0, m),
                       MortonCodes<std::decay_t<decltype(queries)>, Box<T, D>, decltype(c), decltype(order),
                                   std::decay_t<decltype(bad)>>{queries, box, c, order, bad});
  return order;
}

/// Sorts the order morton_codes made by the top bits of the codes.
template <class Exec, int D, class Order>
void sort_morton_order(Exec const& exec, Kokkos::View<std::uint32_t*, typename Exec::memory_space> const& codes,
                       Order const& order, Kokkos::View<char*, typename Exec::memory_space>& scratch) {
  std::int64_t const m = std::int64_t(order.extent(0));
  auto const c = Kokkos::subview(codes, Kokkos::make_pair(std::int64_t(0), m));
  int const bits = morton_sort_bits<D>(m);
  backend::sort_by_key_async(exec, c, order, scratch, morton_key_bits<D>() - bits, morton_key_bits<D>());
}

} // namespace kdforge::kernels
