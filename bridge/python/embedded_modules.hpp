// The adapter's Python modules (bridge/python/*.py), compiled into the
// binary in load order by CMakeLists.txt: the embedded host executes them,
// the worker host hands them to its worker processes.
#pragma once

#include <cstddef>

namespace hb::bridge {

struct embedded_module {
  const char* name;
  const char* source;
};
extern const embedded_module embedded_modules[];
extern const std::size_t embedded_module_count;

} // namespace hb::bridge
