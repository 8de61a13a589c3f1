#pragma once
// kdforge-bench: generated point distributions and point files.
#include "options.hpp"
#include "point_files.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace kdforge_bench {

/// A name of --dist or --queries with its one-line description (--help).
struct NamedKind {
  char const* name;
  char const* description;
};

/// The generated distributions, in --help order:
///   uniform         uniform in [0,1]^dim
///   clustered       ~sqrt(count) Gaussian blobs, centres in [0.1,0.9]^dim, sigma log-uniform in [0.002,0.03]
///   sphere          uniform on the sphere of radius 0.5 centred in the cube
///   plane           last coordinate 0.5, the others uniform
///   tilted-plane    uniform on the cube's section by the plane sum(x) = dim/2
///   line            the cube's diagonal: every coordinate t, t uniform
///   lidar           a synthetic spinning-scanner scan of a ground square and boxes (dim 3 only)
///   duplicates      half distinct uniform points, half copies of them, shuffled
///   duplicates-all  one uniform point, repeated
///   anisotropic     x uniform in [0,1000], the others in [0,1]
std::vector<NamedKind> const& distributions();

/// `count` points of `dim` coordinates from a named distribution (see
/// distributions()); deterministic for a seed. Throws UsageError for an
/// unknown name or lidar with dim != 3.
PointSet generate_points(std::string const& dist, std::int64_t count, int dim, std::uint64_t seed);

/// A parsed --queries value.
struct QueryKind {
  std::string kind; ///< same | uniform | jitter | far | file ("self" is read as same)
  double sigma = 0; ///< jitter: standard deviation of the noise, in coordinates
  std::string name() const; ///< as recorded in the table and JSON: same, uniform, jitter:0.001, far, file
};

/// The generated query kinds, in --help order (files are not listed).
std::vector<NamedKind> const& query_kinds();

/// Parses --queries: a generated kind, else a file name. Throws UsageError
/// for a malformed jitter:SIGMA.
QueryKind parse_queries(std::string const& q);

/// `count` queries of kind uniform, jitter or far for `points`:
///   uniform   uniform in the points' bounding box
///   jitter    a random point plus Gaussian noise of standard deviation sigma per coordinate
///   far       uniform in a box of the bounding box's size, shifted 1e6 widths along every
///             axis (width 1 for an axis where the points have none)
PointSet generate_queries(QueryKind const& q, PointSet const& points, std::int64_t count, std::uint64_t seed);

/// `count` points uniform in the bounding box of `of` (the "uniform" query set).
PointSet uniform_in_bounds(PointSet const& of, std::int64_t count, std::uint64_t seed);

/// Radius for a target mean neighbour count: exact formula for uniform
/// points in the unit cube, else the radius at which up to 64 evenly spaced
/// queries of `sample_from` (of its first `m`) find `target` points on
/// average (brute force; the formula on the bounding box where that radius
/// is 0). `how` says which was used; `sampled_mean` is the samples' mean
/// count at the radius, far above the target where many points coincide.
double radius_for_neighbors(PointSet const& pts, PointSet const& sample_from, std::int64_t m, double target,
                            bool uniform_box, std::string& how, double& sampled_mean);

} // namespace kdforge_bench
