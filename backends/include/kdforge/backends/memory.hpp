#pragma once
// The one way kdforge allocates memory, and how much each memory space has.
//
// backend::allocate<View>(label or view_alloc(...), extents...) constructs
// the View as its constructor would, after checking the request against
// kdforge::set_memory_limit (and the tests' failure injection), and turns
// an allocation failure into kdforge::OutOfMemoryError with the bytes asked
// for and the bytes the space has available. Kokkos reports a failed
// allocation by std::runtime_error (3.4: "Kokkos failed to allocate memory
// for label ..." after Kokkos::Experimental::RawMemoryAllocationFailure, a
// std::bad_alloc, from the raw allocation; 4.x: "Kokkos ERROR: <space>
// memory space failed to allocate <size> (label=...)"), so both are caught
// here, where the exact size and label are known.
//
// Available memory: the device's free memory (cudaMemGetInfo) for CUDA
// device and managed memory, MemAvailable of /proc/meminfo for host memory
// (what the kernel can hand out without swapping), within the memory limit.
// Not checked before each allocation: CUDA's stream-ordered pool, which
// Kokkos is patched to use (cmake/patches), keeps freed blocks that
// cudaMemGetInfo counts as used; the pool is trimmed and the allocation
// retried before it fails, so the free memory is exact when it is reported.
#include <kdforge/backends/host/huge_pages.hpp>
#include <kdforge/backends/host/memory.hpp>
#include <kdforge/base/memory.hpp>
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#if defined(KOKKOS_ENABLE_CUDA)
#include <cuda_runtime.h>
#endif

namespace kdforge::backend {

/// Free bytes of `MemorySpace` as its owner reports them (the largest
/// size_t where unknown), ignoring the memory limit.
template <class MemorySpace>
std::size_t free_bytes() {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<MemorySpace, Kokkos::CudaSpace>::value ||
                std::is_same<MemorySpace, Kokkos::CudaUVMSpace>::value) {
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
      cudaGetLastError();
      return std::size_t(-1);
    }
    return free_b;
  }
#endif
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible) return detail::host_available_bytes();
  return std::size_t(-1);
}

/// Bytes kdforge may still allocate in `MemorySpace`: its free memory,
/// within kdforge::memory_limit().
template <class MemorySpace>
std::size_t available_bytes_in() {
  std::size_t const free_b = free_bytes<MemorySpace>();
  std::size_t const limit = memory_limit();
  return limit > 0 && limit < free_b ? limit : free_b;
}

namespace detail {

inline std::string label_of(std::string const& s) { return s; }
inline std::string label_of(char const* s) { return s; }
template <class... P>
std::string label_of(Kokkos::Impl::ViewCtorProp<P...> const& p) {
  if constexpr (bool(Kokkos::Impl::ViewCtorProp<P...>::has_label))
    return static_cast<Kokkos::Impl::ViewCtorProp<void, std::string> const&>(p).value;
  else
    return "an unlabelled View";
}

/// Whether `e` is Kokkos' report of a failed allocation (3.x and 4.x).
inline bool is_kokkos_allocation_failure(std::exception const& e) {
  char const* w = e.what();
  return std::strstr(w, "failed to allocate") != nullptr || std::strstr(w, "allocation failure") != nullptr ||
         std::strstr(w, "Allocation of size") != nullptr;
}

/// Counts a request of `bytes` and refuses it, as if `MemorySpace` were
/// full, when it exceeds the memory limit or a test asked for a failure.
template <class MemorySpace>
void admit(std::size_t bytes, std::string const& label) {
  kdforge::detail::allocation_counter().fetch_add(1);
  auto& left = kdforge::detail::allocations_before_failure();
  std::int64_t n = left.load();
  while (n > 0 && !left.compare_exchange_weak(n, n - 1)) {
  }
  if (n == 0) // and it stays 0: full from here on
    kdforge::detail::throw_out_of_memory(nullptr, label, MemorySpace::name(), bytes, 0,
                                         "a failure injected by kdforge::detail::fail_allocation_after");
  std::size_t const limit = memory_limit();
  if (limit > 0 && bytes > limit)
    kdforge::detail::throw_out_of_memory(nullptr, label, MemorySpace::name(), bytes, available_bytes_in<MemorySpace>());
}

/// Whether a View of T may hold bytes that no store writes: a struct's
/// padding. Points are arrays of one type, so they have none.
template <class T>
struct may_hold_padding : std::is_class<T> {};
template <class T, int D>
struct may_hold_padding<Point<T, D>> : std::false_type {};

/// Whether allocating with `Prop` leaves the View uninitialised (only
/// view_alloc(..., WithoutInitializing) does; a label alone initialises).
template <class Prop>
struct leaves_uninitialised : std::false_type {};
template <class... P>
struct leaves_uninitialised<Kokkos::Impl::ViewCtorProp<P...>>
    : std::bool_constant<!Kokkos::Impl::ViewCtorProp<P...>::initialize> {};

/// Zeroes the bytes of a View of structs in GPU memory that Kokkos left
/// uninitialised. A kernel that stores a struct writes its members, never
/// its padding; copying or loading the struct later (a resize, a deep_copy
/// to the host, a vector load of its last members) then reads bytes never
/// written, which compute-sanitizer's initcheck reports. Zeroed once here,
/// the padding stays defined whatever the kernels store. The wait after the
/// memset orders it before any kernel on any stream, blocking or not (a
/// memset at 3 TB/s takes a microsecond per 3 MB; the wait, a few more).
template <class V, class Prop>
void define_padding(V const& v) {
#if defined(KOKKOS_ENABLE_CUDA)
  using T = typename V::non_const_value_type;
  using MS = typename V::memory_space;
  constexpr bool device_only = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible;
  if constexpr (device_only && may_hold_padding<T>::value && leaves_uninitialised<Prop>::value) {
    if (v.span() == 0) return;
    if (cudaMemsetAsync(v.data(), 0, v.span() * sizeof(T), 0) != cudaSuccess || cudaStreamSynchronize(0) != cudaSuccess)
      cudaGetLastError(); // the padding stays undefined, as it was: nothing reads it for a value
  }
#else
  (void)v;
#endif
}

/// The scratch a live ArenaScope hands out: a bump pointer over its arena.
struct ArenaState {
  char* base = nullptr;
  std::size_t capacity = 0, used = 0;
  std::size_t wanted = 0; // bytes asked for in this scope, served or not
  static constexpr std::size_t alignment = 256;

  /// `bytes` from the arena, or nullptr where it is full.
  void* take(std::size_t bytes) {
    if (bytes > capacity - used) { // also where rounding up would wrap
      wanted = bytes > std::size_t(-1) - wanted ? std::size_t(-1) : wanted + bytes;
      return nullptr;
    }
    std::size_t const size = (bytes + alignment - 1) / alignment * alignment;
    wanted = size > std::size_t(-1) - wanted ? std::size_t(-1) : wanted + size;
    if (size > capacity - used) return nullptr;
    void* p = base + used;
    used += size;
    return p;
  }
};

/// This thread's innermost live ArenaScope over `MemorySpace`, if any.
template <class MemorySpace>
ArenaState*& current_arena() {
  static thread_local ArenaState* state = nullptr;
  return state;
}

} // namespace detail

/// Constructs a View of type V as `V(prop, extents...)` would (`prop`: a
/// label, or Kokkos::view_alloc(...) properties), but fails with
/// kdforge::OutOfMemoryError, naming the bytes requested and available,
/// when the memory limit refuses it or the memory space cannot provide it.
template <class V, class Prop, class... Extents>
V allocate(Prop const& prop, Extents... extents) {
  using MS = typename V::memory_space;
  static_assert(sizeof...(Extents) <= 8, "kdforge::backend::allocate: at most 8 extents");
  std::size_t const bytes = V::required_allocation_size(std::size_t(extents)...);
  if constexpr (detail::leaves_uninitialised<Prop>::value) {
    if (detail::ArenaState* arena = detail::current_arena<MS>())
      if (void* p = arena->take(bytes)) return V(reinterpret_cast<typename V::pointer_type>(p), extents...);
  }
  std::string const label = detail::label_of(prop);
  detail::admit<MS>(bytes, label);
  try {
    V v(prop, extents...);
    detail::define_padding<V, Prop>(v);
    return v;
  } catch (Error const&) {
    throw;
  } catch (std::bad_alloc const& e) {
    kdforge::detail::throw_out_of_memory(nullptr, label, MS::name(), bytes, available_bytes_in<MS>(), e.what());
  } catch (std::runtime_error const& e) {
    if (!detail::is_kokkos_allocation_failure(e)) throw;
    kdforge::detail::throw_out_of_memory(nullptr, label, MS::name(), bytes, available_bytes_in<MS>());
  }
}

/// Sets every byte of `v` to 0 and waits for it. Kokkos 3's deep_copy of a
/// value fills a View of bytes one byte a thread; on GPUs a memset is many
/// times faster, and an arena's block is zeroed on every build that
/// reserves one.
template <class V>
void zero_bytes(V const& v) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same<typename V::memory_space, Kokkos::CudaSpace>::value) {
    if (v.span() == 0) return;
    if (cudaMemsetAsync(v.data(), 0, v.span() * sizeof(typename V::value_type), 0) == cudaSuccess &&
        cudaStreamSynchronize(0) == cudaSuccess)
      return;
    cudaGetLastError(); // then as on hosts
  }
#endif
  Kokkos::deep_copy(v, typename V::non_const_value_type(0));
}

/// Hides this thread's live ArenaScope over `MemorySpace` while alive, so
/// that what is allocated meanwhile is allocated as usual: Views that must
/// outlive the scope (a tree's own storage, grown during its build).
template <class MemorySpace>
class ArenaPause {
 public:
  ArenaPause() : saved_(detail::current_arena<MemorySpace>()) { detail::current_arena<MemorySpace>() = nullptr; }
  ArenaPause(ArenaPause const&) = delete;
  ArenaPause& operator=(ArenaPause const&) = delete;
  ~ArenaPause() { detail::current_arena<MemorySpace>() = saved_; }

 private:
  detail::ArenaState* saved_;
};

/// Memory kept for the scratch of a repeated call (a tree rebuilt every
/// frame): while an ArenaScope over it is alive, allocate() takes the
/// uninitialised Views of its memory space that this thread asks for from
/// the arena instead of the memory space. An allocation in CUDA memory
/// writes its header to the device and waits, and a release waits for the
/// device (cmake/patches): a build of a few thousand points paid more for
/// its dozen allocations than for its kernels. The first scope allocates as
/// usual and records what it asked for; the next one grows the arena to
/// that (and a quarter more) once. Where the memory space cannot give that
/// block, the arena stays empty and its scopes allocate as usual, until
/// release(). Movable, not copyable.
template <class MemorySpace>
class Arena {
 public:
  Arena() = default;
  Arena(Arena const&) = delete;
  Arena& operator=(Arena const&) = delete;
  Arena(Arena&&) = default;
  Arena& operator=(Arena&&) = default;

  std::size_t bytes() const { return block_.span(); }
  /// Frees the block and forgets what scopes asked for; no scope over the
  /// arena may be alive.
  void release() { *this = Arena(); }
  /// Gives the arena a block of at least `bytes` now, for a call that knows
  /// its scratch before it starts (a build that runs once): its first scope
  /// then serves too. The arena serves each View in steps of 256 bytes, so
  /// count every View's size rounded up to a multiple of 256. Where the
  /// memory space cannot give the block, the arena is left empty (a block it
  /// had is freed first) and its scopes allocate as usual. No scope over the
  /// arena may be alive.
  void reserve(std::size_t bytes) {
    if (in_scope_) kdforge::detail::fail("backend::Arena::reserve", "a scope over the arena is alive");
    if (bytes > wanted_) wanted_ = bytes;
    if (bytes > block_.extent(0) && !refused_) grow(bytes);
  }

 private:
  template <class>
  friend class ArenaScope;
  /// Replaces the block by one of `bytes`, allocated as usual: uninitialised,
  /// marked for huge pages on hosts before anything touches it, then zeroed
  /// once, so the padding of the structs it will hold is never undefined
  /// (define_padding).
  void grow(std::size_t bytes) {
    block_ = {};
    ArenaPause<MemorySpace> const pause; // never from another arena's live scope
    try {
      auto block = allocate<Kokkos::View<char*, MemorySpace>>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kdforge::arena")), bytes);
      kdforge::detail::advise_huge_pages(block);
      zero_bytes(block);
      block_ = block;
    } catch (OutOfMemoryError const&) {
      refused_ = true; // allocate as usual
    }
  }
  Kokkos::View<char*, MemorySpace> block_;
  std::size_t wanted_ = 0;                 // the most one scope asked for
  bool refused_ = false;                   // the memory space could not give the block
  bool in_scope_ = false;
};

/// Serves this thread's uninitialised allocations in `MemorySpace` from
/// `arena` until it is destroyed, from its start: every View it served must
/// be dead before the next scope over the same arena begins, and before
/// the arena is released or destroyed. So a scope covers what is rebuilt
/// (a tree) and nothing that outlives it (a workspace grown inside would
/// be overwritten by the next build). Requests that do not fit are
/// allocated as usual. Scopes over different arenas nest, the innermost
/// serving; a second scope over an arena whose scope is alive is refused
/// (kdforge::Error), as it would hand out the memory the first one did.
template <class MemorySpace>
class ArenaScope {
 public:
  explicit ArenaScope(Arena<MemorySpace>& arena) : arena_(arena), previous_(detail::current_arena<MemorySpace>()) {
    if (arena.in_scope_)
      kdforge::detail::fail("backend::ArenaScope", "a second scope over an arena whose scope is still alive");
    std::size_t const want = arena.wanted_ + arena.wanted_ / 4 >= arena.wanted_ ? arena.wanted_ + arena.wanted_ / 4
                                                                                : std::size_t(-1);
    if (arena.wanted_ > arena.block_.extent(0) && !arena.refused_) arena.grow(want);
    state_.base = arena.block_.data();
    state_.capacity = arena.block_.extent(0);
    detail::current_arena<MemorySpace>() = &state_;
    arena.in_scope_ = true;
  }
  ArenaScope(ArenaScope const&) = delete;
  ArenaScope& operator=(ArenaScope const&) = delete;
  ~ArenaScope() {
    detail::current_arena<MemorySpace>() = previous_;
    arena_.in_scope_ = false;
    if (state_.wanted > arena_.wanted_) arena_.wanted_ = state_.wanted;
  }

 private:
  Arena<MemorySpace>& arena_;
  detail::ArenaState* previous_;
  detail::ArenaState state_;
};

/// Makes the View v (one run-time extent) hold at least n entries, contents undefined: a
/// build's per-level scratch, allocated for the largest level rather than
/// on every level (allocating CUDA memory writes the allocation's header to
/// the device and waits for it, and freeing waits for the device), at
/// least doubling when it grows. The old allocation is freed first, so the
/// two are never held together, and v is left empty where the new one
/// fails. `label` names the new allocation (v's own label where empty).
template <class V>
void reserve(V& v, std::size_t n, std::string label = {}) {
  static_assert(V::rank_dynamic == 1, "kdforge::backend::reserve: Views of one run-time extent");
  if (v.extent(0) >= n) return;
  std::size_t const grown = n > 2 * v.extent(0) ? n : 2 * v.extent(0);
  if (label.empty()) label = v.label();
  v = V();
  v = allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), grown);
}

/// Like Kokkos::resize(v, extents...) (rank 1 and 2), allocating through
/// allocate(), but keeping only the first `rows` rows (at most the rows both
/// extents share); the rest is uninitialised. A list grown before it is full
/// copies only the rows its kernels wrote, so no copy reads bytes never
/// written. `v` is left as it was when the allocation fails.
template <class V, class... Extents>
void resize_keeping(V& v, std::size_t rows, Extents... extents) {
  static_assert(V::rank == sizeof...(Extents) && (V::rank == 1 || V::rank == 2),
                "kdforge::backend::resize_keeping: rank-1 and rank-2 Views, one extent per rank");
  V w = allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, v.label()), extents...);
  std::size_t const e[] = {std::size_t(extents)...};
  std::size_t n0 = e[0] < v.extent(0) ? e[0] : v.extent(0);
  n0 = rows < n0 ? rows : n0;
  if constexpr (V::rank == 1) {
    Kokkos::deep_copy(Kokkos::subview(w, Kokkos::make_pair(std::size_t(0), n0)),
                      Kokkos::subview(v, Kokkos::make_pair(std::size_t(0), n0)));
  } else {
    std::size_t const n1 = e[1] < v.extent(1) ? e[1] : v.extent(1);
    Kokkos::deep_copy(Kokkos::subview(w, Kokkos::make_pair(std::size_t(0), n0), Kokkos::make_pair(std::size_t(0), n1)),
                      Kokkos::subview(v, Kokkos::make_pair(std::size_t(0), n0), Kokkos::make_pair(std::size_t(0), n1)));
  }
  v = w;
}

/// Like Kokkos::resize(v, extents...) (contents kept where the extents
/// overlap, the rest uninitialised; rank 1 and 2), allocating through
/// allocate(): `v` is left as it was when the allocation fails.
template <class V, class... Extents>
void resize(V& v, Extents... extents) {
  resize_keeping(v, v.extent(0), extents...);
}

} // namespace kdforge::backend
