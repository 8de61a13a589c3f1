#pragma once
// kdforge-bench: generated point distributions and point files.
#include "options.hpp"

#include <cstdint>
#include <string>

namespace kdforge_bench {

/// `count` points of `dim` coordinates from a named distribution, all in the
/// unit cube:
///   uniform     uniform in [0,1]^dim
///   clustered   64 Gaussian clusters (sigma 0.02) around uniform centres
///   sphere      uniform on the sphere of radius 0.5 centred in the cube
///   duplicates  every point one of max(1, count/16) distinct uniform points
/// Throws UsageError for an unknown name.
PointSet generate_points(std::string const& dist, std::int64_t count, int dim, std::uint64_t seed);

/// `count` points uniform in the bounding box of `of` (the "uniform" query set).
PointSet uniform_in_bounds(PointSet const& of, std::int64_t count, std::uint64_t seed);

/// Reads a point file; the format follows the extension (or a leading "ply"):
///   .ply                 ascii or binary_little_endian; vertex x,y,z (and w for dim 4),
///                        any scalar property types; other properties are skipped
///   .xyz .txt .csv .pts  one point per line, numbers split by spaces/tabs/commas;
///                        the first `dim` numbers are used; blank and '#' lines skipped
///   .bin .f32 .raw       raw little-endian float32, dim values per point, no header
/// Throws UsageError naming the file, the line/byte and the problem for
/// unreadable, malformed, truncated or non-finite input.
PointSet read_points(std::string const& file, int dim);

/// Radius for a target mean neighbour count: exact formula for uniform
/// points in a box (volume of the bounding box, unit-ball volume in `dim`),
/// else the median over a sample of queries of the distance to their
/// round(target)-th nearest point (brute force on a 256-query sample).
/// `how` says which was used.
double radius_for_neighbors(PointSet const& pts, PointSet const& queries, double target, bool uniform_box,
                            std::string& how);

} // namespace kdforge_bench
