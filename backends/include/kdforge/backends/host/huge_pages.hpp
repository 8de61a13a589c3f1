#pragma once
// Transparent huge pages for kdforge's large host arrays (Linux).
//
// A CPU query reads tree nodes all over a 16 MiB array (1M points) and writes
// its result row at its caller's position (kNN k = 8: 64 MiB for 1M
// queries): with 4 KiB pages most of those touches miss the TLB. Linux backs
// a region with 2 MiB pages when the region was marked MADV_HUGEPAGE before
// it was touched (the common "madvise" setting of
// /sys/kernel/mm/transparent_hugepage/enabled; "always" needs no mark,
// "never" ignores it). kdforge marks the tree's nodes and the result Views
// it allocates (16 Xeon cores, 1M x 1M kNN k = 8: 92 -> 86 ms;
// docs/performance.md). GPU memory and other memory spaces are left alone.
#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kdforge::detail {

inline constexpr std::size_t huge_page_bytes = std::size_t(2) << 20;

/// The whole 2 MiB pages inside [address, address + bytes): [first, last),
/// first == last when there is none. Only these may be marked: a partial
/// page would mark memory outside the allocation.
struct HugePageRange {
  std::uintptr_t first = 0, last = 0;
};
inline HugePageRange whole_huge_pages(std::uintptr_t address, std::size_t bytes) {
  std::uintptr_t const mask = huge_page_bytes - 1;
  std::uintptr_t const first = (address + mask) & ~mask;
  std::uintptr_t const end = address + bytes;
  std::uintptr_t const last = end & ~mask;
  return first < last ? HugePageRange{first, last} : HugePageRange{};
}

/// Marks the whole 2 MiB pages of a freshly allocated (not yet touched)
/// host View for huge pages. Returns whether any page was marked: false for
/// other memory spaces, Views of less than two huge pages, other systems,
/// or when the kernel refuses (the advice is only a hint either way).
template <class View>
bool advise_huge_pages(View const& v) {
  if constexpr (!std::is_same<typename View::memory_space, Kokkos::HostSpace>::value) {
    return false;
  } else {
    std::size_t const bytes = v.span() * sizeof(typename View::value_type);
    if (v.data() == nullptr || bytes < 2 * huge_page_bytes) return false;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    auto const r = whole_huge_pages(reinterpret_cast<std::uintptr_t>(v.data()), bytes);
    if (r.first == r.last) return false;
    return madvise(reinterpret_cast<void*>(r.first), r.last - r.first, MADV_HUGEPAGE) == 0;
#else
    return false;
#endif
  }
}

} // namespace kdforge::detail
