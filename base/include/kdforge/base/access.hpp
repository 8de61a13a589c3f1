#pragma once
// The points adaptor: how kdforge reads the caller's points (and queries).
//
// Works out of the box for
//   Kokkos::View<kdforge::Point<T, D>*, ...>      (array of points)
//   Kokkos::View<T*[D], ...>                      (N x D coordinates, any layout)
//   Kokkos::View<S*, ...> for a user struct S with kdforge::PointTraits<S>
// and for any container C with a specialisation of kdforge::AccessTraits<C>.
// T is float or double and D is known at compile time.
#include <kdforge/base/types.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace kdforge {

/// Specialise for a point struct S stored in a Kokkos::View<S*> (payload
/// allowed):
///   template <> struct kdforge::PointTraits<Particle> {
///     static constexpr int dimension = 3;
///     using coordinate_type = float;
///     KOKKOS_FUNCTION static float coordinate(Particle const& p, int d) { return p.x[d]; }
///   };
template <class S>
struct PointTraits {
  using kdforge_not_specialized = void;
};

/// Specialise for any other container C:
///   template <> struct kdforge::AccessTraits<C> {
///     using memory_space = ...;           // where the data lives
///     using coordinate_type = float;      // or double
///     static constexpr int dimension = 3;
///     static std::size_t size(C const&);  // called on the host
///     KOKKOS_FUNCTION static coordinate_type coordinate(C const&, std::size_t i, int d);
///   };
template <class C, class Enable = void>
struct AccessTraits {
  using kdforge_not_specialized = void;
};

template <class T, int D, class... P>
struct AccessTraits<Kokkos::View<Point<T, D>*, P...>> {
  using container = Kokkos::View<Point<T, D>*, P...>;
  using memory_space = typename container::memory_space;
  using coordinate_type = std::remove_const_t<T>;
  static constexpr int dimension = D;
  static std::size_t size(container const& v) { return v.extent(0); }
  KOKKOS_FORCEINLINE_FUNCTION static coordinate_type coordinate(container const& v, std::size_t i, int d) {
    return v(i)[d];
  }
};
template <class T, int D, class... P>
struct AccessTraits<Kokkos::View<Point<T, D> const*, P...>> {
  using container = Kokkos::View<Point<T, D> const*, P...>;
  using memory_space = typename container::memory_space;
  using coordinate_type = T;
  static constexpr int dimension = D;
  static std::size_t size(container const& v) { return v.extent(0); }
  KOKKOS_FORCEINLINE_FUNCTION static coordinate_type coordinate(container const& v, std::size_t i, int d) {
    return v(i)[d];
  }
};

template <class T, std::size_t D, class... P>
struct AccessTraits<Kokkos::View<T* [D], P...>, std::enable_if_t<std::is_floating_point<std::remove_const_t<T>>::value>> {
  using container = Kokkos::View<T* [D], P...>;
  using memory_space = typename container::memory_space;
  using coordinate_type = std::remove_const_t<T>;
  static constexpr int dimension = int(D);
  static std::size_t size(container const& v) { return v.extent(0); }
  KOKKOS_FORCEINLINE_FUNCTION static coordinate_type coordinate(container const& v, std::size_t i, int d) {
    return v(i, d);
  }
};

namespace detail {
template <class S, class = void>
struct has_point_traits : std::true_type {};
template <class S>
struct has_point_traits<S, typename PointTraits<S>::kdforge_not_specialized> : std::false_type {};
} // namespace detail

template <class S, class... P>
struct AccessTraits<Kokkos::View<S*, P...>,
                    std::enable_if_t<detail::has_point_traits<std::remove_const_t<S>>::value>> {
  using container = Kokkos::View<S*, P...>;
  using traits = PointTraits<std::remove_const_t<S>>;
  using memory_space = typename container::memory_space;
  using coordinate_type = typename traits::coordinate_type;
  static constexpr int dimension = traits::dimension;
  static std::size_t size(container const& v) { return v.extent(0); }
  KOKKOS_FORCEINLINE_FUNCTION static coordinate_type coordinate(container const& v, std::size_t i, int d) {
    return traits::coordinate(v(i), d);
  }
};

namespace detail {
template <class C, class = void>
struct is_specialized : std::true_type {};
template <class C>
struct is_specialized<C, typename AccessTraits<C>::kdforge_not_specialized> : std::false_type {};

/// Plain-English compile errors for containers kdforge cannot read.
template <class C, class Exec>
constexpr bool check_points_container() {
  static_assert(is_specialized<C>::value,
                "kdforge: this points/queries container is not supported. Pass a "
                "Kokkos::View<kdforge::Point<T, D>*>, a Kokkos::View<T*[D]>, a Kokkos::View<S*> "
                "with kdforge::PointTraits<S> specialised, or specialise kdforge::AccessTraits "
                "for your container (see kdforge/points.hpp).");
  if constexpr (is_specialized<C>::value) {
    using A = AccessTraits<C>;
    using T = typename A::coordinate_type;
    static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                  "kdforge: coordinates must be float or double (AccessTraits<C>::coordinate_type).");
    static_assert(A::dimension >= 1 && A::dimension <= 64,
                  "kdforge: the dimension (AccessTraits<C>::dimension) must be between 1 and 64.");
    static_assert(Kokkos::SpaceAccessibility<Exec, typename A::memory_space>::accessible,
                  "kdforge: the points are in a memory space the execution space cannot read; "
                  "copy them to the execution space's memory first (Kokkos::create_mirror_view_and_copy).");
  }
  return true;
}
} // namespace detail

} // namespace kdforge
