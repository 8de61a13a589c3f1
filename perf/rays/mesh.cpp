// Mesh files: OBJ (v and f statements) and PLY (ascii and binary of either
// byte order), each with a reader of its own that checks every count and
// index before anything is allocated or read through it (tests/fuzz runs
// both on arbitrary bytes). Polygons are fanned here, so an index outside
// the vertex list is reported with its face.
#include "mesh.hpp"

#include <kdforge/base/error.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <sstream>

namespace kdforge_rays {
namespace {

[[noreturn]] void bad(std::string const& file, std::string const& what) {
  throw kdforge::Error("kdforge: mesh file " + file + ": " + what);
}

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// beyond float's range: infinite (refused by check_vertices), not undefined
float to_float(double v) {
  return std::abs(v) <= double(std::numeric_limits<float>::max()) || std::isnan(v)
             ? float(v)
             : std::copysign(std::numeric_limits<float>::infinity(), float(v > 0 ? 1 : -1));
}

std::string lower_extension(std::string const& file) {
  auto const dot = file.find_last_of('.');
  if (dot == std::string::npos) return "";
  std::string e = file.substr(dot + 1);
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}

// Adds the fan (c0, ci, ci+1) of one polygon, checking its indices.
void add_polygon(Mesh& mesh, std::vector<std::int64_t> const& corners, std::int64_t nv, std::string const& file,
                 std::int64_t face) {
  if (corners.size() < 3)
    bad(file, "face " + std::to_string(face) + " has " + std::to_string(corners.size()) +
                  " corners; a face needs at least 3");
  for (auto c : corners)
    if (c < 0 || c >= nv)
      bad(file, "face " + std::to_string(face) + " uses vertex " + std::to_string(c) + ", outside the " +
                    std::to_string(nv) + " vertices");
  for (std::size_t i = 1; i + 1 < corners.size(); ++i) {
    mesh.triangles.push_back(std::int32_t(corners[0]));
    mesh.triangles.push_back(std::int32_t(corners[i]));
    mesh.triangles.push_back(std::int32_t(corners[i + 1]));
    mesh.material.push_back(0);
  }
  if (mesh.triangles.size() / 3 >= std::size_t(std::numeric_limits<std::int32_t>::max()))
    bad(file, "more than 2^31 - 2 triangles");
}

void check_vertices(Mesh const& mesh, std::string const& file) {
  for (std::size_t i = 0; i < mesh.vertices.size(); ++i)
    if (!std::isfinite(mesh.vertices[i]))
      bad(file, "vertex " + std::to_string(i / 3) + " has a NaN or infinite coordinate");
}

// OBJ: the statements a triangle mesh needs, `v x y z` and `f c1 c2 c3 ...`
// with corners i, i/t, i//n or i/t/n (1-based; negative: relative to the
// vertices read so far); everything else (texture coordinates, normals,
// groups, materials, lines, ...) is skipped unread. Positive indices may
// name vertices that come later; all are checked against the final count.
Mesh read_obj(std::istream& in, std::string const& file) {
  Mesh mesh;
  std::vector<std::vector<std::int64_t>> faces;
  std::string line;
  std::int64_t lineno = 0;
  auto where = [&] { return "line " + std::to_string(lineno) + ": "; };
  while (std::getline(in, line)) {
    ++lineno;
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "v") {
      for (int d = 0; d < 3; ++d) {
        std::string tok;
        ls >> tok;
        char* end = nullptr;
        double const v = std::strtod(tok.c_str(), &end);
        if (tok.empty() || *end != '\0')
          bad(file, where() + "a vertex needs 3 numbers ('" + line.substr(0, 60) + "')");
        mesh.vertices.push_back(to_float(v));
      }
    } else if (key == "f") {
      std::int64_t const nv = mesh.vertex_count();
      std::vector<std::int64_t> corners;
      for (std::string tok; ls >> tok;) {
        std::string const index = tok.substr(0, tok.find('/'));
        char* end = nullptr;
        errno = 0;
        long long const i = std::strtoll(index.c_str(), &end, 10);
        if (index.empty() || *end != '\0' || errno == ERANGE || i == 0)
          bad(file, where() + "'" + tok.substr(0, 40) + "' is not a vertex index (1-based, or negative: relative)");
        if (i < -nv)
          bad(file, where() + "the relative index " + index + " reaches before the first vertex (" + std::to_string(nv) +
                        " read so far)");
        // relative indices count back from the vertices read so far
        corners.push_back(i > 0 ? std::int64_t(i) - 1 : nv + std::int64_t(i));
      }
      faces.push_back(std::move(corners));
    }
  }
  if (in.bad()) bad(file, "read error");
  check_vertices(mesh, file);
  std::int64_t const nv = mesh.vertex_count();
  if (nv >= std::int64_t(std::numeric_limits<std::int32_t>::max())) bad(file, "more than 2^31 - 2 vertices");
  for (std::size_t f = 0; f < faces.size(); ++f) add_polygon(mesh, faces[f], nv, file, std::int64_t(f));
  if (mesh.triangle_count() == 0) bad(file, "has no faces");
  return mesh;
}

// ---- PLY ------------------------------------------------------------------

enum class Format { ascii, little, big };

int type_size(std::string const& t) {
  if (t == "char" || t == "uchar" || t == "int8" || t == "uint8") return 1;
  if (t == "short" || t == "ushort" || t == "int16" || t == "uint16") return 2;
  if (t == "int" || t == "uint" || t == "float" || t == "int32" || t == "uint32" || t == "float32") return 4;
  if (t == "double" || t == "float64") return 8;
  return 0;
}

struct Property {
  std::string name, type, count_type; // count_type: non-empty for lists
};
struct Element {
  std::string name;
  std::int64_t count = 0;
  std::vector<Property> properties;
};

class Reader {
public:
  Reader(std::istream& in, Format f, std::string const& file) : in_(in), format_(f), file_(file) {}

  double scalar(std::string const& type) {
    if (format_ == Format::ascii) {
      if (fields_.empty()) next_line();
      std::string const tok = fields_.back();
      fields_.pop_back();
      char* end = nullptr;
      double const v = std::strtod(tok.c_str(), &end);
      if (end == tok.c_str() || *end != '\0') bad(file_, "line " + std::to_string(line_) + ": '" + tok + "' is not a number");
      return v;
    }
    unsigned char b[8];
    int const n = type_size(type);
    if (!in_.read(reinterpret_cast<char*>(b), n))
      bad(file_, "ends after " + std::to_string(bytes_) + " bytes of data, inside the element list its header announces");
    bytes_ += n;
    bool const host_little = [] { std::uint16_t x = 1; unsigned char c; std::memcpy(&c, &x, 1); return c == 1; }();
    if ((format_ == Format::little) != host_little) std::reverse(b, b + n);
    auto get = [&](auto v) { std::memcpy(&v, b, sizeof v); return double(v); };
    if (type == "char" || type == "int8") return get(std::int8_t{});
    if (type == "uchar" || type == "uint8") return get(std::uint8_t{});
    if (type == "short" || type == "int16") return get(std::int16_t{});
    if (type == "ushort" || type == "uint16") return get(std::uint16_t{});
    if (type == "int" || type == "int32") return get(std::int32_t{});
    if (type == "uint" || type == "uint32") return get(std::uint32_t{});
    if (type == "float" || type == "float32") return get(float{});
    return get(double{});
  }
  // ascii: an element's values end with its line
  void end_element() {
    if (format_ == Format::ascii && !fields_.empty())
      bad(file_, "line " + std::to_string(line_) + " has more values than its element's properties");
  }

private:
  // The next line that holds a token: a line of only white space of any
  // kind (\v and \f too, which the stream skips) holds none.
  void next_line() {
    std::string s;
    std::vector<std::string> tokens;
    while (tokens.empty()) {
      if (!std::getline(in_, s)) bad(file_, "ends at line " + std::to_string(line_) + ", inside the element list its header announces");
      ++line_;
      std::istringstream ls(s);
      for (std::string t; ls >> t;) tokens.push_back(t);
    }
    fields_.assign(tokens.rbegin(), tokens.rend());
  }
  std::istream& in_;
  Format format_;
  std::string file_;
  std::vector<std::string> fields_;
  std::int64_t line_ = 0, bytes_ = 0;

public:
  void set_header_lines(std::int64_t n) { line_ = n; }
};

Mesh read_ply(std::istream& in, std::string const& file) {
  std::string line;
  std::int64_t lines = 0;
  if (!std::getline(in, line) || line.substr(0, 3) != "ply") bad(file, "does not start with 'ply'");
  ++lines;
  Format format = Format::ascii;
  bool have_format = false;
  std::vector<Element> elements;
  for (;;) {
    if (!std::getline(in, line)) bad(file, "the header has no end_header");
    ++lines;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream ls(line);
    std::string key;
    ls >> key;
    if (key == "end_header") break;
    if (key.empty() || key == "comment" || key == "obj_info") continue;
    if (key == "format") {
      std::string f;
      ls >> f;
      if (f == "ascii") format = Format::ascii;
      else if (f == "binary_little_endian") format = Format::little;
      else if (f == "binary_big_endian") format = Format::big;
      else bad(file, "header line " + std::to_string(lines) + ": unknown format '" + f + "'");
      have_format = true;
    } else if (key == "element") {
      Element e;
      ls >> e.name >> e.count;
      if (!ls || e.count < 0) bad(file, "header line " + std::to_string(lines) + ": malformed element line");
      elements.push_back(e);
    } else if (key == "property") {
      if (elements.empty()) bad(file, "header line " + std::to_string(lines) + ": a property before any element");
      Property p;
      std::string t;
      ls >> t;
      if (t == "list") {
        ls >> p.count_type >> p.type >> p.name;
        if (!type_size(p.count_type) || !type_size(p.type))
          bad(file, "header line " + std::to_string(lines) + ": unknown list types");
      } else {
        p.type = t;
        ls >> p.name;
        if (!type_size(p.type)) bad(file, "header line " + std::to_string(lines) + ": unknown type '" + t + "'");
      }
      if (p.name.empty()) bad(file, "header line " + std::to_string(lines) + ": a property without a name");
      elements.back().properties.push_back(p);
    } else {
      bad(file, "header line " + std::to_string(lines) + ": unknown keyword '" + key + "'");
    }
  }
  if (!have_format) bad(file, "the header has no format line");
  Mesh mesh;
  bool saw_faces = false;
  std::int64_t nv = -1;
  Reader r(in, format, file);
  r.set_header_lines(lines);
  // a count the file cannot hold is refused before anything is allocated for it
  in.seekg(0, std::ios::end);
  std::int64_t const file_bytes = std::int64_t(in.tellg());
  in.seekg(0);
  for (std::int64_t i = 0; i < lines; ++i) std::getline(in, line);
  std::vector<std::int64_t> corners;
  // a list count read from the file: a whole number the file's size can hold
  // (a NaN, negative, fractional or huge count is refused, never converted)
  auto list_count = [&](double n, std::string const& what) {
    if (!(n >= 0) || n != std::floor(n) || n > double(file_bytes))
      bad(file, what + " announces a list of " + number(n) + " entries");
    return std::int64_t(n);
  };
  for (auto const& e : elements) {
    if (e.count > file_bytes)
      bad(file, "element '" + e.name + "' announces " + std::to_string(e.count) + " entries, more than the file's " +
                    std::to_string(file_bytes) + " bytes can hold");
    if (e.name == "vertex") {
      int axis[3] = {-1, -1, -1};
      for (std::size_t p = 0; p < e.properties.size(); ++p)
        for (int d = 0; d < 3; ++d)
          if (e.properties[p].name == std::string(1, char('x' + d)) && e.properties[p].count_type.empty())
            axis[d] = int(p);
      if (axis[0] < 0 || axis[1] < 0 || axis[2] < 0) bad(file, "the vertex element lacks scalar x, y and z");
      nv = e.count;
      mesh.vertices.resize(std::size_t(3 * e.count));
      for (std::int64_t i = 0; i < e.count; ++i) {
        for (std::size_t p = 0; p < e.properties.size(); ++p) {
          auto const& pr = e.properties[p];
          if (!pr.count_type.empty()) {
            std::int64_t const n = list_count(r.scalar(pr.count_type), "vertex " + std::to_string(i));
            for (std::int64_t j = 0; j < n; ++j) r.scalar(pr.type);
            continue;
          }
          double const v = r.scalar(pr.type);
          for (int d = 0; d < 3; ++d)
            if (int(p) == axis[d]) mesh.vertices[std::size_t(3 * i + d)] = to_float(v);
        }
        r.end_element();
      }
    } else if (e.name == "face") {
      if (nv < 0) bad(file, "faces come before the vertices; this reader needs the vertex element first");
      int list = -1;
      for (std::size_t p = 0; p < e.properties.size(); ++p)
        if (!e.properties[p].count_type.empty() &&
            (e.properties[p].name == "vertex_indices" || e.properties[p].name == "vertex_index"))
          list = int(p);
      if (list < 0) bad(file, "the face element has no vertex_indices list");
      saw_faces = true;
      for (std::int64_t i = 0; i < e.count; ++i) {
        for (std::size_t p = 0; p < e.properties.size(); ++p) {
          auto const& pr = e.properties[p];
          if (pr.count_type.empty()) { r.scalar(pr.type); continue; }
          double const n = r.scalar(pr.count_type);
          if (!(n >= 0) || n > 1e6 || n != std::floor(n))
            bad(file, "face " + std::to_string(i) + " announces " + number(n) + " corners");
          corners.clear();
          for (std::int64_t j = 0; j < std::int64_t(n); ++j) {
            double const c = r.scalar(pr.type);
            corners.push_back(c == std::floor(c) && std::abs(c) < 9e18 ? std::int64_t(c) : -1);
          }
          if (int(p) == list) add_polygon(mesh, corners, nv, file, i);
        }
        r.end_element();
      }
    } else {
      for (std::int64_t i = 0; i < e.count; ++i) {
        for (auto const& pr : e.properties) {
          if (pr.count_type.empty()) { r.scalar(pr.type); continue; }
          std::int64_t const n = list_count(r.scalar(pr.count_type), "element '" + e.name + "' entry " + std::to_string(i));
          for (std::int64_t j = 0; j < n; ++j) r.scalar(pr.type);
        }
        r.end_element();
      }
    }
  }
  if (nv < 0) bad(file, "has no vertex element");
  if (!saw_faces || mesh.triangle_count() == 0) bad(file, "has no faces (a point cloud is not a mesh)");
  check_vertices(mesh, file);
  return mesh;
}

} // namespace

Mesh parse_mesh(std::istream& in, std::string const& name, MeshFormat format) {
  return format == MeshFormat::obj ? read_obj(in, name) : read_ply(in, name);
}

Mesh read_mesh(std::string const& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) bad(file, "is a directory");
  std::ifstream in(file, std::ios::binary);
  if (!in) bad(file, "cannot open");
  std::string const e = lower_extension(file);
  if (e == "obj") return read_obj(in, file);
  if (e == "ply") return read_ply(in, file);
  bad(file, "unknown extension '." + e + "' (meshes are read from .obj and .ply)");
}

void write_ply(std::string const& file, Mesh const& mesh) {
  std::ofstream out(file, std::ios::binary);
  if (!out) throw kdforge::Error("kdforge: cannot write " + file);
  out << "ply\nformat binary_little_endian 1.0\nelement vertex " << mesh.vertex_count()
      << "\nproperty float x\nproperty float y\nproperty float z\nelement face " << mesh.triangle_count()
      << "\nproperty list uchar int vertex_indices\nend_header\n";
  out.write(reinterpret_cast<char const*>(mesh.vertices.data()), std::streamsize(mesh.vertices.size() * sizeof(float)));
  for (std::int64_t f = 0; f < mesh.triangle_count(); ++f) {
    unsigned char const three = 3;
    out.write(reinterpret_cast<char const*>(&three), 1);
    out.write(reinterpret_cast<char const*>(&mesh.triangles[std::size_t(3 * f)]), 3 * sizeof(std::int32_t));
  }
  if (!out) throw kdforge::Error("kdforge: writing " + file + " failed");
}

} // namespace kdforge_rays
