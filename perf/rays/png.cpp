// PNG output through stb_image_write (Debian: libstb-dev), compiled here.
#include "png.hpp"

#include <kdforge/base/error.hpp>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>

namespace kdforge_rays {
void write_png(std::string const& file, int width, int height, std::vector<std::uint8_t> const& rgb) {
  if (rgb.size() != std::size_t(width) * std::size_t(height) * 3)
    throw kdforge::Error("kdforge: write_png: " + std::to_string(rgb.size()) + " bytes for a " + std::to_string(width) +
                         " x " + std::to_string(height) + " RGB image");
  if (!stbi_write_png(file.c_str(), width, height, 3, rgb.data(), width * 3))
    throw kdforge::Error("kdforge: cannot write the image " + file);
}
} // namespace kdforge_rays
