#include "bridge/agent_env.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace hb::bridge {

namespace {

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string expand_user(const std::string& path, const std::string& home) {
  if (path == "~" || path.rfind("~/", 0) == 0)
    return home + path.substr(1);
  return path;
}

// Without a trailing slash: "root/venv/bin/../.." is "root".
std::string normal(const std::string& path) {
  std::string n = fs::path(path).lexically_normal().string();
  while (n.size() > 1 && n.back() == '/')
    n.pop_back();
  return n;
}

bool is_executable_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

bool holds_run_agent(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(dir) / "run_agent.py", ec);
}

// Every executable `name` along PATH, in order (`which -a`), each with
// whether its PATH entry is the current directory (empty, relative or the
// cwd itself): a program a directory one merely stands in offers comes last.
struct path_hit {
  std::string path;
  bool in_cwd = false;
};
std::vector<path_hit> which_all(const std::string& name, const std::string& path, const std::string& cwd) {
  std::vector<path_hit> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos)
      end = path.size();
    std::string dir = path.substr(start, end - start);
    bool in_cwd = dir.empty() || dir.front() != '/' || normal(dir) == normal(cwd);
    std::string candidate = normal((dir.empty() ? cwd : dir.front() == '/' ? dir : cwd + "/" + dir) + "/" + name);
    if (is_executable_file(candidate))
      out.push_back({candidate, in_cwd});
    start = end + 1;
  }
  return out;
}

// `name` through PATH, or itself when it names a path (Studio's `which`).
std::string which(const std::string& name, const std::string& path, const std::string& cwd) {
  if (name.empty())
    return {};
  if (name.find('/') != std::string::npos) {
    std::string p = name.front() == '/' ? name : cwd + "/" + name;
    return is_executable_file(p) ? normal(p) : std::string();
  }
  auto hits = which_all(name, path, cwd);
  return hits.empty() ? std::string() : hits.front().path;
}

// The interpreter named by a script's `#!` line (its first word: `#!/usr/bin/env
// python3` names env, which is no agent interpreter, and is ignored).
std::string shebang_python(const std::string& script) {
  std::ifstream in(script);
  std::string first;
  if (!in || !std::getline(in, first) || first.rfind("#!", 0) != 0)
    return {};
  size_t begin = first.find_first_not_of(" \t", 2);
  if (begin == std::string::npos)
    return {};
  size_t end = first.find_first_of(" \t\r", begin);
  std::string program = first.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  if (fs::path(program).filename() == "env")
    return {};
  return program;
}

void add_unique(std::vector<std::string>& list, const std::string& item) {
  if (item.empty())
    return;
  std::string n = normal(item);
  for (const auto& have : list)
    if (have == n)
      return;
  list.push_back(n);
}

// Roots the `hermes` command points at: next to it (a checkout's bin/ or the
// installer's /usr/local/bin -> /usr/local/lib/hermes-agent), then near the
// Python its shebang names (a venv inside the root). Both as found on PATH
// and through symlinks, which the installer uses.
std::vector<std::string> roots_from_hermes_bin(const std::string& hermes) {
  std::vector<std::string> out;
  if (hermes.empty())
    return out;
  std::vector<std::string> bins{hermes};
  std::error_code ec;
  auto real = fs::canonical(hermes, ec);
  if (!ec)
    add_unique(bins, real.string());
  for (const auto& bin : bins) {
    fs::path dir = fs::path(bin).parent_path();
    for (auto rel : {"..", "../..", "../hermes-agent", "../lib/hermes-agent", "../../hermes-agent"})
      add_unique(out, (dir / rel).string());
  }
  std::string python = shebang_python(hermes);
  if (!python.empty()) {
    fs::path dir = fs::path(python).parent_path();
    for (auto rel : {"../..", "../../hermes-agent", "../../lib/hermes-agent"})
      add_unique(out, (dir / rel).string());
  }
  return out;
}

// One interpreter reached under several names (/bin/python3 and
// /usr/bin/python3) is one candidate. A venv's python is a symlink to its
// base interpreter yet another environment: a venv is known by its directory.
std::string interpreter_identity(const std::string& python) {
  std::error_code ec;
  fs::path venv = fs::path(python).parent_path().parent_path();
  if (fs::is_regular_file(venv / "pyvenv.cfg", ec)) {
    auto real = fs::canonical(venv, ec);
    return "venv " + (ec ? normal(venv.string()) : real.string());
  }
  auto real = fs::canonical(python, ec);
  return ec ? normal(python) : real.string();
}

// pyenv's and asdf's shims live in a directory called "shims"; empty when
// `python` is none.
std::string shim_kind(const std::string& python) {
  fs::path dir = fs::path(python).parent_path();
  if (dir.filename() != "shims")
    return {};
  std::string where = dir.string();
  if (where.find("pyenv") != std::string::npos)
    return "pyenv shim";
  if (where.find("asdf") != std::string::npos)
    return "asdf shim";
  return "shim";
}

} // namespace

agent_env_inputs agent_env_inputs::from_process(std::string agent_root, std::string hermes_home,
                                                std::string python) {
  agent_env_inputs in;
  in.agent_root = std::move(agent_root);
  in.hermes_home = std::move(hermes_home);
  in.python = std::move(python);
  if (auto bin = env_or_empty("HERMES_BIN"); !bin.empty())
    in.hermes_bin = bin;
  in.path = env_or_empty("PATH");
  if (in.path.empty())
    in.path = "/usr/local/bin:/usr/bin:/bin";
  std::error_code ec;
  in.cwd = fs::current_path(ec).string();
  in.home = env_or_empty("HOME");
  for (const char* name : {"HERMES_AGENT_BRIDGE_UV", "UV"})
    if (auto uv = env_or_empty(name); !uv.empty())
      in.uv.push_back(uv);
  in.python_env = env_or_empty("PYTHON");
  return in;
}

std::string interpreter::display() const {
  std::string out;
  for (const auto& a : argv)
    out += (out.empty() ? "" : " ") + a;
  return out;
}

agent_env find_agent_env(const agent_env_inputs& in) {
  agent_env env;
  std::string hermes = which(in.hermes_bin, in.path, in.cwd);

  std::vector<std::string> roots;
  if (!in.agent_root.empty())
    add_unique(roots, expand_user(in.agent_root, in.home));
  if (!in.hermes_home.empty())
    add_unique(roots, in.hermes_home + "/hermes-agent");
  for (const auto& r : roots_from_hermes_bin(hermes))
    add_unique(roots, r);
  add_unique(roots, in.cwd);
  add_unique(roots, in.cwd + "/hermes-agent");
  for (const auto& r : in.system_roots)
    add_unique(roots, r);
  if (!in.home.empty()) {
    add_unique(roots, in.home + "/.hermes/hermes-agent");
    add_unique(roots, in.home + "/hermes-agent");
  }
  for (auto& r : roots) {
    if (r.front() != '/')
      r = normal(in.cwd + "/" + r);
    if (holds_run_agent(r)) {
      env.agent_root = r;
      break;
    }
  }
  if (!env.agent_root)
    env.roots_tried = roots;

  // Interpreters in order. An explicit one is the only one.
  if (!in.python.empty()) {
    std::string p = expand_user(in.python, in.home);
    std::string found = which(p, in.path, in.cwd);
    env.interpreters.push_back(interpreter{{found.empty() ? p : found}, "--agent-python"});
    return env;
  }
  std::vector<std::string> seen;
  auto add = [&](std::vector<std::string> argv, std::string source) {
    if (argv.size() == 1) { // a program (`uv run` is a command, never a duplicate)
      std::string id = interpreter_identity(argv[0]);
      if (std::find(seen.begin(), seen.end(), id) != seen.end())
        return;
      seen.push_back(id);
    }
    interpreter python{std::move(argv), std::move(source)};
    if (python.argv.size() == 1 && python.source != "venv" && python.source != ".venv") {
      if (auto kind = shim_kind(python.argv[0]); !kind.empty()) {
        python.source = kind;
        python.shim = true;
      }
    }
    env.interpreters.push_back(std::move(python));
  };
  if (env.agent_root) {
    for (auto rel : {"venv/bin/python3", "venv/bin/python", ".venv/bin/python3", ".venv/bin/python"}) {
      // Not resolved through its symlink: a venv's python is a venv only by its path.
      std::string p = *env.agent_root + "/" + rel;
      if (is_executable_file(p))
        add({p}, rel[0] == '.' ? ".venv" : "venv");
    }
  }
  if (!hermes.empty()) {
    std::string p = shebang_python(hermes);
    if (!p.empty() && is_executable_file(p))
      add({p}, "hermes shebang");
  }
  std::vector<std::string> uvs = in.uv;
  if (env.agent_root)
    for (auto rel : {"venv/bin/uv", ".venv/bin/uv"})
      uvs.push_back(*env.agent_root + "/" + rel);
  uvs.push_back("uv");
  for (const auto& uv : uvs) {
    std::string found = which(uv, in.path, in.cwd);
    if (found.empty())
      continue;
    // Offline and without syncing: finding an interpreter never installs anything.
    std::vector<std::string> argv{found, "run", "--offline", "--no-sync"};
    if (env.agent_root) {
      argv.push_back("--project");
      argv.push_back(*env.agent_root);
    }
    argv.push_back("python");
    add(std::move(argv), "uv");
    break;
  }
  std::vector<std::string> in_cwd; // the current directory's, tried last
  if (!in.python_env.empty()) {
    std::string found = which(expand_user(in.python_env, in.home), in.path, in.cwd);
    bool relative = in.python_env.find('/') != std::string::npos && in.python_env.front() != '/' &&
                    in.python_env.front() != '~';
    if (relative)
      in_cwd.push_back(found);
    else if (!found.empty())
      add({found}, "$PYTHON");
  }
  for (const char* name : {"python3", "python"})
    for (const auto& hit : which_all(name, in.path, in.cwd)) {
      if (hit.in_cwd)
        in_cwd.push_back(hit.path);
      else
        add({hit.path}, "PATH");
    }
  if (is_executable_file(in.system_python))
    add({in.system_python}, "system");
  for (const auto& p : in_cwd)
    if (!p.empty())
      add({p}, "current directory");
  return env;
}

} // namespace hb::bridge
