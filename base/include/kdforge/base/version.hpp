#pragma once
// The one place the kdforge version is defined; CMake reads these lines.
#define KDFORGE_VERSION_MAJOR 0
#define KDFORGE_VERSION_MINOR 1
#define KDFORGE_VERSION_PATCH 0

#define KDFORGE_VERSION_STRING_IMPL2(a, b, c) #a "." #b "." #c
#define KDFORGE_VERSION_STRING_IMPL(a, b, c) KDFORGE_VERSION_STRING_IMPL2(a, b, c)
#define KDFORGE_VERSION_STRING                                                 \
  KDFORGE_VERSION_STRING_IMPL(KDFORGE_VERSION_MAJOR, KDFORGE_VERSION_MINOR,    \
                              KDFORGE_VERSION_PATCH)

namespace kdforge {
/// The library version, "major.minor.patch".
inline constexpr char const* version() { return KDFORGE_VERSION_STRING; }
} // namespace kdforge
