#pragma once
// Every GPU intrinsic the kernels use, behind a portable function with a
// host version: bit counts, correctly rounded arithmetic, warp-aggregated
// counters. Kernels call these and never spell __popc, __clz, atomicAdd or
// a warp vote themselves, so a new target adds its forms here only.
#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

// Full unrolling of short compile-time loops on every compiler: g++ ignores
// "#pragma unroll" and kept the bucket scan's loops rolled, whose varying
// trip counts (1, 2, 4 nodes per level) cost ~15 mispredicted branches per
// kNN query on CPUs (cachegrind). nvcc (both passes), hipcc and clang know
// "unroll" (nvcc warns on the GCC form).
#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__clang__) || !defined(__GNUC__)
#define KDFORGE_UNROLL _Pragma("unroll")
#else
#define KDFORGE_UNROLL _Pragma("GCC unroll 16")
#endif

namespace kdforge::backend {

/// True while a GPU compiler compiles device code (nvcc's or hipcc's device
/// pass); kernels use it to pick the form of a loop that suits the target
/// (a GPU's lanes run in lockstep, a CPU predicts branches).
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
inline constexpr bool device_code = true;
#else
inline constexpr bool device_code = false;
#endif

/// Number of leading zero bits (32 for 0, 64 for 0).
KOKKOS_FORCEINLINE_FUNCTION int clz32(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __clz(static_cast<int>(x));
#else
  return x == 0 ? 32 : __builtin_clz(x);
#endif
}
KOKKOS_FORCEINLINE_FUNCTION int clz64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __clzll(static_cast<long long>(x));
#else
  return x == 0 ? 64 : __builtin_clzll(x);
#endif
}

/// Number of set bits.
KOKKOS_FORCEINLINE_FUNCTION int popcount32(std::uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __popc(x);
#else
  return __builtin_popcount(x);
#endif
}
KOKKOS_FORCEINLINE_FUNCTION int popcount64(std::uint64_t x) {
#if defined(__CUDA_ARCH__)
  return __popcll(x);
#else
  return __builtin_popcountll(x);
#endif
}

/// a * b and a + b rounded to nearest, never contracted into an FMA: nvcc
/// contracts by default on the GPU, and distances would then differ from
/// the CPU's in the last bit, which breaks "identical results on every
/// backend" for near-ties.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T mul_rn(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same<T, float>::value) return __fmul_rn(a, b);
  else return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T add_rn(T a, T b) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same<T, float>::value) return __fadd_rn(a, b);
  else return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

/// *p, for memory that no thread writes while the kernel runs (a tree's
/// arrays during a query), read through a GPU's read-only data path: an LDG
/// load, which Kokkos 3's RandomAccess views replace with slower texture
/// fetches when its LDG option is off.
template <class T>
KOKKOS_FORCEINLINE_FUNCTION T load_ro(T const* p) {
#if defined(__CUDA_ARCH__)
  return __ldg(p);
#else
  return *p;
#endif
}

/// A distinct slot of *counter for each calling thread (an atomic
/// fetch-and-add of 1). On CUDA one atomic per warp for the warp's active
/// lanes, each lane taking its rank among them: half a million threads
/// adding to one address would serialize.
KOKKOS_INLINE_FUNCTION unsigned long long claim_slot(unsigned long long* counter) {
#if defined(__CUDA_ARCH__)
  unsigned const mask = __activemask();
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  int const leader = __ffs(mask) - 1;
  unsigned long long base = 0;
  if (int(lane) == leader) base = atomicAdd(counter, (unsigned long long)__popc(mask));
  base = __shfl_sync(mask, base, leader);
  return base + (unsigned long long)__popc(mask & ((1u << lane) - 1u));
#else
  return Kokkos::atomic_fetch_add(counter, 1ull);
#endif
}

} // namespace kdforge::backend
