// The serve flags of native sessions (the hermes TUI in tmux) and the
// native_options they make.
#pragma once

#include "bridge/tmux/native_session.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace hb::app {

struct native_flags {
  std::string hermes_bin = "hermes";
  std::string dir = hb::bridge::default_native_runtime_dir();
  double confirm_s = 12;
  double approval_timeout_s = 60;
  size_t max_native = 32;
};

void add_native_flags(CLI::App& serve, native_flags& flags);

std::shared_ptr<const hb::bridge::native_options> native_options_from(const native_flags& flags,
                                                                     const std::string& hermes_home);

} // namespace hb::app
