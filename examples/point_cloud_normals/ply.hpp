#pragma once
// A small PLY reader for the normals example: vertex positions only.
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// Vertex positions (x y z per point) of an ASCII or binary_little_endian PLY
// file; other vertex properties and the elements after the vertices are
// skipped. Throws std::runtime_error saying what is wrong with the file.
inline std::vector<double> read_ply(char const* path) {
  auto fail = [](std::string const& why) { throw std::runtime_error(why); };
  static std::map<std::string, int> const bytes_of = {
      {"char", 1},  {"uchar", 1},  {"int8", 1},    {"uint8", 1},   {"short", 2}, {"ushort", 2},
      {"int16", 2}, {"uint16", 2}, {"int", 4},     {"uint", 4},    {"int32", 4}, {"uint32", 4},
      {"float", 4}, {"float32", 4}, {"double", 8}, {"float64", 8}};
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open the file");
  std::string line, format;
  if (!std::getline(in, line) || line.compare(0, 3, "ply") != 0) fail("not a PLY file (no 'ply' line)");
  long long n = -1;      // vertex count
  bool in_vertex = false; // the header line belongs to the vertex element
  int stride = 0, props = 0, offset[3] = {}, size[3] = {}, column[3] = {-1, -1, -1};
  while (std::getline(in, line) && line.compare(0, 10, "end_header") != 0) {
    std::istringstream s(line);
    std::string key, type, name; // "format ascii 1.0", "element vertex 100", "property float x"
    s >> key >> type >> name;
    if (key == "format") {
      format = type;
    } else if (key == "element") {
      in_vertex = type == "vertex";
      bool const count_ok = !name.empty() && name.size() < 12 && name.find_first_not_of("0123456789") == name.npos;
      if (in_vertex && !count_ok) fail("bad vertex count: " + line);
      if (in_vertex) n = std::stoll(name);
      else if (n < 0) fail("element '" + type + "' before the vertices is not supported");
    } else if (key == "property" && in_vertex) {
      if (!bytes_of.count(type)) fail("unsupported vertex property: " + line);
      for (int c = 0; c < 3; ++c) {
        if (name != std::string(1, "xyz"[c])) continue;
        if (type != "float" && type != "float32" && type != "double" && type != "float64")
          fail(name + " must be float or double: " + line);
        offset[c] = stride, size[c] = bytes_of.at(type), column[c] = props;
      }
      stride += bytes_of.at(type), ++props;
    }
  }
  if (!in) fail("the header has no end_header line");
  if (format != "ascii" && format != "binary_little_endian") fail("unsupported format '" + format + "'");
  if (column[0] < 0 || column[1] < 0 || column[2] < 0) fail("no vertex element with x, y and z");
  std::vector<double> xyz; // grown as read: a count larger than the file fails below, not in an allocation
  std::vector<char> record(static_cast<std::size_t>(stride)); // one binary vertex
  for (long long i = 0; i < n; ++i) {
    auto const where = [&] { return "vertex " + std::to_string(i) + " of " + std::to_string(n); };
    double p[3];
    if (format == "ascii") {
      if (!std::getline(in, line)) fail("the file ends at " + where());
      std::istringstream s(line);
      for (int j = 0; j < props; ++j) {
        double v;
        if (!(s >> v)) fail(where() + ": expected " + std::to_string(props) + " numbers: " + line);
        for (int c = 0; c < 3; ++c) if (j == column[c]) p[c] = v;
      }
    } else { // little-endian data read as is: x86 and ARM hosts are little-endian
      if (!in.read(record.data(), stride)) fail("the file ends at " + where());
      for (int c = 0; c < 3; ++c) {
        float f;
        if (size[c] == 8) std::memcpy(&p[c], &record[offset[c]], 8);
        else std::memcpy(&f, &record[offset[c]], 4), p[c] = f;
      }
    }
    xyz.insert(xyz.end(), p, p + 3);
  }
  return xyz;
}
