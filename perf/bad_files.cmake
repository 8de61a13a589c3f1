# ctest fixture: writes hostile input files into OUT for the command-line
# tools' failure tests (perf/CMakeLists.txt, perf/rays/CMakeLists.txt,
# perf/icp/CMakeLists.txt): empty, truncated, oversized-header, garbage,
# non-finite and out-of-range files, each of which must give a clear
# message and a non-zero exit status, never a crash.
#   cmake -DOUT=<dir> -P bad_files.cmake
file(MAKE_DIRECTORY ${OUT} ${OUT}/a_directory.ply)

# empty files of every format
foreach(f empty.ply empty.xyz empty.bin empty.obj empty_mesh.ply)
  file(WRITE ${OUT}/${f} "")
endforeach()

set(_xyz3 "property float x\nproperty float y\nproperty float z\n")
# a binary PLY that announces 1000 vertices and holds 2
file(WRITE ${OUT}/truncated.ply "ply\nformat binary_little_endian 1.0\nelement vertex 1000\n${_xyz3}end_header\n")
file(APPEND ${OUT}/truncated.ply "abcdefghijklmnopqrstuvwx")
# headers that announce more vertices than any file holds (ascii and binary), and a count beyond int64
file(WRITE ${OUT}/oversized_ascii.ply "ply\nformat ascii 1.0\nelement vertex 9223372036854775807\n${_xyz3}end_header\n0 0 0\n1 1 1\n")
file(WRITE ${OUT}/oversized_binary.ply "ply\nformat binary_little_endian 1.0\nelement vertex 4611686018427387904\n${_xyz3}end_header\n")
file(APPEND ${OUT}/oversized_binary.ply "abcdefghijkl")
file(WRITE ${OUT}/overflow.ply "ply\nformat ascii 1.0\nelement vertex 99999999999999999999999\n${_xyz3}end_header\n0 0 0\n")
# a header without end_header, one without vertices
file(WRITE ${OUT}/no_end.ply "ply\nformat ascii 1.0\nelement vertex 2\n${_xyz3}0 0 0\n")
file(WRITE ${OUT}/zero_vertices.ply "ply\nformat ascii 1.0\nelement vertex 0\n${_xyz3}end_header\n")
# garbage: printable noise and high bytes, under each extension
string(RANDOM LENGTH 3000 RANDOM_SEED 28 _noise)
set(_bytes "")
foreach(i RANGE 1 255)
  string(ASCII ${i} _c)
  string(APPEND _bytes "${_c}")
endforeach()
foreach(ext ply xyz bin obj)
  file(WRITE ${OUT}/garbage.${ext} "${_noise}${_bytes}${_bytes}")
endforeach()
file(WRITE ${OUT}/garbage_header.ply "ply\n${_noise}\nend_header\n${_bytes}")
# text points: NaN, infinite, beyond float, and beyond what float's squared distances hold
file(WRITE ${OUT}/nan.xyz "0 0 0\n1 nan 1\n")
file(WRITE ${OUT}/inf.xyz "0 0 0\n1 1 -inf\n")
file(WRITE ${OUT}/beyond_float.xyz "0 0 0\n1 1 1e39\n")
file(WRITE ${OUT}/huge.xyz "0 0 0\n1 1 1\n1e30 0 0\n")
file(WRITE ${OUT}/short_line.xyz "0 0 0\n1 1\n")
# meshes: a face with a billion corners, an index far beyond the vertices, a huge face count
set(_mesh_head "ply\nformat ascii 1.0\nelement vertex 3\n${_xyz3}")
file(WRITE ${OUT}/billion_corners.ply "${_mesh_head}element face 1\nproperty list uint int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n1000000000 0 1 2\n")
file(WRITE ${OUT}/far_index.obj "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4000000000\n")
file(WRITE ${OUT}/many_faces.ply "${_mesh_head}element face 9223372036854775807\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n")
file(WRITE ${OUT}/huge_list.ply "ply\nformat ascii 1.0\nelement vertex 3\n${_xyz3}property list uchar float extra\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0 1e300 1\n1 0 0 0\n0 1 0 0\n3 0 1 2\n")
