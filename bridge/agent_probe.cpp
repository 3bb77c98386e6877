// Which of the candidate interpreters (bridge/agent_env.cpp) can run the
// agent: each is asked to import it, because an interpreter that merely
// finds run_agent (the agent root is on its path) may lack the agent's
// dependencies, and would then fail every chat instead of being skipped.
#include "bridge/agent_env.hpp"

#include "bridge/tmux/subprocess.hpp"
#include "protocol/json_text.hpp"

#include <cstdio>

namespace hb::bridge {

namespace {

// Runs inside the candidate interpreter, valid from 3.8 up so that an old
// interpreter still answers (and is then refused by version). The answer
// goes to a copy of stdout: what the agent prints while importing goes to
// stderr. A fresh HERMES_HOME: importing run_agent loads the home's .env,
// and a probe belongs to no profile. os._exit: the agent's import may leave
// threads behind that would keep the probe from exiting.
// The agent imports its model client lazily (0.20.3 imports run_agent fine
// without httpx, then fails every session building the client), so the
// client libraries it declares in pyproject.toml are imported too.
constexpr const char* probe_script = R"PY(
import importlib, json, os, platform, re, shutil, sys, tempfile, traceback
answer = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
root = sys.argv[1] if len(sys.argv) > 1 else ""
if root:
    sys.path.insert(0, root)
out = {"executable": sys.executable, "version": platform.python_version(),
       "imports_agent": False, "agent_version": "", "problem": ""}
home = tempfile.mkdtemp(prefix="hermes-bridge-probe-")
os.environ["HERMES_HOME"] = home
def declared():
    try:
        import tomllib
        with open(os.path.join(root, "pyproject.toml"), "rb") as f:
            deps = tomllib.load(f).get("project", {}).get("dependencies", [])
        return {re.split(r"[^A-Za-z0-9_.-]", d.strip(), 1)[0].lower() for d in deps}
    except Exception:
        return set()
try:
    from run_agent import AIAgent  # noqa: F401
    from hermes_cli.runtime_provider import resolve_runtime_provider  # noqa: F401
    wanted = declared()
    for client in ("openai", "httpx"):
        if client in wanted:
            importlib.import_module(client)
    out["imports_agent"] = True
except BaseException as exc:
    out["problem"] = traceback.format_exception_only(type(exc), exc)[-1].strip()
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        out["problem"] += " (underneath: %s: %s)" % (type(cause).__name__, cause)
finally:
    shutil.rmtree(home, ignore_errors=True)
try:
    import importlib.metadata as md
    out["agent_version"] = md.version("hermes-agent")
except Exception:
    try:
        with open(os.path.join(root, "pyproject.toml"), encoding="utf-8") as f:
            m = re.search(r'(?m)^version\s*=\s*"([^"]+)"', f.read())
        out["agent_version"] = m.group(1) if m else ""
    except Exception:
        pass
answer.write(json.dumps(out))
answer.flush()
os._exit(0)
)PY";

// The adapter is written for these versions (stdlib-only, 3.11 to 3.14).
bool supported_version(const std::string& version) {
  int major = 0, minor = 0;
  if (std::sscanf(version.c_str(), "%d.%d", &major, &minor) != 2)
    return false;
  return major == 3 && minor >= 11;
}

std::string last_line(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos)
    return {};
  size_t begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

std::string seconds_text(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(d.count()) / 1000.0);
  return buf;
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
    probe.problem = "timed out after " + seconds_text(deadline) + " s";
    return probe;
  }
  auto doc = protocol::json::parse(r.out, nullptr, false);
  if (r.exit_code != 0 || !doc.is_object()) {
    std::string err = last_line(r.err);
    probe.problem = "exited with status " + std::to_string(r.exit_code) + (err.empty() ? "" : ": " + err);
    return probe;
  }
  probe.ran = true;
  probe.executable = doc.value("executable", "");
  probe.version = doc.value("version", "");
  probe.agent_version = doc.value("agent_version", "");
  probe.imports_agent = doc.value("imports_agent", false);
  probe.problem = doc.value("problem", "");
  if (!supported_version(probe.version))
    probe.problem = "Python " + probe.version + " is too old (the bridge needs 3.11 or newer)";
  else if (!probe.imports_agent && probe.problem.empty())
    probe.problem = "cannot import run_agent.AIAgent";
  return probe;
}

chosen_interpreter choose_interpreter(const agent_env& env, std::chrono::milliseconds deadline) {
  chosen_interpreter chosen;
  for (const auto& python : env.interpreters) {
    candidate_verdict verdict{python, !chosen.python, false, ""};
    if (chosen.python) {
      verdict.reason = "not probed: " + chosen.python->display() + " was taken first";
      chosen.candidates.push_back(std::move(verdict));
      continue;
    }
    auto probe = probe_interpreter(python, env.agent_root, deadline);
    bool resolved = python.shim && !probe.executable.empty();
    std::string via = resolved ? python.source + " for " + probe.executable + ": " : "";
    if (probe.ran && probe.problem.empty()) {
      chosen.python = python;
      if (resolved)
        chosen.python->argv = {probe.executable};
      chosen.probe = probe;
      verdict.ok = true;
      verdict.reason = via + "imports run_agent.AIAgent (Python " + probe.version +
                       (probe.agent_version.empty() ? "" : ", hermes-agent " + probe.agent_version) + ")";
    } else {
      verdict.reason = via + probe.problem;
      if (!chosen.probe.ran)
        chosen.probe = probe;
    }
    chosen.candidates.push_back(std::move(verdict));
  }
  if (chosen.python)
    return chosen;
  std::string roots;
  for (const auto& r : env.roots_tried)
    roots += (roots.empty() ? "" : ", ") + r;
  std::string tried;
  for (const auto& c : chosen.candidates)
    tried += (tried.empty() ? "" : "; ") + c.python.display() + " (" + c.python.source + "): " + c.reason;
  chosen.error = "no Python that can import hermes-agent's run_agent.AIAgent was found. ";
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
  protocol::json list = protocol::json::array();
  for (const auto& c : candidates)
    list.push_back({{"python", c.python.display()},
                    {"source", c.python.source},
                    {"ok", c.probed ? protocol::json(c.ok) : protocol::json(nullptr)},
                    {"reason", c.reason}});
  return w.value("candidates", list).finish();
}

} // namespace hb::bridge
