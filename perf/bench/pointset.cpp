// kdforge-bench: point distributions and point-file readers (see pointset.hpp).
#include "pointset.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

namespace kdforge_bench {

namespace {

[[noreturn]] void bad(std::string const& file, std::string const& what) {
  throw UsageError("point file '" + file + "': " + what);
}

} // namespace

PointSet generate_points(std::string const& dist, std::int64_t count, int dim, std::uint64_t seed) {
  PointSet ps;
  ps.dim = dim;
  ps.source = dist;
  ps.coords.resize(std::size_t(count) * dim);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0.0, 1.0);
  double* x = ps.coords.data();
  if (dist == "uniform") {
    for (auto& c : ps.coords) c = u(rng);
  } else if (dist == "clustered") {
    int const clusters = 64;
    std::vector<double> centre(std::size_t(clusters) * dim);
    for (auto& c : centre) c = 0.1 + 0.8 * u(rng);
    std::uniform_int_distribution<int> pick(0, clusters - 1);
    for (std::int64_t i = 0; i < count; ++i) {
      int const c = pick(rng);
      for (int d = 0; d < dim; ++d) x[i * dim + d] = centre[std::size_t(c) * dim + d] + 0.02 * g(rng);
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
  } else if (dist == "duplicates") {
    std::int64_t const distinct = std::max<std::int64_t>(1, count / 16);
    std::vector<double> pool(std::size_t(distinct) * dim);
    for (auto& c : pool) c = u(rng);
    std::uniform_int_distribution<std::int64_t> pick(0, distinct - 1);
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t const p = pick(rng);
      for (int d = 0; d < dim; ++d) x[i * dim + d] = pool[std::size_t(p) * dim + d];
    }
  } else {
    throw UsageError("--dist " + dist + ": expected uniform, clustered, sphere or duplicates");
  }
  return ps;
}

PointSet uniform_in_bounds(PointSet const& of, std::int64_t count, std::uint64_t seed) {
  int const dim = of.dim;
  std::vector<double> lo(dim, std::numeric_limits<double>::infinity()), hi(dim, -std::numeric_limits<double>::infinity());
  for (std::int64_t i = 0; i < of.size(); ++i)
    for (int d = 0; d < dim; ++d) {
      lo[d] = std::min(lo[d], of.coords[std::size_t(i) * dim + d]);
      hi[d] = std::max(hi[d], of.coords[std::size_t(i) * dim + d]);
    }
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

// ---------------------------------------------------------------- files ---

namespace {

std::string lower_extension(std::string const& file) {
  auto const slash = file.find_last_of('/');
  auto const dot = file.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = file.substr(dot + 1);
  for (auto& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

void check_finite(std::string const& file, PointSet const& ps) {
  for (std::size_t i = 0; i < ps.coords.size(); ++i)
    if (!std::isfinite(ps.coords[i]))
      bad(file, "point " + std::to_string(i / ps.dim) + " has a NaN or infinite coordinate");
  if (ps.coords.empty()) bad(file, "contains no points");
}

PointSet read_xyz(std::string const& file, int dim) {
  std::ifstream in(file);
  PointSet ps;
  ps.dim = dim;
  ps.source = file;
  std::string line;
  std::int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    for (auto& c : line)
      if (c == ',' || c == ';' || c == '\t' || c == '\r') c = ' ';
    std::size_t const first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    char const* p = line.c_str();
    int got = 0;
    while (got < dim) {
      while (*p == ' ') ++p;
      if (!*p) break;
      char* end = nullptr;
      errno = 0;
      double const v = std::strtod(p, &end);
      if (end == p || (*end != ' ' && *end != 0))
        bad(file, "line " + std::to_string(lineno) + ": '" + line.substr(std::size_t(p - line.c_str()), 20) +
                      "' is not a number");
      ps.coords.push_back(v);
      ++got;
      p = end;
    }
    if (got < dim)
      bad(file, "line " + std::to_string(lineno) + ": " + std::to_string(got) + " numbers, need " +
                    std::to_string(dim) + " (--dim)");
  }
  if (in.bad()) bad(file, "read error");
  return ps;
}

PointSet read_bin(std::string const& file, int dim) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  std::streamoff const bytes = in.tellg();
  if (bytes < 0) bad(file, "cannot determine its size");
  std::size_t const per_point = sizeof(float) * std::size_t(dim);
  if (std::size_t(bytes) % per_point != 0)
    bad(file, std::to_string(bytes) + " bytes is not a multiple of " + std::to_string(per_point) +
                  " (raw float32, " + std::to_string(dim) + " per point; see --dim)");
  in.seekg(0);
  std::vector<float> raw(std::size_t(bytes) / sizeof(float));
  if (!in.read(reinterpret_cast<char*>(raw.data()), bytes)) bad(file, "read error");
  PointSet ps;
  ps.dim = dim;
  ps.source = file;
  ps.coords.assign(raw.begin(), raw.end()); // x86-64 and aarch64 are little endian
  return ps;
}

struct PlyProperty {
  std::string name, type;
  int size = 0;
  bool list = false;
};

int ply_type_size(std::string const& t) {
  if (t == "char" || t == "uchar" || t == "int8" || t == "uint8") return 1;
  if (t == "short" || t == "ushort" || t == "int16" || t == "uint16") return 2;
  if (t == "int" || t == "uint" || t == "int32" || t == "uint32" || t == "float" || t == "float32") return 4;
  if (t == "double" || t == "float64") return 8;
  return 0;
}

double ply_binary_value(char const* p, std::string const& t) {
  auto get = [p](auto v) { std::memcpy(&v, p, sizeof v); return double(v); };
  if (t == "char" || t == "int8") return get(std::int8_t{});
  if (t == "uchar" || t == "uint8") return get(std::uint8_t{});
  if (t == "short" || t == "int16") return get(std::int16_t{});
  if (t == "ushort" || t == "uint16") return get(std::uint16_t{});
  if (t == "int" || t == "int32") return get(std::int32_t{});
  if (t == "uint" || t == "uint32") return get(std::uint32_t{});
  if (t == "float" || t == "float32") return get(float{});
  return get(double{});
}

PointSet read_ply(std::string const& file, int dim) {
  std::ifstream in(file, std::ios::binary);
  std::string line;
  if (!std::getline(in, line) || (line != "ply" && line != "ply\r")) bad(file, "does not start with 'ply'");
  std::string format;
  std::int64_t vertices = -1;
  bool in_vertex = false, vertex_seen = false, header_done = false;
  std::vector<PlyProperty> props;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    std::string const where = "header line " + std::to_string(lineno) + ": ";
    if (word == "end_header") {
      header_done = true;
      break;
    } else if (word == "format") {
      std::string version;
      ls >> format >> version;
      if (format != "ascii" && format != "binary_little_endian")
        bad(file, where + "format '" + format + "' is not supported (ascii or binary_little_endian)");
    } else if (word == "element") {
      std::string name;
      std::int64_t count = -1;
      ls >> name >> count;
      if (!ls || count < 0) bad(file, where + "malformed element line '" + line + "'");
      if (in_vertex || vertex_seen) {
        in_vertex = false; // elements after the vertices are never read
      } else if (name == "vertex") {
        in_vertex = vertex_seen = true;
        vertices = count;
      } else {
        bad(file, where + "element '" + name + "' comes before the vertices (not supported)");
      }
    } else if (word == "property") {
      if (!in_vertex) continue;
      PlyProperty p;
      ls >> p.type;
      if (p.type == "list") bad(file, where + "list properties of vertices are not supported");
      ls >> p.name;
      p.size = ply_type_size(p.type);
      if (!ls || p.size == 0) bad(file, where + "malformed property line '" + line + "'");
      props.push_back(p);
    } else if (word == "comment" || word == "obj_info" || word.empty()) {
    } else {
      bad(file, where + "unexpected '" + word + "'");
    }
  }
  if (!header_done) bad(file, "the header has no end_header line");
  if (format.empty()) bad(file, "the header has no format line");
  if (vertices < 0) bad(file, "the header declares no vertex element");
  char const* axis_names[4] = {"x", "y", "z", "w"};
  if (dim > 4) bad(file, "PLY files give at most 4 coordinates (x, y, z, w); --dim is " + std::to_string(dim));
  std::vector<int> column(dim, -1);
  for (int d = 0; d < dim; ++d) {
    for (std::size_t i = 0; i < props.size(); ++i)
      if (props[i].name == axis_names[d]) column[d] = int(i);
    if (column[d] < 0)
      bad(file, std::string("the vertices have no property '") + axis_names[d] + "' (needed for --dim " +
                    std::to_string(dim) + ")");
  }
  PointSet ps;
  ps.dim = dim;
  ps.source = file;
  ps.coords.resize(std::size_t(vertices) * dim);
  if (format == "ascii") {
    for (std::int64_t v = 0; v < vertices; ++v) {
      if (!std::getline(in, line)) bad(file, "ends after " + std::to_string(v) + " of " + std::to_string(vertices) + " vertices");
      std::istringstream ls(line);
      std::vector<double> vals(props.size());
      for (std::size_t i = 0; i < props.size(); ++i)
        if (!(ls >> vals[i])) bad(file, "vertex " + std::to_string(v) + ": malformed line '" + line.substr(0, 60) + "'");
      for (int d = 0; d < dim; ++d) ps.coords[std::size_t(v) * dim + d] = vals[column[d]];
    }
  } else {
    std::size_t stride = 0;
    std::vector<std::size_t> offset(props.size());
    for (std::size_t i = 0; i < props.size(); ++i) offset[i] = stride, stride += std::size_t(props[i].size);
    std::vector<char> rec(stride);
    for (std::int64_t v = 0; v < vertices; ++v) {
      if (!in.read(rec.data(), std::streamsize(stride)))
        bad(file, "binary data ends after " + std::to_string(v) + " of " + std::to_string(vertices) + " vertices");
      for (int d = 0; d < dim; ++d)
        ps.coords[std::size_t(v) * dim + d] = ply_binary_value(rec.data() + offset[column[d]], props[column[d]].type);
    }
  }
  return ps;
}

} // namespace

PointSet read_points(std::string const& file, int dim) {
  {
    std::ifstream probe(file, std::ios::binary);
    if (!probe) throw UsageError("point file '" + file + "': cannot open it (" + std::strerror(errno) + ")");
  }
  std::string const ext = lower_extension(file);
  std::string head;
  {
    std::ifstream probe(file, std::ios::binary);
    char buf[4] = {0, 0, 0, 0};
    probe.read(buf, 4);
    head.assign(buf, std::size_t(probe.gcount()));
  }
  PointSet ps;
  if (ext == "ply" || head == "ply\n" || head == "ply\r") ps = read_ply(file, dim);
  else if (ext == "xyz" || ext == "txt" || ext == "csv" || ext == "pts") ps = read_xyz(file, dim);
  else if (ext == "bin" || ext == "f32" || ext == "raw") ps = read_bin(file, dim);
  else
    throw UsageError("point file '" + file + "': unknown format '." + ext +
                     "' (use .ply, .xyz/.txt/.csv/.pts or .bin/.f32/.raw)");
  check_finite(file, ps);
  return ps;
}

double radius_for_neighbors(PointSet const& pts, PointSet const& queries, double target, bool uniform_box,
                            std::string& how) {
  int const dim = pts.dim;
  std::int64_t const n = pts.size();
  if (uniform_box) {
    // target = n * V_ball(r) / V_box, V_ball(r) = pi^(D/2) / Gamma(D/2 + 1) r^D
    double const unit_ball = std::pow(M_PI, dim / 2.0) / std::tgamma(dim / 2.0 + 1);
    how = "formula for uniform points in the unit cube";
    return std::pow(target / (double(n) * unit_ball), 1.0 / dim);
  }
  how = "median distance to the " + std::to_string(std::max<long>(1, std::lround(target))) +
        "-th nearest point over 256 sampled queries";
  std::int64_t const kk = std::min<std::int64_t>(n, std::max<long>(1, std::lround(target)));
  std::int64_t const m = queries.size();
  int const sample = int(std::min<std::int64_t>(256, m));
  std::vector<double> kth;
  std::vector<double> d2(static_cast<std::size_t>(n));
  for (int s = 0; s < sample; ++s) {
    std::int64_t const q = std::int64_t(s) * m / sample;
    for (std::int64_t i = 0; i < n; ++i) {
      double acc = 0;
      for (int d = 0; d < dim; ++d) {
        double const diff = queries.coords[std::size_t(q) * dim + d] - pts.coords[std::size_t(i) * dim + d];
        acc += diff * diff;
      }
      d2[std::size_t(i)] = acc;
    }
    std::nth_element(d2.begin(), d2.begin() + (kk - 1), d2.end());
    kth.push_back(std::sqrt(d2[std::size_t(kk - 1)]));
  }
  std::nth_element(kth.begin(), kth.begin() + kth.size() / 2, kth.end());
  if (kth[kth.size() / 2] > 0) return kth[kth.size() / 2];
  // Over half the queries have `target` points at distance 0 (duplicates):
  // a zero radius is degenerate, so fall back to the formula on the box.
  std::vector<double> lo(dim, INFINITY), hi(dim, -INFINITY);
  for (std::int64_t i = 0; i < n; ++i)
    for (int d = 0; d < dim; ++d) {
      lo[d] = std::min(lo[d], pts.coords[std::size_t(i) * dim + d]);
      hi[d] = std::max(hi[d], pts.coords[std::size_t(i) * dim + d]);
    }
  double volume = 1;
  for (int d = 0; d < dim; ++d) volume *= std::max(hi[d] - lo[d], 1e-12);
  double const unit_ball = std::pow(M_PI, dim / 2.0) / std::tgamma(dim / 2.0 + 1);
  how = "formula for uniform points in the bounding box (the sampled median distance was 0)";
  return std::pow(target * volume / (double(n) * unit_ball), 1.0 / dim);
}

} // namespace kdforge_bench
