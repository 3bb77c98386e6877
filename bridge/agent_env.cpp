#include "bridge/agent_env.hpp"

#include "bridge/tmux/subprocess.hpp"
#include "protocol/json_text.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
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

// `name` through PATH, or itself when it names a path (Studio's `which`).
std::string which(const std::string& name, const std::string& path, const std::string& cwd) {
  if (name.empty())
    return {};
  if (name.find('/') != std::string::npos) {
    std::string p = name.front() == '/' ? name : cwd + "/" + name;
    return is_executable_file(p) ? normal(p) : std::string();
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos)
      end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? cwd : dir) + "/" + name;
    if (is_executable_file(candidate))
      return candidate;
    start = end + 1;
  }
  return {};
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

  // Interpreters, in Studio's order. An explicit one is the only one.
  auto add = [&](std::vector<std::string> argv, const char* source) {
    env.interpreters.push_back(interpreter{std::move(argv), source});
  };
  if (!in.python.empty()) {
    std::string p = expand_user(in.python, in.home);
    std::string found = which(p, in.path, in.cwd);
    add({found.empty() ? p : found}, "--agent-python");
    return env;
  }
  if (env.agent_root) {
    for (auto rel : {"venv/bin/python3", "venv/bin/python", ".venv/bin/python3", ".venv/bin/python"}) {
      // Not resolved through its symlink: a venv's python is a venv only by its path.
      std::string p = *env.agent_root + "/" + rel;
      if (is_executable_file(p))
        add({p}, "venv");
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
    std::vector<std::string> argv{found, "run"};
    if (env.agent_root) {
      argv.push_back("--project");
      argv.push_back(*env.agent_root);
    }
    argv.push_back("python");
    add(std::move(argv), "uv");
    break;
  }
  for (const auto& name : {in.python_env, std::string("python3"), std::string("python")}) {
    std::string found = which(name, in.path, in.cwd);
    if (!found.empty()) {
      add({found}, "PATH");
      break;
    }
  }
  return env;
}

namespace {

// Runs inside the candidate interpreter: stdlib only, valid from 3.8 up so
// that an old interpreter still answers (and is then refused by version).
constexpr const char* probe_script = R"PY(
import importlib.util, json, os, platform, sys
root = sys.argv[1] if len(sys.argv) > 1 else ""
if root:
    sys.path.insert(0, root)
out = {"executable": sys.executable, "version": platform.python_version(),
       "finds_run_agent": False, "agent_version": "", "problem": ""}
try:
    out["finds_run_agent"] = importlib.util.find_spec("run_agent") is not None
except Exception as exc:
    out["problem"] = "%s: %s" % (type(exc).__name__, exc)
try:
    import importlib.metadata as md
    out["agent_version"] = md.version("hermes-agent")
except Exception:
    try:
        import re
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
            m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', f.read())
        out["agent_version"] = m.group(1) if m else ""
    except Exception:
        pass
sys.stdout.write(json.dumps(out))
)PY";

// The adapter is written for these versions (stdlib-only, 3.11 to 3.14).
bool supported_version(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2)
    return false;
  return major == 3 && minor >= 11;
}

} // namespace

interpreter_probe probe_interpreter(const interpreter& python, const std::optional<std::string>& agent_root,
                                    std::chrono::milliseconds deadline) {
  interpreter_probe probe;
  if (python.argv.empty()) {
    probe.problem = "no interpreter";
    return probe;
  }
  std::vector<std::string> argv = python.argv;
  argv.insert(argv.end(), {"-c", probe_script, agent_root.value_or("")});
  process_result r;
  try {
    // PYTHONPATH and friends stay as the user set them: the worker runs with them too.
    r = run_process(argv, "", deadline);
  } catch (const std::exception& e) {
    probe.problem = e.what();
    return probe;
  }
  if (r.timed_out) {
    probe.problem = "did not answer within " + std::to_string(deadline.count() / 1000) + " s";
    return probe;
  }
  auto doc = protocol::json::parse(r.out, nullptr, false);
  if (r.exit_code != 0 || !doc.is_object()) {
    std::string err = r.err.substr(0, 300);
    while (!err.empty() && (err.back() == '\n' || err.back() == ' '))
      err.pop_back();
    probe.problem = "exited with status " + std::to_string(r.exit_code) + (err.empty() ? "" : ": " + err);
    return probe;
  }
  probe.ran = true;
  probe.executable = doc.value("executable", "");
  probe.version = doc.value("version", "");
  probe.agent_version = doc.value("agent_version", "");
  probe.finds_run_agent = doc.value("finds_run_agent", false);
  probe.problem = doc.value("problem", "");
  if (!supported_version(probe.version))
    probe.problem = "Python " + probe.version + " is too old (the bridge needs 3.11 or newer)";
  else if (!probe.finds_run_agent && probe.problem.empty())
    probe.problem = "cannot import run_agent";
  return probe;
}

chosen_interpreter choose_interpreter(const agent_env& env) {
  chosen_interpreter chosen;
  std::string tried;
  for (const auto& python : env.interpreters) {
    auto probe = probe_interpreter(python, env.agent_root);
    if (probe.ran && probe.problem.empty()) {
      chosen.python = python;
      chosen.probe = probe;
      return chosen;
    }
    tried += (tried.empty() ? "" : "; ") + python.display() + " (" + python.source + "): " + probe.problem;
    if (!chosen.probe.ran)
      chosen.probe = probe;
  }
  std::string roots;
  for (const auto& r : env.roots_tried)
    roots += (roots.empty() ? "" : ", ") + r;
  chosen.error = "no Python that can import hermes-agent's run_agent was found. ";
  if (!env.agent_root)
    chosen.error += "No hermes-agent source tree (run_agent.py) in: " + roots +
                    "; pass --agent-root or set HERMES_AGENT_ROOT. ";
  else
    chosen.error += "Agent root: " + *env.agent_root + ". ";
  chosen.error += tried.empty() ? std::string("No interpreter candidate exists (pass --agent-python).")
                                : "Interpreters tried: " + tried + ".";
  return chosen;
}

std::string chosen_interpreter::agent_json() const {
  protocol::object_writer w;
  if (python) {
    w.str("python", probe.executable.empty() ? python->display() : probe.executable)
      .str("python_command", python->display())
      .str("python_source", python->source)
      .str("python_version", probe.version);
    if (probe.agent_version.empty())
      w.null("agent_version");
    else
      w.str("agent_version", probe.agent_version);
  } else {
    w.null("python").str("error", error);
  }
  return w.finish();
}

} // namespace hb::bridge
