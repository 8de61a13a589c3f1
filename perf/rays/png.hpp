#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kdforge_rays {
/// Writes 8-bit RGB pixels (row 0 at the top) as a PNG; throws kdforge::Error on failure.
void write_png(std::string const& file, int width, int height, std::vector<std::uint8_t> const& rgb);
} // namespace kdforge_rays
