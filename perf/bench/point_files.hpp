#pragma once
// Point files of the command-line tools (kdforge-bench --points / --queries,
// kdforge-icp-bench --target / --source): PLY, XYZ text and raw float32.
// Host code without Kokkos, so the fuzz targets (tests/fuzz) link it alone.
#include "options.hpp"

#include <istream>
#include <string>

namespace kdforge_bench {

/// The point file formats.
enum class PointFormat {
  ply,         ///< ascii or binary_little_endian; vertex x, y, z (and w for dim 4), any scalar types
  xyz,         ///< text, one point per line
  raw_float32, ///< raw little-endian float32, dim values per point, no header
};

/// Reads a point file; the format follows the extension (or a leading "ply"):
///   .ply                 ascii or binary_little_endian; vertex x,y,z (and w for dim 4),
///                        any scalar property types; other properties are skipped
///   .xyz .txt .csv .pts  one point per line, numbers split by spaces/tabs/commas;
///                        the first `dim` numbers are used; blank and '#' lines skipped
///   .bin .f32 .raw       raw little-endian float32, dim values per point, no header
/// Throws UsageError naming the file, the line/byte and the problem for
/// unreadable, malformed, truncated or non-finite input, and for a header
/// that announces more points than the file holds (refused before anything
/// is allocated for them).
PointSet read_points(std::string const& file, int dim);

/// As read_points, from a stream that holds the file's bytes; `name` names
/// the file in messages. `dim` must be in [1, 64].
PointSet parse_points(std::istream& in, std::string const& name, PointFormat format, int dim);

} // namespace kdforge_bench
