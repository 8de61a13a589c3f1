// kdforge-bench: point distributions (see pointset.hpp); the file readers are
// in point_files.cpp.
#include "pointset.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace kdforge_bench {

std::vector<NamedKind> const& distributions() {
  static std::vector<NamedKind> const all{
      {"uniform", "uniform in the unit cube [0,1]^D"},
      {"clustered", "~sqrt(N) Gaussian blobs, centres uniform in [0.1,0.9]^D, sigma per blob log-uniform in [0.002,0.03]"},
      {"sphere", "uniform on the sphere surface, centre 0.5, radius 0.5"},
      {"plane", "axis-aligned plane: last coordinate 0.5, the others uniform in [0,1]"},
      {"tilted-plane", "uniform on the plane sum of coordinates = D/2 (x+y+z = 1.5) inside the unit cube"},
      {"line", "the cube's diagonal: every coordinate t, t uniform in [0,1]"},
      {"lidar", "synthetic LiDAR scan (D = 3 only): 64 rings, -25..+3 degrees, from (0.5,0.5,0.2) onto the "
                "ground square z = 0 and 12 boxes, range noise 1e-4 of the range"},
      {"duplicates", "half the points distinct uniform, the other half copies of them (shuffled)"},
      {"duplicates-all", "one uniform point, N times (radius ops find all N points per query)"},
      {"anisotropic", "x uniform in [0,1000], the other coordinates in [0,1]"},
  };
  return all;
}

namespace {

/// Axis-aligned box [lo, hi] of the lidar scene.
struct Box {
  double lo[3], hi[3];
};

/// Ray parameter of the first hit of origin + t dir with the box, or +inf.
double hit_box(Box const& b, double const* o, double const* dir) {
  double t0 = 0, t1 = std::numeric_limits<double>::infinity();
  for (int d = 0; d < 3; ++d) {
    if (dir[d] == 0) {
      if (o[d] < b.lo[d] || o[d] > b.hi[d]) return std::numeric_limits<double>::infinity();
      continue;
    }
    double a = (b.lo[d] - o[d]) / dir[d], c = (b.hi[d] - o[d]) / dir[d];
    if (a > c) std::swap(a, c);
    t0 = std::max(t0, a);
    t1 = std::min(t1, c);
  }
  return t0 <= t1 && t0 > 0 ? t0 : std::numeric_limits<double>::infinity();
}

/// A spinning scanner in a 1x1 ground square with a dozen boxes; each ray
/// returns its first hit, rays that leave the square or go up into the open
/// are dropped. Azimuth steps are chosen so that at least `count` rays hit,
/// then the hits are thinned evenly to exactly `count`.
void lidar_scan(double* x, std::int64_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  double const origin[3] = {0.5, 0.5, 0.2};
  std::vector<Box> boxes;
  while (boxes.size() < 12) {
    Box b;
    double const sx = 0.03 + 0.12 * u(rng), sy = 0.03 + 0.12 * u(rng), h = 0.02 + 0.28 * u(rng);
    b.lo[0] = (1 - sx) * u(rng), b.lo[1] = (1 - sy) * u(rng), b.lo[2] = 0;
    b.hi[0] = b.lo[0] + sx, b.hi[1] = b.lo[1] + sy, b.hi[2] = h;
    // The scanner must stand outside every box.
    if (b.lo[0] < origin[0] + 0.05 && b.hi[0] > origin[0] - 0.05 && b.lo[1] < origin[1] + 0.05 &&
        b.hi[1] > origin[1] - 0.05)
      continue;
    boxes.push_back(b);
  }
  int const rings = 64;
  double const deg = M_PI / 180, phase = u(rng);
  auto first_hit = [&](double elevation, double azimuth, double* dir) {
    dir[0] = std::cos(elevation) * std::cos(azimuth);
    dir[1] = std::cos(elevation) * std::sin(azimuth);
    dir[2] = std::sin(elevation);
    double t = std::numeric_limits<double>::infinity();
    if (dir[2] < 0) {
      double const tg = -origin[2] / dir[2];
      double const gx = origin[0] + tg * dir[0], gy = origin[1] + tg * dir[1];
      if (gx >= 0 && gx <= 1 && gy >= 0 && gy <= 1) t = tg;
    }
    for (auto const& b : boxes) t = std::min(t, hit_box(b, origin, dir));
    return t;
  };
  auto scan = [&](std::int64_t steps, std::vector<double>* hits) {
    std::int64_t n = 0;
    double dir[3];
    for (std::int64_t a = 0; a < steps; ++a) {
      double const azimuth = 2 * M_PI * (double(a) + phase) / double(steps);
      for (int r = 0; r < rings; ++r) {
        double const t = first_hit((-25 + 28.0 * r / (rings - 1)) * deg, azimuth, dir);
        if (!std::isfinite(t)) continue;
        ++n;
        if (hits) hits->insert(hits->end(), {t, dir[0], dir[1], dir[2]});
      }
    }
    return n;
  };
  // The fraction of rays that hit, from a coarse scan, sets the resolution.
  std::int64_t const coarse = 1024;
  double const fraction = double(scan(coarse, nullptr)) / double(coarse * rings);
  std::int64_t steps = std::max<std::int64_t>(1, std::int64_t(std::ceil(double(count) / (fraction * rings) * 1.01)));
  std::vector<double> hits;
  for (;;) {
    hits.clear();
    std::int64_t const got = scan(steps, &hits);
    if (got >= count) break;
    steps = steps + std::max<std::int64_t>(1, std::int64_t(double(steps) * double(count - got) / double(got + 1) * 1.1));
  }
  std::int64_t const total = std::int64_t(hits.size() / 4);
  std::int64_t kept = 0, acc = 0;
  for (std::int64_t h = 0; h < total && kept < count; ++h) {
    acc += count; // Bresenham: keep `count` of `total` hits, evenly spread
    if (acc < total) continue;
    acc -= total;
    double const* e = &hits[std::size_t(h) * 4];
    double const range = e[0] * (1 + 1e-4 * g(rng));
    for (int d = 0; d < 3; ++d) x[kept * 3 + d] = origin[d] + range * e[1 + d];
    ++kept;
  }
}

} // namespace

PointSet generate_points(std::string const& dist, std::int64_t count, int dim, std::uint64_t seed) {
  PointSet ps;
  ps.dim = dim;
  ps.source = dist;
  if (dist == "lidar" && dim != 3) throw UsageError("--dist lidar needs --dim 3");
  ps.coords.resize(std::size_t(count) * dim);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  double* x = ps.coords.data();
  if (dist == "uniform") {
    for (auto& c : ps.coords) c = u(rng);
  } else if (dist == "clustered") {
    std::int64_t const clusters = std::max<std::int64_t>(1, std::llround(std::sqrt(double(count))));
    std::vector<double> centre(static_cast<std::size_t>(clusters) * dim), sigma(static_cast<std::size_t>(clusters));
    for (auto& c : centre) c = 0.1 + 0.8 * u(rng);
    for (auto& s : sigma) s = 0.002 * std::pow(15.0, u(rng)); // log-uniform in [0.002, 0.03]
    std::uniform_int_distribution<std::int64_t> pick(0, clusters - 1);
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t const c = pick(rng);
      for (int d = 0; d < dim; ++d)
        x[i * dim + d] = centre[std::size_t(c) * dim + d] + sigma[std::size_t(c)] * g(rng);
    }
  } else if (dist == "sphere") {
    for (std::int64_t i = 0; i < count; ++i) {
      double len2 = 0;
      do {
        len2 = 0;
        for (int d = 0; d < dim; ++d) x[i * dim + d] = g(rng), len2 += x[i * dim + d] * x[i * dim + d];
      } while (len2 < 1e-20);
      double const s = 0.5 / std::sqrt(len2);
      for (int d = 0; d < dim; ++d) x[i * dim + d] = 0.5 + s * x[i * dim + d];
    }
  } else if (dist == "plane") {
    for (std::int64_t i = 0; i < count; ++i) {
      for (int d = 0; d + 1 < dim; ++d) x[i * dim + d] = u(rng);
      x[i * dim + dim - 1] = 0.5;
    }
  } else if (dist == "tilted-plane") {
    // Uniform in the projection onto the first dim-1 axes is uniform on the
    // plane (constant Jacobian); reject where the last coordinate leaves [0,1].
    for (std::int64_t i = 0; i < count; ++i) {
      double last = -1;
      while (last < 0 || last > 1) {
        last = 0.5 * dim;
        for (int d = 0; d + 1 < dim; ++d) x[i * dim + d] = u(rng), last -= x[i * dim + d];
      }
      x[i * dim + dim - 1] = last;
    }
  } else if (dist == "line") {
    for (std::int64_t i = 0; i < count; ++i) {
      double const t = u(rng);
      for (int d = 0; d < dim; ++d) x[i * dim + d] = t;
    }
  } else if (dist == "lidar") {
    lidar_scan(x, count, rng);
  } else if (dist == "duplicates") {
    std::int64_t const distinct = count - count / 2;
    for (std::size_t c = 0; c < std::size_t(distinct) * dim; ++c) x[c] = u(rng);
    std::uniform_int_distribution<std::int64_t> pick(0, std::max<std::int64_t>(distinct, 1) - 1);
    for (std::int64_t i = distinct; i < count; ++i) {
      std::int64_t const p = pick(rng);
      for (int d = 0; d < dim; ++d) x[i * dim + d] = x[p * dim + d];
    }
    // Shuffled, so that copies are not all at the end (query order follows).
    for (std::int64_t i = count - 1; i > 0; --i) {
      std::int64_t const j = std::uniform_int_distribution<std::int64_t>(0, i)(rng);
      for (int d = 0; d < dim; ++d) std::swap(x[i * dim + d], x[j * dim + d]);
    }
  } else if (dist == "duplicates-all") {
    std::vector<double> p(static_cast<std::size_t>(dim));
    for (auto& c : p) c = u(rng);
    for (std::int64_t i = 0; i < count; ++i)
      for (int d = 0; d < dim; ++d) x[i * dim + d] = p[std::size_t(d)];
  } else if (dist == "anisotropic") {
    for (std::int64_t i = 0; i < count; ++i)
      for (int d = 0; d < dim; ++d) x[i * dim + d] = (d == 0 ? 1000.0 : 1.0) * u(rng);
  } else {
    std::string names;
    for (auto const& k : distributions()) names += std::string(names.empty() ? "" : ", ") + k.name;
    throw UsageError("--dist " + dist + ": expected one of " + names);
  }
  return ps;
}

namespace {

void bounds(PointSet const& of, std::vector<double>& lo, std::vector<double>& hi) {
  int const dim = of.dim;
  lo.assign(dim, std::numeric_limits<double>::infinity());
  hi.assign(dim, -std::numeric_limits<double>::infinity());
  for (std::int64_t i = 0; i < of.size(); ++i)
    for (int d = 0; d < dim; ++d) {
      lo[d] = std::min(lo[d], of.coords[std::size_t(i) * dim + d]);
      hi[d] = std::max(hi[d], of.coords[std::size_t(i) * dim + d]);
    }
}

} // namespace

PointSet uniform_in_bounds(PointSet const& of, std::int64_t count, std::uint64_t seed) {
  int const dim = of.dim;
  std::vector<double> lo, hi;
  bounds(of, lo, hi);
  PointSet ps;
  ps.dim = dim;
  ps.source = "uniform";
  ps.coords.resize(std::size_t(count) * dim);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (std::int64_t i = 0; i < count; ++i)
    for (int d = 0; d < dim; ++d) ps.coords[std::size_t(i) * dim + d] = lo[d] + (hi[d] - lo[d]) * u(rng);
  return ps;
}

std::vector<NamedKind> const& query_kinds() {
  static std::vector<NamedKind> const all{
      {"uniform", "uniform in the points' bounding box"},
      {"cube", "uniform in the cube around the bounding box's centre whose side is its widest side (queries off "
               "a plane or a line: the bounding box of points on z = 0.5 has no height)"},
      {"same", "the points themselves (first M); \"self\" is the same"},
      {"jitter:SIGMA", "a random point plus Gaussian noise of standard deviation SIGMA (in coordinates) per axis"},
      {"far", "uniform in a box of the bounding box's size shifted 1e6 box widths along every axis (width 1 "
              "where the points have none); radius ops take their radius from the points' own spacing"},
      {"FILE", "a point file (formats as --points)"},
  };
  return all;
}

std::string QueryKind::name() const {
  if (kind != "jitter") return kind;
  char buf[48];
  std::snprintf(buf, sizeof buf, "jitter:%g", sigma);
  return buf;
}

QueryKind parse_queries(std::string const& q) {
  QueryKind k;
  if (q == "same" || q == "self") k.kind = "same";
  else if (q == "uniform" || q == "far" || q == "cube") k.kind = q;
  else if (q.rfind("jitter:", 0) == 0) {
    std::string const v = q.substr(7);
    char* end = nullptr;
    k.sigma = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != 0 || !std::isfinite(k.sigma) || k.sigma < 0)
      throw UsageError("--queries " + q + ": expected jitter:SIGMA with SIGMA a number >= 0 (e.g. jitter:0.001)");
    k.kind = "jitter";
  } else k.kind = "file";
  return k;
}

PointSet generate_queries(QueryKind const& q, PointSet const& points, std::int64_t count, std::uint64_t seed) {
  if (q.kind == "uniform") return uniform_in_bounds(points, count, seed);
  int const dim = points.dim;
  PointSet ps;
  ps.dim = dim;
  ps.source = q.name();
  ps.coords.resize(std::size_t(count) * dim);
  std::mt19937_64 rng(seed);
  double* x = ps.coords.data();
  if (q.kind == "jitter") {
    std::uniform_int_distribution<std::int64_t> pick(0, points.size() - 1);
    std::normal_distribution<double> g(0.0, 1.0);
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t const p = pick(rng);
      for (int d = 0; d < dim; ++d) x[i * dim + d] = points.coords[std::size_t(p) * dim + d] + q.sigma * g(rng);
    }
  } else if (q.kind == "cube") {
    std::vector<double> lo, hi;
    bounds(points, lo, hi);
    double side = 0;
    for (int d = 0; d < dim; ++d) side = std::max(side, hi[d] - lo[d]);
    std::uniform_real_distribution<double> u(-0.5, 0.5);
    for (std::int64_t i = 0; i < count; ++i)
      for (int d = 0; d < dim; ++d) x[i * dim + d] = 0.5 * (lo[d] + hi[d]) + side * u(rng);
  } else if (q.kind == "far") {
    std::vector<double> lo, hi;
    bounds(points, lo, hi);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (std::int64_t i = 0; i < count; ++i)
      for (int d = 0; d < dim; ++d) {
        double const width = hi[d] - lo[d];
        x[i * dim + d] = lo[d] + 1e6 * (width > 0 ? width : 1.0) + width * u(rng);
      }
  } else {
    throw UsageError("--queries " + q.name() + ": not a generated query kind");
  }
  return ps;
}

double radius_for_neighbors(PointSet const& pts, PointSet const& sample_from, std::int64_t m, double target,
                            bool uniform_box, std::string& how, double& sampled_mean) {
  int const dim = pts.dim;
  std::int64_t const n = pts.size();
  double const unit_ball = std::pow(M_PI, dim / 2.0) / std::tgamma(dim / 2.0 + 1);
  if (uniform_box) {
    // target = n * V_ball(r) / V_box, V_ball(r) = pi^(D/2) / Gamma(D/2 + 1) r^D
    how = "formula for uniform points in the unit cube";
    sampled_mean = target;
    return std::pow(target / (double(n) * unit_ball), 1.0 / dim);
  }
  // The radius at which the sampled queries find `target` points on average
  // is the (target * sample)-th smallest of all their distances: a median of
  // k-th distances overshoots the mean by far on surfaces with queries off
  // them. Brute force costs sample * n; 64 queries keep it near a second at
  // 1M points, fewer where target * sample distances per query would not fit.
  std::int64_t const count = std::min(m, sample_from.size());
  int sample = int(std::min<std::int64_t>(64, count));
  auto per_query = [&] { return std::min<std::int64_t>(n, std::int64_t(std::ceil(target * sample))); };
  while (sample > 1 && sample * per_query() > (std::int64_t(1) << 24)) sample /= 2;
  std::int64_t const keep = std::max<std::int64_t>(1, per_query());
  std::int64_t const rank = std::max<std::int64_t>(1, std::min<std::int64_t>(sample * keep, std::llround(target * sample)));
  auto sq_dist = [&](std::int64_t q, std::int64_t i) {
    double acc = 0;
    for (int d = 0; d < dim; ++d) {
      double const diff = sample_from.coords[std::size_t(q) * dim + d] - pts.coords[std::size_t(i) * dim + d];
      acc += diff * diff;
    }
    return acc;
  };
  std::vector<double> pool;
  std::vector<double> d2(static_cast<std::size_t>(n));
  for (int s = 0; s < sample; ++s) {
    std::int64_t const q = std::int64_t(s) * count / sample;
    for (std::int64_t i = 0; i < n; ++i) d2[std::size_t(i)] = sq_dist(q, i);
    std::nth_element(d2.begin(), d2.begin() + (keep - 1), d2.end());
    pool.insert(pool.end(), d2.begin(), d2.begin() + keep);
  }
  std::vector<double> ranked = pool;
  std::nth_element(ranked.begin(), ranked.begin() + (rank - 1), ranked.end());
  double r = std::sqrt(ranked[std::size_t(rank - 1)]);
  how = "mean count of " + std::to_string(sample) + " sampled " + (&sample_from == &pts ? "points" : "queries") +
        " (brute force)";
  if (!(r > 0)) {
    // The samples have `target` points at distance 0 on average (duplicates):
    // a zero radius is degenerate, so fall back to the formula on the box.
    std::vector<double> lo(dim, INFINITY), hi(dim, -INFINITY);
    for (std::int64_t i = 0; i < n; ++i)
      for (int d = 0; d < dim; ++d) {
        lo[d] = std::min(lo[d], pts.coords[std::size_t(i) * dim + d]);
        hi[d] = std::max(hi[d], pts.coords[std::size_t(i) * dim + d]);
      }
    double volume = 1;
    for (int d = 0; d < dim; ++d) volume *= std::max(hi[d] - lo[d], 1e-12);
    how = "formula for uniform points in the bounding box (the sampled distances were 0)";
    r = std::pow(target * volume / (double(n) * unit_ball), 1.0 / dim);
  }
  // The kept distances give the counts at r unless a sample kept only ones
  // within r (then recount).
  double found = 0;
  bool recount = false;
  for (int s = 0; s < sample; ++s) {
    auto const first = pool.begin() + std::ptrdiff_t(s) * keep;
    std::int64_t const c = std::count_if(first, first + keep, [&](double v) { return v <= r * r; });
    recount = recount || (c == keep && keep < n);
    found += double(c);
  }
  if (recount) {
    found = 0;
    for (int s = 0; s < sample; ++s) {
      std::int64_t const q = std::int64_t(s) * count / sample;
      for (std::int64_t i = 0; i < n; ++i) found += sq_dist(q, i) <= r * r;
    }
  }
  sampled_mean = found / sample;
  return r;
}

} // namespace kdforge_bench
