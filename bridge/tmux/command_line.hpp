// A command line given as one string (`--hermes-bin "uv run --project
// ~/hermes-agent hermes"`, as $EDITOR-style settings are written), split
// into words the way a POSIX shell would, without running a shell: blanks
// separate words; single quotes keep everything; double quotes keep all but
// \" \\ \$ \`; a backslash outside quotes escapes the next character; an
// unquoted leading ~ or ~/ becomes $HOME. No variables, globs or
// substitutions. Pure: unit-tested on its own.
#pragma once

#include <string>
#include <vector>

namespace hb::bridge {

// Throws protocol::wire_error (ValueError) for an unterminated quote or a
// trailing backslash.
std::vector<std::string> split_command_line(const std::string& line, const std::string& home);

} // namespace hb::bridge
