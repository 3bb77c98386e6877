// Where a worker's Python comes from: the bridge's adapter sources, written
// for each worker into a fresh owner-only directory under the runtime
// directory, and the interpreter command that imports them from there and
// nowhere else. A local user who could reach that directory (or swap one on
// its way) could run code as the daemon's user, so every step is checked:
// the runtime directory's whole path (protocol::make_trusted_dir), the files
// written through directory descriptors that do not follow symlinks, and the
// directory the interpreter imports from compared, by device and inode, with
// the one written.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace hb::bridge::worker {

struct module_dir {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
};

// Writes the adapter's sources into a new directory in `runtime_dir`
// (created 0700 if missing); throws protocol::wire_error (RuntimeError).
module_dir write_modules(const std::string& runtime_dir);

// Removes the module directories a daemon that was killed left in
// `runtime_dir`, except those of workers that outlived it (kept).
void remove_stale_module_dirs(const std::string& runtime_dir);
// A module directory a worker this daemon adopted still uses.
void keep_module_dir(const std::string& path);

// The arguments after the interpreter's own argv: `-B -c <bootstrap> ...`,
// with `-P` first when the interpreter has it (Python 3.11+). The bootstrap
// drops the current directory from sys.path, checks `dir` is the one written,
// puts it first on sys.path and runs worker_main with `worker_args`.
// PYTHONPATH and the agent's venv stay as they are: the agent needs them.
std::vector<std::string> bootstrap_args(const module_dir& dir, bool has_safe_path,
                                        const std::vector<std::string>& worker_args);

// "3.11.2" and newer have -P.
bool version_has_safe_path(const std::string& python_version);

} // namespace hb::bridge::worker
