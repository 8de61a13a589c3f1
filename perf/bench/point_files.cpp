// kdforge-bench: the point-file readers (see point_files.hpp). Every count a
// header announces is checked against the bytes the file holds before
// anything is allocated for it: a corrupt or hostile header is a message,
// never an allocation of its count (tests/fuzz runs these readers on
// arbitrary bytes).
#include "point_files.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

namespace kdforge_bench {

namespace {

[[noreturn]] void bad(std::string const& file, std::string const& what) {
  throw UsageError("point file '" + file + "': " + what);
}

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
      bad(file, "point " + std::to_string(i / std::size_t(ps.dim)) + " has a NaN or infinite coordinate");
  if (ps.coords.empty()) bad(file, "contains no points");
}

/// Bytes from the stream's position to its end (the position is kept).
std::int64_t bytes_left(std::istream& in) {
  std::streamoff const here = in.tellg();
  in.seekg(0, std::ios::end);
  std::streamoff const end = in.tellg();
  in.seekg(here);
  return here < 0 || end < here ? 0 : std::int64_t(end - here);
}

PointSet read_xyz(std::istream& in, std::string const& file, int dim) {
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

PointSet read_bin(std::istream& in, std::string const& file, int dim) {
  std::int64_t const bytes = bytes_left(in);
  std::size_t const per_point = sizeof(float) * std::size_t(dim);
  if (std::size_t(bytes) % per_point != 0)
    bad(file, std::to_string(bytes) + " bytes is not a multiple of " + std::to_string(per_point) +
                  " (raw float32, " + std::to_string(dim) + " per point; see --dim)");
  std::vector<float> raw(std::size_t(bytes) / sizeof(float));
  if (!in.read(reinterpret_cast<char*>(raw.data()), std::streamsize(bytes))) bad(file, "read error");
  PointSet ps;
  ps.dim = dim;
  ps.source = file;
  ps.coords.assign(raw.begin(), raw.end()); // x86-64 and aarch64 are little endian
  return ps;
}

struct PlyProperty {
  std::string name, type;
  int size = 0;
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

PointSet read_ply(std::istream& in, std::string const& file, int dim) {
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
      if (!ls || count < 0) bad(file, where + "malformed element line '" + line.substr(0, 60) + "'");
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
      if (!ls || p.size == 0) bad(file, where + "malformed property line '" + line.substr(0, 60) + "'");
      props.push_back(p);
    } else if (word == "comment" || word == "obj_info" || word.empty()) {
    } else {
      bad(file, where + "unexpected '" + word.substr(0, 40) + "' (not a header keyword: is end_header missing?)");
    }
  }
  if (!header_done) bad(file, "the header has no end_header line");
  if (format.empty()) bad(file, "the header has no format line");
  if (vertices < 0) bad(file, "the header declares no vertex element");
  char const* axis_names[4] = {"x", "y", "z", "w"};
  if (dim > 4) bad(file, "PLY files give at most 4 coordinates (x, y, z, w); --dim is " + std::to_string(dim));
  std::vector<int> column(std::size_t(dim), -1);
  for (int d = 0; d < dim; ++d) {
    for (std::size_t i = 0; i < props.size(); ++i)
      if (props[i].name == axis_names[d]) column[std::size_t(d)] = int(i);
    if (column[std::size_t(d)] < 0)
      bad(file, std::string("the vertices have no property '") + axis_names[d] + "' (needed for --dim " +
                    std::to_string(dim) + ")");
  }
  PointSet ps;
  ps.dim = dim;
  ps.source = file;
  std::int64_t const left = bytes_left(in);
  if (format == "ascii") {
    // at least one character and a separator per value: a count beyond that
    // is a wrong header, found when the lines run out; reserve no more
    std::int64_t const fits = left / std::int64_t(2 * props.size());
    ps.coords.reserve(std::size_t(std::min(vertices, fits)) * std::size_t(dim));
    std::vector<double> vals(props.size());
    for (std::int64_t v = 0; v < vertices; ++v) {
      if (!std::getline(in, line)) bad(file, "ends after " + std::to_string(v) + " of " + std::to_string(vertices) + " vertices");
      std::istringstream ls(line);
      for (std::size_t i = 0; i < props.size(); ++i)
        if (!(ls >> vals[i])) bad(file, "vertex " + std::to_string(v) + ": malformed line '" + line.substr(0, 60) + "'");
      for (int d = 0; d < dim; ++d) ps.coords.push_back(vals[std::size_t(column[std::size_t(d)])]);
    }
  } else {
    std::int64_t stride = 0;
    std::vector<std::size_t> offset(props.size());
    for (std::size_t i = 0; i < props.size(); ++i) offset[i] = std::size_t(stride), stride += props[i].size;
    if (vertices > left / stride)
      bad(file, "binary data ends after " + std::to_string(left / stride) + " of " + std::to_string(vertices) +
                    " vertices (the header announces " + std::to_string(vertices) + " x " + std::to_string(stride) +
                    " bytes, " + std::to_string(left) + " follow it)");
    ps.coords.resize(std::size_t(vertices) * std::size_t(dim));
    std::vector<char> rec(static_cast<std::size_t>(stride));
    for (std::int64_t v = 0; v < vertices; ++v) {
      if (!in.read(rec.data(), std::streamsize(stride)))
        bad(file, "binary data ends after " + std::to_string(v) + " of " + std::to_string(vertices) + " vertices");
      for (int d = 0; d < dim; ++d) {
        std::size_t const c = std::size_t(column[std::size_t(d)]);
        ps.coords[std::size_t(v) * std::size_t(dim) + std::size_t(d)] = ply_binary_value(rec.data() + offset[c], props[c].type);
      }
    }
  }
  return ps;
}

} // namespace

PointSet parse_points(std::istream& in, std::string const& name, PointFormat format, int dim) {
  if (dim < 1 || dim > 64) bad(name, "--dim " + std::to_string(dim) + " is outside [1, 64]");
  PointSet ps;
  switch (format) {
  case PointFormat::ply: ps = read_ply(in, name, dim); break;
  case PointFormat::xyz: ps = read_xyz(in, name, dim); break;
  case PointFormat::raw_float32: ps = read_bin(in, name, dim); break;
  }
  check_finite(name, ps);
  return ps;
}

PointSet read_points(std::string const& file, int dim) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) throw UsageError("point file '" + file + "': is a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError("point file '" + file + "': cannot open it (" + std::strerror(errno) + ")");
  std::string const ext = lower_extension(file);
  char buf[4] = {0, 0, 0, 0};
  in.read(buf, 4);
  std::string const head(buf, std::size_t(in.gcount()));
  in.clear();
  in.seekg(0);
  PointFormat format;
  if (ext == "ply" || head == "ply\n" || head == "ply\r") format = PointFormat::ply;
  else if (ext == "xyz" || ext == "txt" || ext == "csv" || ext == "pts") format = PointFormat::xyz;
  else if (ext == "bin" || ext == "f32" || ext == "raw") format = PointFormat::raw_float32;
  else
    throw UsageError("point file '" + file + "': unknown format '." + ext +
                     "' (use .ply, .xyz/.txt/.csv/.pts or .bin/.f32/.raw)");
  return parse_points(in, file, format, dim);
}

} // namespace kdforge_bench
