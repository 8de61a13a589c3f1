#pragma once
// The file format of saved trees (docs/architecture.md, "Saved trees",
// describes it field by field): a fixed 96-byte header, then a payload of
// sections, each a 16-byte section header (tag, element size, count) and
// its elements as raw bytes in the writer's byte order. The header carries
// what a reader must agree with before trusting a byte of the payload: the
// magic, the format version, a byte-order marker, the tree kind, the
// coordinate and index widths, the dimension, the sizes, and checksums of
// the payload and of the header itself.
//
// Arrays move between the file and any memory space through a host buffer
// of at most 64 MiB, so a tree in GPU memory is saved and loaded without a
// host copy of the whole of it.
#include <kdforge/backends/memory.hpp>
#include <kdforge/base/error.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <istream>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kdforge {

/// The kinds of tree a saved file may hold (and which builders make them).
enum class TreeKind : std::uint32_t {
  left_balanced = 1, ///< LeftBalancedTree: build_left_balanced (every Builder)
  median = 2,        ///< MedianTree: build_split_sort, build_median_in_place
  bucket = 3,        ///< BucketTree: build_bucket_tree
  vvh = 4,           ///< VvhTree: build_vvh_tree
  triangle = 5,      ///< TriangleTree: build_sah_tree
};

namespace detail {

inline char const* kind_name(std::uint32_t k) {
  switch (TreeKind(k)) {
  case TreeKind::left_balanced: return "a left-balanced tree (build_left_balanced)";
  case TreeKind::median: return "a median tree (build_split_sort, build_median_in_place)";
  case TreeKind::bucket: return "a bucket tree (build_bucket_tree)";
  case TreeKind::vvh: return "a VVH photon tree (build_vvh_tree)";
  case TreeKind::triangle: return "a triangle tree (build_sah_tree)";
  }
  return "an unknown kind of tree";
}

inline constexpr char tree_file_magic[8] = {'\x89', 'K', 'D', 'F', 'T', 'R', 'E', 'E'};
/// The format version written, and the oldest read. Version 2 holds
/// triangle corners row-major whichever memory the tree was saved from;
/// version 1 held them as that memory's default layout had them
/// (column-major from a GPU), so a version-1 triangle tree is refused: its
/// file does not say which. A version-1 tree of points reads as written.
inline constexpr std::uint32_t tree_file_version = 2;
inline constexpr std::uint32_t oldest_tree_file_version = 1;
inline constexpr std::uint32_t byte_order_marker = 0x01020304u;

/// The file header, 96 bytes, every field at its natural alignment.
struct TreeFileHeader {
  char magic[8];                   //  0: \x89 K D F T R E E
  std::uint32_t version;           //  8: format version (2)
  std::uint32_t byte_order;        // 12: 0x01020304 in the writer's byte order
  std::uint32_t kind;              // 16: TreeKind
  std::uint32_t coordinate_bytes;  // 20: 4 (float) or 8 (double)
  std::int32_t dimension;          // 24: D (bucket trees: the run-time dimension)
  std::uint32_t index_bytes;       // 28: 4 or 8 (std::int32_t or std::int64_t)
  std::uint64_t size;              // 32: points (triangle trees: triangles)
  std::uint64_t nodes;             // 40: node count (level-order trees: node slots)
  std::uint64_t sections;          // 48: sections in the payload
  std::uint64_t payload_bytes;     // 56: bytes after the header
  std::uint64_t payload_checksum;  // 64: checksum() of the payload
  std::uint64_t reserved[2];       // 72: zero
  std::uint64_t header_checksum;   // 88: checksum() of bytes 0 .. 87
};
static_assert(sizeof(TreeFileHeader) == 96, "kdforge: the tree file header must be 96 bytes");

/// Each section: what follows and how much of it.
struct SectionHeader {
  std::uint32_t tag;           // four characters, e.g. 'PNTS'
  std::uint32_t element_bytes; // sizeof one element
  std::uint64_t count;         // elements
};
static_assert(sizeof(SectionHeader) == 16, "kdforge: a section header must be 16 bytes");

constexpr std::uint32_t tag(char const (&s)[5]) {
  return std::uint32_t(std::uint8_t(s[0])) | std::uint32_t(std::uint8_t(s[1])) << 8 |
         std::uint32_t(std::uint8_t(s[2])) << 16 | std::uint32_t(std::uint8_t(s[3])) << 24;
}
inline std::string tag_name(std::uint32_t t) {
  std::string s(4, ' ');
  for (int i = 0; i < 4; ++i) {
    char const c = char((t >> (8 * i)) & 0xff);
    s[std::size_t(i)] = c >= 32 && c < 127 ? c : '?';
  }
  return s;
}

/// 64-bit checksum of a byte stream, fed in pieces of any size: FNV-1a on
/// 8-byte words (a multiply and an xor per word, GB/s on one core), then
/// on the bytes that do not fill one. Each step is a bijection of the
/// state, so changing any one word always changes the result.
class Checksum {
public:
  void add(void const* data, std::size_t bytes) {
    auto const* p = static_cast<unsigned char const*>(data);
    // complete a partial word first (m_fill < 8 always holds; said here so
    // that the compiler sees the store stays inside m_word)
    while (bytes > 0 && m_fill > 0 && m_fill < 8) {
      m_word[m_fill++] = *p++;
      --bytes;
      if (m_fill == 8) {
        mix_word(m_word);
        m_fill = 0;
      }
    }
    for (; bytes >= 8; bytes -= 8, p += 8) mix_word(p);
    if (bytes > 0) { // fewer than 8 left, and no partial word before them
      std::memcpy(m_word, p, bytes & 7);
      m_fill = bytes & 7;
    }
  }
  std::uint64_t value() const {
    std::uint64_t h = m_hash;
    for (std::size_t i = 0; i < m_fill; ++i) h = (h ^ m_word[i]) * prime;
    return h ^ m_length_words;
  }

private:
  static constexpr std::uint64_t prime = 0x100000001b3ull;
  void mix_word(unsigned char const* p) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    m_hash = (m_hash ^ w) * prime;
    ++m_length_words;
  }
  std::uint64_t m_hash = 0xcbf29ce484222325ull;
  std::uint64_t m_length_words = 0;
  unsigned char m_word[8] = {};
  std::size_t m_fill = 0;
};

inline std::uint64_t header_checksum(TreeFileHeader const& h) {
  Checksum c;
  c.add(&h, offsetof(TreeFileHeader, header_checksum));
  return c.value();
}

inline constexpr std::size_t transfer_bytes = std::size_t(64) << 20;

/// The product of a View data type's compile-time extents (T*[3][3]: 9).
template <class DataType>
constexpr std::uint64_t static_extents() {
  if constexpr (std::is_array<DataType>::value)
    return std::uint64_t(std::extent<DataType>::value) * static_extents<std::remove_extent_t<DataType>>();
  else
    return 1;
}

/// Writes a tree file to a stream: sections as they come, then the header
/// (the stream must be seekable: files are; a pipe is not).
class TreeWriter {
public:
  TreeWriter(std::ostream& out, std::string what) : m_out(out), m_what(std::move(what)) {
    m_start = m_out.tellp();
    TreeFileHeader blank{};
    write_raw(&blank, sizeof blank, false);
  }

  /// One section: the elements of a contiguous View (any memory space).
  template <class V>
  void section(std::uint32_t t, V const& v) {
    using E = typename V::non_const_value_type;
    static_assert(std::is_trivially_copyable<E>::value, "kdforge: saved arrays hold plain values");
    std::size_t const count = v.span();
    KDFORGE_REQUIRE(v.span_is_contiguous(), "save", m_what, ": internal error: section ", tag_name(t),
                    " is not contiguous");
    SectionHeader const s{t, std::uint32_t(sizeof(E)), std::uint64_t(count)};
    write_raw(&s, sizeof s, true);
    ++m_sections;
    std::size_t const bytes = count * sizeof(E);
    if (bytes == 0) return;
    char const* src = reinterpret_cast<char const*>(v.data());
    using MS = typename V::memory_space;
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible) {
      Kokkos::fence();
      for (std::size_t at = 0; at < bytes; at += transfer_bytes)
        write_raw(src + at, std::min(transfer_bytes, bytes - at), true);
    } else {
      std::vector<char> buffer(std::min(transfer_bytes, bytes));
      Kokkos::View<char const*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> all(src, bytes);
      for (std::size_t at = 0; at < bytes; at += transfer_bytes) {
        std::size_t const piece = std::min(transfer_bytes, bytes - at);
        Kokkos::View<char*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(buffer.data(), piece);
        Kokkos::deep_copy(host, Kokkos::subview(all, Kokkos::make_pair(at, at + piece)));
        write_raw(buffer.data(), piece, true);
      }
    }
  }
  /// One section from host values.
  template <class E>
  void section(std::uint32_t t, std::vector<E> const& v) {
    section(t, Kokkos::View<E const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.size()));
  }

  /// Completes the file: the header, with the sizes and checksums.
  void finish(TreeFileHeader h) {
    std::memcpy(h.magic, tree_file_magic, sizeof h.magic);
    h.version = tree_file_version;
    h.byte_order = byte_order_marker;
    h.sections = m_sections;
    h.payload_bytes = m_payload_bytes;
    h.payload_checksum = m_checksum.value();
    h.reserved[0] = h.reserved[1] = 0;
    h.header_checksum = header_checksum(h);
    auto const end = m_out.tellp();
    m_out.seekp(m_start);
    write_raw(&h, sizeof h, false);
    m_out.seekp(end);
    m_out.flush();
    KDFORGE_REQUIRE(bool(m_out), "save", m_what, ": writing failed (disk full, or the stream cannot seek back to "
                                             "the header?)");
  }

private:
  void write_raw(void const* p, std::size_t bytes, bool payload) {
    m_out.write(static_cast<char const*>(p), std::streamsize(bytes));
    KDFORGE_REQUIRE(bool(m_out), "save", m_what, ": writing failed after ", m_payload_bytes,
                    " bytes of payload (disk full?)");
    if (payload) {
      m_checksum.add(p, bytes);
      m_payload_bytes += bytes;
    }
  }
  std::ostream& m_out;
  std::string m_what;
  std::streampos m_start;
  Checksum m_checksum;
  std::uint64_t m_payload_bytes = 0;
  std::uint64_t m_sections = 0;
};

/// Reads a tree file from a stream, checking everything it reads.
class TreeReader {
public:
  TreeReader(std::istream& in, std::string what) : m_in(in), m_what(std::move(what)) {}

  [[noreturn]] void fail(std::string const& why) const { detail::fail("load", m_what, ": ", why); }

  /// Reads and checks the header against what the caller's tree type is.
  TreeFileHeader header(TreeKind kind, std::size_t coordinate_bytes, int dimension, std::size_t index_bytes,
                        char const* type_name) {
    TreeFileHeader h{};
    m_in.read(reinterpret_cast<char*>(&h), sizeof h);
    std::size_t const got = std::size_t(m_in.gcount());
    if (got >= sizeof h.magic && std::memcmp(h.magic, tree_file_magic, sizeof h.magic) != 0)
      fail("not a kdforge tree file (its first bytes are not the magic \\x89KDFTREE)");
    if (got < sizeof h)
      fail("truncated: the header has " + std::to_string(got) + " of its " + std::to_string(sizeof h) + " bytes");
    if (h.byte_order != byte_order_marker) {
      std::uint32_t const swapped = ((h.byte_order & 0xffu) << 24) | ((h.byte_order & 0xff00u) << 8) |
                                    ((h.byte_order >> 8) & 0xff00u) | (h.byte_order >> 24);
      if (swapped == byte_order_marker)
        fail("written on a machine of the other byte order (big- vs little-endian); save it again on this kind of "
             "machine");
      fail("corrupt header (byte-order marker " + std::to_string(h.byte_order) + ")");
    }
    // Every version keeps the magic, version, byte order and the header's
    // checksum where version 1 has them, so a version it cannot read is
    // told from a damaged version field.
    bool const intact = h.header_checksum == header_checksum(h);
    if (h.version < oldest_tree_file_version || h.version > tree_file_version) {
      if (!intact)
        fail("corrupt header (its checksum does not match; the version field reads " + std::to_string(h.version) + ")");
      fail("format version " + std::to_string(h.version) + ", but this kdforge reads versions " +
           std::to_string(oldest_tree_file_version) + " to " + std::to_string(tree_file_version) +
           (h.version > tree_file_version ? " (a newer kdforge wrote it)" : ""));
    }
    if (!intact) fail("corrupt header (its checksum does not match)");
    if (h.kind != std::uint32_t(kind))
      fail(std::string("the file holds ") + kind_name(h.kind) + ", not " + kind_name(std::uint32_t(kind)) + " (" +
           type_name + ")");
    if (kind == TreeKind::triangle && h.version < 2)
      fail("format version " + std::to_string(h.version) +
           ": its triangle corners are in the layout of the memory it was saved from, which the file does not say "
           "(column-major from a GPU); build the tree again and save it with this kdforge");
    if (h.coordinate_bytes != coordinate_bytes)
      fail(std::string("the file's coordinates are ") + (h.coordinate_bytes == 4 ? "float" : "double") + ", " +
           type_name + "'s are " + (coordinate_bytes == 4 ? "float" : "double"));
    if (dimension > 0 && h.dimension != dimension)
      fail("the file's points have " + std::to_string(h.dimension) + " dimensions, " + type_name + "'s have " +
           std::to_string(dimension));
    if (h.index_bytes != index_bytes)
      fail("the file's indices are " + std::to_string(8 * h.index_bytes) + "-bit, " + type_name + "'s are " +
           std::to_string(8 * index_bytes) + "-bit");
    m_header = h;
    return h;
  }

  /// Reads the next section, which must be tag `t` with the elements of a
  /// View V of `extents`, into a new View of V (labelled `label`).
  template <class V, class... Extents>
  V section(std::uint32_t t, char const* label, Extents... extents) {
    using E = typename V::non_const_value_type;
    std::uint64_t count = static_extents<typename V::traits::data_type>();
    for (std::uint64_t const e : {std::uint64_t(extents)...}) count *= e;
    SectionHeader s{};
    read_raw(&s, sizeof s, "the header of section " + tag_name(t));
    if (s.tag != t) fail("section " + tag_name(t) + " expected, found " + tag_name(s.tag) + " (corrupt file)");
    if (s.element_bytes != sizeof(E))
      fail("section " + tag_name(t) + " holds elements of " + std::to_string(s.element_bytes) + " bytes, expected " +
           std::to_string(sizeof(E)) + " (written by an incompatible build?)");
    if (s.count != count)
      fail("section " + tag_name(t) + " holds " + std::to_string(s.count) + " elements, expected " +
           std::to_string(count) + " (corrupt file)");
    std::uint64_t const left = m_header.payload_bytes - m_read;
    if (s.count > left / sizeof(E))
      fail("section " + tag_name(t) + " claims " + std::to_string(s.count) + " elements, more than the " +
           std::to_string(left) + " bytes the header says are left (corrupt file)");
    using MS = typename V::memory_space;
    V v = backend::allocate<V>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), extents...);
    std::size_t const bytes = std::size_t(count) * sizeof(E);
    char* dst = reinterpret_cast<char*>(v.data());
    std::string const what = "section " + tag_name(t);
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, MS>::accessible) {
      for (std::size_t at = 0; at < bytes; at += transfer_bytes) read_raw(dst + at, std::min(transfer_bytes, bytes - at), what);
    } else {
      std::vector<char> buffer(std::min(transfer_bytes, bytes));
      Kokkos::View<char*, MS, Kokkos::MemoryTraits<Kokkos::Unmanaged>> all(dst, bytes);
      for (std::size_t at = 0; at < bytes; at += transfer_bytes) {
        std::size_t const piece = std::min(transfer_bytes, bytes - at);
        read_raw(buffer.data(), piece, what);
        Kokkos::View<char const*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(buffer.data(), piece);
        Kokkos::deep_copy(Kokkos::subview(all, Kokkos::make_pair(at, at + piece)), host);
      }
    }
    ++m_sections;
    return v;
  }

  /// After the last section: the payload is complete and its checksum right.
  void finish() {
    if (m_sections != m_header.sections || m_read != m_header.payload_bytes)
      fail("the header announces " + std::to_string(m_header.sections) + " sections of " +
           std::to_string(m_header.payload_bytes) + " bytes, the tree has " + std::to_string(m_sections) + " of " +
           std::to_string(m_read) + " (corrupt file)");
    if (m_checksum.value() != m_header.payload_checksum)
      fail("corrupt: the payload's checksum does not match the header's (the file was changed or damaged)");
  }

private:
  void read_raw(void* p, std::size_t bytes, std::string const& what) {
    m_in.read(static_cast<char*>(p), std::streamsize(bytes));
    std::size_t const got = std::size_t(m_in.gcount());
    if (got != bytes)
      fail("truncated: " + what + " ends after " + std::to_string(m_read + got) + " of the " +
           std::to_string(m_header.payload_bytes) + " payload bytes the header announces");
    m_checksum.add(p, bytes);
    m_read += bytes;
  }
  std::istream& m_in;
  std::string m_what;
  TreeFileHeader m_header{};
  Checksum m_checksum;
  std::uint64_t m_read = 0;
  std::uint64_t m_sections = 0;
};

} // namespace detail
} // namespace kdforge
