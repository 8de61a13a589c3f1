// The backend primitives against the standard library, on every configured
// execution space: CUB on Cuda, oneTBB on OpenMP/Threads, std on Serial.
#include "test_helpers.hpp"

#include <kdforge/backends/primitives.hpp>

#include <algorithm>
#include <numeric>

using namespace kdforge;
using kdforge::test::to_device;
using kdforge::test::to_host;

namespace {

enum class Keys { random, all_equal, sorted, reversed, few_distinct };

template <class K>
std::vector<K> make_keys(std::size_t n, Keys kind, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<K> k(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (kind) {
    case Keys::random: k[i] = K(rng()); break;
    case Keys::all_equal: k[i] = K(0xABCDEF12u); break;
    case Keys::sorted: k[i] = K(i * 3); break;
    case Keys::reversed: k[i] = K((n - i) * 5); break;
    case Keys::few_distinct: k[i] = K(rng() % 5) << (4 * sizeof(K)); break;
    }
  }
  return k;
}

template <class K>
K key_bits(K k, int b, int e) {
  int const bits = e - b;
  K const mask = bits >= int(8 * sizeof(K)) ? ~K(0) : K((K(1) << bits) - 1);
  return (k >> b) & mask;
}

// The reference: std::stable_sort of (key, value) by the masked key.
template <class K>
void reference_sort(std::vector<K>& keys, std::vector<int>& vals, int b, int e, std::size_t lo, std::size_t hi) {
  std::vector<std::size_t> order(hi - lo);
  std::iota(order.begin(), order.end(), lo);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return key_bits(keys[x], b, e) < key_bits(keys[y], b, e); });
  std::vector<K> k2;
  std::vector<int> v2;
  for (auto i : order) {
    k2.push_back(keys[i]);
    v2.push_back(vals[i]);
  }
  std::copy(k2.begin(), k2.end(), keys.begin() + lo);
  std::copy(v2.begin(), v2.end(), vals.begin() + lo);
}

template <class Exec, class K>
void check_sort(std::size_t n, Keys kind, int b, int e) {
  auto keys = make_keys<K>(n, kind, 42 + n);
  std::vector<int> vals(n);
  std::iota(vals.begin(), vals.end(), 0);
  auto dk = to_device<Exec>(keys, "keys");
  auto dv = to_device<Exec>(vals, "vals");
  backend::sort_by_key(Exec{}, dk, dv, b, e);
  reference_sort(keys, vals, b, e, 0, n);
  auto hk = to_host(dk);
  auto hv = to_host(dv);
  CHECK(hk == keys);
  CHECK(hv == vals); // stable: equal keys keep their input order
}

} // namespace

TEST_CASE_TEMPLATE("sort_by_key matches std::stable_sort", Exec, KDFORGE_TEST_SPACES) {
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(33), std::size_t(1000),
                        std::size_t(100003), (std::size_t(1) << 20) + 3}) {
    for (Keys kind : {Keys::random, Keys::all_equal, Keys::sorted, Keys::reversed, Keys::few_distinct}) {
      CAPTURE(n);
      CAPTURE(int(kind));
      check_sort<Exec, std::uint32_t>(n, kind, 0, 32);
      check_sort<Exec, std::uint64_t>(n, kind, 0, 64);
      check_sort<Exec, std::uint64_t>(n, kind, 5, 43); // a bit window: other bits must be ignored
      check_sort<Exec, std::uint32_t>(n, kind, 7, 8);
    }
  }
}

TEST_CASE_TEMPLATE("sort_by_key rejects bad arguments", Exec, KDFORGE_TEST_SPACES) {
  auto dk = to_device<Exec>(std::vector<std::uint32_t>(4), "k");
  auto dv = to_device<Exec>(std::vector<int>(3), "v");
  CHECK_THROWS_AS(backend::sort_by_key(Exec{}, dk, dv), kdforge::Error);
  auto dv4 = to_device<Exec>(std::vector<int>(4), "v");
  CHECK_THROWS_AS(backend::sort_by_key(Exec{}, dk, dv4, 0, 33), kdforge::Error);
  CHECK_THROWS_AS(backend::sort_by_key(Exec{}, dk, dv4, 9, 8), kdforge::Error);
}

TEST_CASE_TEMPLATE("segmented_sort_by_key matches a per-segment std::stable_sort", Exec, KDFORGE_TEST_SPACES) {
  std::mt19937_64 rng(7);
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(5000), (std::size_t(1) << 20) + 3}) {
    // segments of random length, including empty ones and one large one
    std::vector<int> offsets{0};
    while (std::size_t(offsets.back()) < n) {
      std::size_t len = rng() % 4 == 0 ? 0 : (rng() % 7 == 0 ? n / 3 : rng() % 300);
      offsets.push_back(int(std::min(n, offsets.back() + len)));
    }
    if (offsets.size() == 1) offsets.push_back(0);
    for (Keys kind : {Keys::random, Keys::all_equal, Keys::reversed}) {
      CAPTURE(n);
      auto keys = make_keys<std::uint64_t>(n, kind, n);
      std::vector<int> vals(n);
      std::iota(vals.begin(), vals.end(), 0);
      auto dk = to_device<Exec>(keys, "k");
      auto dv = to_device<Exec>(vals, "v");
      auto doff = to_device<Exec>(offsets, "off");
      backend::segmented_sort_by_key(Exec{}, dk, dv, doff, 0, 48);
      for (std::size_t s = 0; s + 1 < offsets.size(); ++s) reference_sort(keys, vals, 0, 48, offsets[s], offsets[s + 1]);
      CHECK(to_host(dk) == keys);
      CHECK(to_host(dv) == vals);
    }
  }
}

// Few long segments: the builders' presorts (3 or D lists of N keys). On
// GPUs these take one device-wide sort of (segment, key bits) keys instead
// of one thread block per segment; bits outside the sorted range must come
// back with their keys, ties in input order.
TEST_CASE_TEMPLATE("segmented_sort_by_key of a few long segments matches a per-segment std::stable_sort", Exec,
                   KDFORGE_TEST_SPACES) {
  std::size_t const n = (std::size_t(1) << 17) + 5;
  std::mt19937_64 rng(11);
  auto layouts = std::vector<std::vector<int>>{
      {0, int(n)},                                      // one segment
      {0, int(n / 3), int(n / 3), int(2 * n / 3), int(n)}, // three, and an empty one
  };
  std::vector<int> many{0}; // 64 segments of random lengths, some empty
  for (int s = 1; s < 64; ++s) many.push_back(rng() % 5 == 0 ? many.back() : int(std::min<std::size_t>(n, std::size_t(many.back()) + rng() % (n / 32))));
  many.push_back(int(n));
  layouts.push_back(many);
  auto run = [&](auto key_type, int b, int e) {
    using K = decltype(key_type);
    for (auto const& offsets : layouts)
      for (Keys kind : {Keys::random, Keys::few_distinct, Keys::all_equal}) {
        CAPTURE(offsets.size() - 1);
        CAPTURE(b);
        CAPTURE(e);
        auto keys = make_keys<K>(n, kind, offsets.size() + std::size_t(e));
        std::vector<int> vals(n);
        std::iota(vals.begin(), vals.end(), 0);
        auto dk = to_device<Exec>(keys, "k");
        auto dv = to_device<Exec>(vals, "v");
        auto doff = to_device<Exec>(offsets, "off");
        backend::segmented_sort_by_key(Exec{}, dk, dv, doff, b, e);
        for (std::size_t s = 0; s + 1 < offsets.size(); ++s) reference_sort(keys, vals, b, e, offsets[s], offsets[s + 1]);
        CHECK(to_host(dk) == keys);
        CHECK(to_host(dv) == vals);
      }
  };
  run(std::uint32_t{}, 0, 32);  // whole keys (the presorts)
  run(std::uint32_t{}, 4, 20);  // a bit range: the bits around it travel with their keys
  run(std::uint64_t{}, 0, 48);  // 48 + 6 segment bits fit 64
  run(std::uint64_t{}, 0, 64);  // no room for segment bits beside 64 key bits: the segmented sort
  // a memory limit that holds the segmented sort's buffers (a key and a
  // value per element, each its own allocation) but not the one-array
  // sort's: the sort still succeeds, by the segmented sort
  test::MemoryGuard guard;
  kdforge::set_memory_limit(n * 12); // the one-array sort's workspace, 12 bytes per element in one allocation, would not fit
  run(std::uint32_t{}, 0, 32);
}

TEST_CASE_TEMPLATE("exclusive_scan returns the prefix sums and the total, with or without a kept workspace", Exec,
                   KDFORGE_TEST_SPACES) {
  std::mt19937_64 rng(3);
  Kokkos::View<char*, typename Exec::memory_space> workspace;
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(1000), (std::size_t(1) << 20) + 3}) {
    CAPTURE(n);
    std::vector<std::int64_t> in(n);
    for (auto& v : in) v = std::int64_t(rng() % 1000);
    std::vector<std::int64_t> expected(n);
    std::exclusive_scan(in.begin(), in.end(), expected.begin(), std::int64_t(0));
    std::int64_t const total = std::accumulate(in.begin(), in.end(), std::int64_t(0));
    auto din = to_device<Exec>(in, "in");
    Kokkos::View<std::int64_t*, typename Exec::memory_space> dout("out", n);
    CHECK(backend::exclusive_scan(Exec{}, din, dout) == total);
    CHECK(to_host(dout) == expected);
    // in place
    CHECK(backend::exclusive_scan(Exec{}, din, din) == total);
    CHECK(to_host(din) == expected);
    // the vendor scan's storage kept: a repeated scan of the same size
    // allocates nothing (on GPUs the first one allocates it)
    auto win = to_device<Exec>(in, "in");
    CHECK(backend::exclusive_scan(Exec{}, win, dout, workspace) == total);
    CHECK(to_host(dout) == expected);
    std::int64_t const before = kdforge::detail::allocations_made();
    CHECK(backend::exclusive_scan(Exec{}, win, win, workspace) == total);
    CHECK(kdforge::detail::allocations_made() == before);
    CHECK(to_host(win) == expected);
  }
}

TEST_CASE_TEMPLATE("bounding_box of points", Exec, KDFORGE_TEST_SPACES) {
  auto pts = test::make_points<float, 3>(100003, test::Distribution::clustered, 11);
  Box<float, 3> ref = Box<float, 3>::empty();
  for (auto const& p : pts) ref.extend(p);
  auto box = backend::bounding_box(Exec{}, to_device<Exec>(pts, "pts"));
  for (int d = 0; d < 3; ++d) {
    CHECK(box.lo[d] == ref.lo[d]);
    CHECK(box.hi[d] == ref.hi[d]);
  }
  auto empty = backend::bounding_box(Exec{}, to_device<Exec>(std::vector<Point<double, 2>>{}, "none"));
  CHECK(empty.lo[0] > empty.hi[0]);
}
