#include "app/commands.hpp"

namespace hb::app {

void add_commands(CLI::App&, std::function<int()>&) {
  // Registered here as they are written; see app/commands.hpp.
}

} // namespace hb::app
