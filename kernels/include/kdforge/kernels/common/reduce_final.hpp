#pragma once
// A reduction whose final step runs on the device, for GPUs: the ICP loop
// (kernels/registration/icp_loop.hpp) reduces 17 or 30 doubles per
// iteration and solves for the next transform in the reduction's final
// step, 30 times a frame.
//
// Not from the papers. Kokkos' Cuda parallel_reduce (3.4) took 23 us on an
// H200 to reduce 17 doubles over 8,055 items that did nothing else, where
// a parallel_for over them took 5.8 us: its last block reads every block's
// value through volatile loads and reduces them word by word. Here each
// team reduces its items (team_reduce), its first thread stores the team's
// value and then takes a ticket (a device-scope atomic after a fence, the
// pattern of CUDA's threadFenceReduction sample); the team with the last
// ticket joins the teams' values, in 32 strided chunks and then the chunks
// in a fixed tree, runs the final step and resets the ticket: 6.4 us. The
// order of the joins depends on the number of items and the team size only,
// so a result is the same from run to run.
//
// F: value_type (trivially copyable and default-constructible, a multiple
// of 8 bytes), init(v), join(a, b), operator()(std::int64_t i,
// value_type&), final(value_type&), as for Kokkos::parallel_reduce.
#include <kdforge/backends/memory.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

namespace kdforge::kernels {

namespace reduce_final_detail {

/// F as a Kokkos reducer of its value_type, for team_reduce.
template <class F>
struct FunctorReducer {
  using reducer = FunctorReducer;
  using value_type = typename F::value_type;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  F const* f;
  value_type* v;
  KOKKOS_INLINE_FUNCTION void join(value_type& a, value_type const& b) const { f->join(a, b); }
  KOKKOS_INLINE_FUNCTION void init(value_type& x) const { f->init(x); }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *v; }
  KOKKOS_INLINE_FUNCTION result_view_type view() const { return result_view_type(v); }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }
};

/// A value another team stored: read past this SM's L1 (volatile), after
/// the fence that ordered it before the ticket.
template <class V>
KOKKOS_INLINE_FUNCTION V load_stored(V const* p) {
  static_assert(sizeof(V) % sizeof(std::uint64_t) == 0, "values of whole 8-byte words");
  constexpr std::size_t words = sizeof(V) / sizeof(std::uint64_t);
  std::uint64_t w[words];
  auto const* src = reinterpret_cast<volatile std::uint64_t const*>(p);
  for (std::size_t k = 0; k < words; ++k) w[k] = src[k];
  V v;
  std::memcpy(&v, w, sizeof v);
  return v;
}

inline constexpr int max_chunks = 32; ///< the last team's parallel joins at most

template <class Exec, class F>
struct TeamReduceFinal {
  using member_type = typename Kokkos::TeamPolicy<Exec>::member_type;
  using value_type = typename F::value_type;
  F f;
  value_type* partials; ///< one per team
  unsigned* ticket;     ///< zero between launches
  std::int64_t n;
  int chunks; ///< the last team's parallel joins: a power of two, at most the team size

  KOKKOS_INLINE_FUNCTION void operator()(member_type const& team) const {
    value_type v;
    f.init(v);
    std::int64_t const i = std::int64_t(team.league_rank()) * team.team_size() + team.team_rank();
    if (i < n) f(i, v);
    team.team_reduce(FunctorReducer<F>{&f, &v});
    int last = 0;
    if (team.team_rank() == 0) {
      partials[team.league_rank()] = v;
      Kokkos::memory_fence();
      last = Kokkos::atomic_fetch_add(ticket, 1u) == unsigned(team.league_size() - 1);
    }
    team.team_broadcast(last, 0);
    if (!last) return;
    Kokkos::memory_fence();
    auto* const chunk = static_cast<value_type*>(team.team_shmem().get_shmem(sizeof(value_type) * chunks));
    int const r = team.team_rank();
    if (r < chunks) {
      value_type a;
      f.init(a);
      for (int l = r; l < team.league_size(); l += chunks) {
        value_type const b = load_stored(partials + l);
        f.join(a, b);
      }
      chunk[r] = a;
    }
    for (int s = chunks / 2; s > 0; s /= 2) {
      team.team_barrier();
      if (r < s) {
        value_type a = chunk[r];
        f.join(a, chunk[r + s]);
        chunk[r] = a;
      }
    }
    team.team_barrier();
    if (r == 0) {
      value_type a = chunk[0];
      f.final(a);
      *ticket = 0;
    }
  }
};

} // namespace reduce_final_detail

/// Kokkos::parallel_reduce(label, RangePolicy(exec, 0, n), f) for f with a
/// final step and no result on the host, asynchronously (see the file's
/// comment; written for GPUs, correct on every execution space). The final
/// step runs once, also for n = 0 (on f's initial value). `scratch` holds
/// the teams' values and the ticket; it grows as needed and is kept by the
/// caller (it must start zeroed, and calls on other execution space
/// instances may not share it).
template <class Exec, class F>
void reduce_with_final(Exec const& exec, char const* label, std::int64_t n, F const& f,
                       Kokkos::View<char*, typename Exec::memory_space>& scratch) {
  using V = typename F::value_type;
  static_assert(std::is_trivially_copyable<V>::value, "kdforge::kernels::reduce_with_final: plain values only");
  using Launch = reduce_final_detail::TeamReduceFinal<Exec, F>;
  constexpr int max_chunks = reduce_final_detail::max_chunks;
  // Light weight: the functor goes as a kernel argument (up to 4 KB). By
  // default Kokkos' Cuda launch copies a functor of 512 bytes or more to
  // constant memory and first waits for the previous kernel that used it:
  // the ICP loop's host then waited for every iteration, which took 1.85
  // ms a frame instead of 1.77 with the slower reduction.
  auto team_policy = [&](int league, int team) {
    return Kokkos::Experimental::require(Kokkos::TeamPolicy<Exec>(exec, league, team),
                                         Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  };
  auto probe = team_policy(1, 1); // the launched kernel's limits
  probe.set_scratch_size(0, Kokkos::PerTeam(sizeof(V) * max_chunks));
  int const most = probe.team_size_max(Launch{f, nullptr, nullptr, n, 1}, Kokkos::ParallelForTag());
  int team = 256; // a power of two (host spaces: often 1)
  while (team > 1 && team > most) team /= 2;
  int const chunks = team < max_chunks ? team : max_chunks;
  std::int64_t const league = n > 0 ? (n + team - 1) / team : 1;
  constexpr std::size_t ticket_bytes = 64; // the teams' values start aligned after it
  std::size_t const bytes = ticket_bytes + std::size_t(league) * sizeof(V);
  if (scratch.extent(0) < bytes) {
    scratch = {};
    // zeroed (a label alone initialises): the ticket starts at 0
    scratch = backend::allocate<Kokkos::View<char*, typename Exec::memory_space>>(
        std::string("kdforge::reduce_with_final"), bytes);
  }
  auto policy = team_policy(int(league), team);
  policy.set_scratch_size(0, Kokkos::PerTeam(sizeof(V) * chunks));
  Kokkos::parallel_for(label, policy,
                       Launch{f, reinterpret_cast<V*>(scratch.data() + ticket_bytes),
                              reinterpret_cast<unsigned*>(scratch.data()), n, chunks});
}

} // namespace kdforge::kernels
