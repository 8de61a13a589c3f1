#pragma once
// The buffers of a distributed tree's calls, kept between calls.
//
// A kNN call moves its queries and rows through about fifty buffers (the
// routes, send and receive buffers, the local rows, the phase-1 rows). Made
// and freed on every call, each costs an allocation and a release, and on a
// GPU a release waits for the device (cmake/patches: Kokkos' deallocation
// synchronises), so a call of a few milliseconds spends a large part of its
// time between kernels. The tree keeps them instead: the i-th buffer a call
// asks for is slot i, grown when a call needs more, so repeated calls of the
// same sizes allocate nothing. Buffers never leave a call: results are the
// caller's own Views.
#include <kdforge/backends/host/huge_pages.hpp>
#include <kdforge/backends/memory.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace kdforge::distributed {

template <class MemorySpace>
class Scratch {
public:
  /// A call starts: its buffers are handed out from slot 0 again.
  void begin() { m_next = 0; }

  /// The call's next buffer, as a View of type V with the given extents
  /// (unmanaged: it lives in the slot until the slot grows or is released;
  /// contents undefined). Grows the slot (by an eighth more than asked, so
  /// sizes that creep up do not allocate on every call); an allocation that
  /// fails throws OutOfMemoryError and leaves the slot empty.
  template <class V, class... Extents>
  V take(char const* label, Extents... extents) {
    static_assert(sizeof...(Extents) == V::rank, "Scratch::take: one extent per rank of the View");
    std::size_t elements = 1;
    for (std::size_t e : {std::size_t(extents)...}) elements *= e;
    std::size_t const bytes = elements * sizeof(typename V::value_type);
    if (m_next == m_slots.size()) m_slots.emplace_back();
    auto& slot = m_slots[m_next++];
    // never a null pointer, even for no elements: the local queries keep a
    // result View they are given only where it points somewhere
    if (slot.span() < bytes || slot.data() == nullptr) {
      slot = Buffer(); // the old one first: no peak of both
      slot = backend::allocate<Buffer>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                                       std::max<std::size_t>(bytes + bytes / 8, 64));
      detail::advise_huge_pages(slot);
    }
    return V(reinterpret_cast<typename V::pointer_type>(slot.data()), std::size_t(extents)...);
  }

  /// The temporary storage of the vendor sorts and scans (CUB's on GPUs;
  /// unused on CPUs), grown by them as needed. Each user waits for its sort
  /// or scan to finish before the next one may grow it (the scans return
  /// their totals; the routes' sort is fenced before the route returns).
  Kokkos::View<char*, MemorySpace>& vendor() { return m_vendor; }

  /// Bytes held.
  std::size_t bytes() const {
    std::size_t b = m_vendor.span();
    for (auto const& s : m_slots) b += s.span();
    return b;
  }
  /// Frees every slot (the next call allocates again).
  void release() {
    m_slots.clear();
    m_vendor = Buffer();
    m_next = 0;
  }

private:
  using Buffer = Kokkos::View<char*, MemorySpace>;
  std::vector<Buffer> m_slots;
  Buffer m_vendor;
  std::size_t m_next = 0;
};

} // namespace kdforge::distributed
