#pragma once
// kdforge-bench: the command line (cli.cpp).
#include "options.hpp"

#include <optional>

namespace kdforge_bench {

/// Parsed options, or nullopt with `exit_code` set (0 after --help, 2 after
/// a bad flag; the message is already printed).
std::optional<Options> parse_command_line(int argc, char** argv, int& exit_code);

} // namespace kdforge_bench
