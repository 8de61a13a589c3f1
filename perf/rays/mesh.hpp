#pragma once
// Triangle meshes on the host: what the mesh files and the procedural scenes
// produce, and what the renderer and the ray benchmark upload.
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace kdforge_rays {

/// A triangle mesh: `vertices` holds x, y, z per vertex, `triangles` three
/// vertex indices per triangle, `material` one entry per triangle (an index
/// into the scene's material table; 0 where a file has none).
struct Mesh {
  std::vector<float> vertices;
  std::vector<std::int32_t> triangles;
  std::vector<std::uint8_t> material;
  std::int64_t vertex_count() const { return std::int64_t(vertices.size() / 3); }
  std::int64_t triangle_count() const { return std::int64_t(triangles.size() / 3); }
};

/// Reads a mesh; the format follows the extension:
///   .obj  Wavefront OBJ: `v x y z` and `f` with corners i, i/t, i//n or i/t/n
///         (1-based, negative: relative); polygons are triangulated as fans;
///         other statements are skipped
///   .ply  ascii, binary_little_endian or binary_big_endian; vertex x, y, z (any
///         scalar type, other properties skipped) and face vertex_indices (or
///         vertex_index) lists of any count and index type, triangulated as fans
/// Throws kdforge::Error naming the file and the problem for unreadable,
/// malformed or truncated files, a vertex with a NaN or infinite
/// coordinate, and a face index outside the vertex list. Faces with fewer
/// than 3 corners are refused; zero-area triangles are kept.
Mesh read_mesh(std::string const& file);

/// The mesh file formats.
enum class MeshFormat { obj, ply };

/// As read_mesh, from a stream that holds the file's bytes from its start;
/// `name` names the file in messages. A header count the file cannot hold
/// is refused before anything is allocated for it (tests/fuzz runs this on
/// arbitrary bytes).
Mesh parse_mesh(std::istream& in, std::string const& name, MeshFormat format);

/// Writes a binary little-endian PLY with vertices and triangles.
void write_ply(std::string const& file, Mesh const& mesh);

} // namespace kdforge_rays
