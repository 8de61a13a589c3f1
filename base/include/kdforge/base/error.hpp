#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace kdforge {

/// The one exception type kdforge throws. Messages name the cause and, where
/// there is one, the fix. Nothing throws inside kernels: inputs are validated
/// at the API boundary.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

namespace detail {
template <class... Args>
[[noreturn]] void fail(char const* where, Args const&... args) {
  std::ostringstream os;
  os << "kdforge::" << where << ": ";
  (os << ... << args);
  throw Error(os.str());
}
} // namespace detail
} // namespace kdforge

/// Throws kdforge::Error("kdforge::<where>: <message...>") when cond is false.
#define KDFORGE_REQUIRE(cond, where, ...)                                      \
  do {                                                                         \
    if (!(cond)) ::kdforge::detail::fail(where, __VA_ARGS__);                  \
  } while (false)
