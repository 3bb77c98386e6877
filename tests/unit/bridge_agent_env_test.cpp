// Finding hermes-agent and its interpreter as Hermes Studio's manager does,
// over temporary directory layouts (a checkout with a venv, the installer's
// /usr/local/lib/hermes-agent, a hermes command with a shebang).
#include "bridge/agent_env.hpp"

#include "temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

using namespace hb::bridge;
namespace fs = std::filesystem;

namespace {

void write(const std::string& path, const std::string& text, bool executable = false) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
  if (executable)
    ::chmod(path.c_str(), 0755);
}

void make_root(const std::string& root) { write(root + "/run_agent.py", "# fake\n"); }

// A root the probe can import: run_agent.AIAgent and what the adapter imports next.
void make_importable_root(const std::string& root, const std::string& run_agent_head = "") {
  write(root + "/run_agent.py", run_agent_head + "class AIAgent:\n    pass\n");
  write(root + "/hermes_cli/__init__.py", "");
  write(root + "/hermes_cli/runtime_provider.py", "def resolve_runtime_provider():\n    pass\n");
}

agent_env_inputs inputs(const hb::test::temp_dir& t) {
  agent_env_inputs in;
  in.hermes_home = t.file("home/.hermes");
  in.home = t.file("home");
  in.cwd = t.file("cwd");
  in.path = t.file("bin");
  in.system_roots = {t.file("usr/local/lib/hermes-agent")};
  in.system_python = t.file("usr/bin/python3");
  fs::create_directories(in.cwd);
  return in;
}

} // namespace

TEST_CASE("agent env: an explicit root comes first, its venv's python3 first of all", "[agent_env]") {
  hb::test::temp_dir t;
  make_root(t.file("explicit"));
  make_root(t.file("home/.hermes/hermes-agent"));
  write(t.file("explicit/venv/bin/python3"), "", true);
  write(t.file("explicit/venv/bin/python"), "", true);
  write(t.file("explicit/.venv/bin/python"), "", true);
  auto in = inputs(t);
  in.agent_root = t.file("explicit");
  auto env = find_agent_env(in);
  REQUIRE(env.agent_root == t.file("explicit"));
  REQUIRE(env.interpreters.size() == 3);
  REQUIRE(env.interpreters[0].argv == std::vector<std::string>{t.file("explicit/venv/bin/python3")});
  REQUIRE(env.interpreters[0].source == "venv");
  REQUIRE(env.interpreters[1].argv[0] == t.file("explicit/venv/bin/python"));
  REQUIRE(env.interpreters[2].argv[0] == t.file("explicit/.venv/bin/python"));
}

TEST_CASE("agent env: without a usable explicit root, <hermes-home>/hermes-agent", "[agent_env]") {
  hb::test::temp_dir t;
  make_root(t.file("home/.hermes/hermes-agent"));
  auto in = inputs(t);
  in.agent_root = t.file("nothing-here");
  auto env = find_agent_env(in);
  REQUIRE(env.agent_root == t.file("home/.hermes/hermes-agent"));
}

TEST_CASE("agent env: the installer's layout, reached through the hermes command", "[agent_env]") {
  hb::test::temp_dir t;
  std::string root = t.file("usr/local/lib/hermes-agent");
  make_root(root);
  write(root + "/venv/bin/python3", "", true);
  write(root + "/venv/bin/hermes", "#!" + root + "/venv/bin/python3\nimport sys\n", true);
  fs::create_directories(t.file("bin"));
  fs::create_symlink(root + "/venv/bin/hermes", t.file("bin/hermes"));
  auto in = inputs(t);
  in.system_roots.clear(); // found through the command, not the fixed list
  auto env = find_agent_env(in);
  REQUIRE(env.agent_root == root);
  REQUIRE(env.interpreters.at(0).argv[0] == root + "/venv/bin/python3");
  REQUIRE(env.interpreters.at(0).source == "venv");
  // The shebang names the venv's python again: one interpreter, listed once.
  REQUIRE(env.interpreters.size() == 1);
}

TEST_CASE("agent env: a hermes shebang python, then uv run, then python3 on PATH", "[agent_env]") {
  hb::test::temp_dir t;
  make_root(t.file("cwd"));
  write(t.file("py/bin/python3.14"), "", true);
  write(t.file("bin/hermes"), "#!" + t.file("py/bin/python3.14") + " -s\n", true);
  write(t.file("bin/uv"), "", true);
  write(t.file("bin/python3"), "", true);
  auto env = find_agent_env(inputs(t));
  REQUIRE(env.agent_root == t.file("cwd"));
  REQUIRE(env.interpreters.size() == 3);
  REQUIRE(env.interpreters[0].argv == std::vector<std::string>{t.file("py/bin/python3.14")});
  REQUIRE(env.interpreters[0].source == "hermes shebang");
  REQUIRE(env.interpreters[1].argv ==
          std::vector<std::string>{t.file("bin/uv"), "run", "--offline", "--no-sync", "--project", t.file("cwd"),
                                   "python"});
  REQUIRE(env.interpreters[2].argv == std::vector<std::string>{t.file("bin/python3")});
  REQUIRE(env.interpreters[2].source == "PATH");
}

TEST_CASE("agent env: `#!/usr/bin/env python3` names no interpreter", "[agent_env]") {
  hb::test::temp_dir t;
  make_root(t.file("cwd"));
  write(t.file("bin/hermes"), "#!/usr/bin/env python3\n", true);
  auto env = find_agent_env(inputs(t));
  REQUIRE(env.interpreters.empty());
}

TEST_CASE("agent env: --agent-python is the only candidate", "[agent_env]") {
  hb::test::temp_dir t;
  make_root(t.file("cwd"));
  write(t.file("cwd/venv/bin/python3"), "", true);
  write(t.file("mine/python"), "", true);
  auto in = inputs(t);
  in.python = t.file("mine/python");
  auto env = find_agent_env(in);
  REQUIRE(env.interpreters.size() == 1);
  REQUIRE(env.interpreters[0].argv[0] == t.file("mine/python"));
  REQUIRE(env.interpreters[0].source == "--agent-python");
}

TEST_CASE("agent env: no root anywhere lists every place tried", "[agent_env]") {
  hb::test::temp_dir t;
  auto env = find_agent_env(inputs(t));
  REQUIRE(!env.agent_root);
  REQUIRE(std::find(env.roots_tried.begin(), env.roots_tried.end(), t.file("home/.hermes/hermes-agent")) !=
          env.roots_tried.end());
  REQUIRE(std::find(env.roots_tried.begin(), env.roots_tried.end(), t.file("usr/local/lib/hermes-agent")) !=
          env.roots_tried.end());
  auto chosen = choose_interpreter(env);
  REQUIRE(!chosen.python);
  REQUIRE(chosen.error.find("run_agent.py") != std::string::npos);
  REQUIRE(chosen.error.find(t.file("home/.hermes/hermes-agent")) != std::string::npos);
}

TEST_CASE("agent env: the probe imports the agent and says what it found", "[agent_env]") {
  hb::test::temp_dir t;
  make_importable_root(t.file("root"));
  write(t.file("root/pyproject.toml"), "[project]\nname = \"hermes-agent\"\nversion = \"0.21.0\"\n");
  interpreter py{{"/usr/bin/python3"}, "PATH"};
  auto probe = probe_interpreter(py, t.file("root"));
  REQUIRE(probe.ran);
  REQUIRE(probe.problem.empty());
  REQUIRE(probe.imports_agent);
  REQUIRE(probe.version.rfind("3.", 0) == 0);
  REQUIRE(probe.agent_version == "0.21.0");
  auto none = probe_interpreter(py, t.file("elsewhere"));
  REQUIRE(none.problem == "ModuleNotFoundError: No module named 'run_agent'");
  auto broken = probe_interpreter(interpreter{{t.file("no/such/python")}, "venv"}, t.file("root"));
  REQUIRE(!broken.ran);
  REQUIRE(!broken.problem.empty());
  // A broken venv python is skipped for the next candidate, and named in the error when none works.
  agent_env env;
  env.agent_root = t.file("root");
  env.interpreters = {interpreter{{t.file("no/such/python")}, "venv"}, py};
  auto chosen = choose_interpreter(env);
  REQUIRE(chosen.python);
  REQUIRE(chosen.python->argv[0] == "/usr/bin/python3");
  env.interpreters.pop_back();
  chosen = choose_interpreter(env);
  REQUIRE(!chosen.python);
  REQUIRE(chosen.error.find(t.file("no/such/python")) != std::string::npos);
}

TEST_CASE("agent env: an interpreter that finds run_agent but not its dependencies is refused", "[agent_env]") {
  hb::test::temp_dir t;
  // Like the real agent's httpx: importable only where its dependencies were installed.
  make_importable_root(t.file("root"), "import hb_missing_dependency\n");
  write(t.file("deps/hb_missing_dependency.py"), "");
  write(t.file("bin/python3"), "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", true);
  write(t.file("good/python3"),
        "#!/bin/sh\nPYTHONPATH=" + t.file("deps") + " exec /usr/bin/python3 \"$@\"\n", true);
  write(t.file("later/python3"), "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", true);
  agent_env env;
  env.agent_root = t.file("root");
  env.interpreters = {interpreter{{t.file("bin/python3")}, "PATH"}, interpreter{{t.file("good/python3")}, "PATH"},
                      interpreter{{t.file("later/python3")}, "system"}};
  auto chosen = choose_interpreter(env);
  REQUIRE(chosen.python);
  REQUIRE(chosen.python->argv[0] == t.file("good/python3"));
  REQUIRE(chosen.candidates.size() == 3);
  REQUIRE(!chosen.candidates[0].ok);
  REQUIRE(chosen.candidates[0].reason == "ModuleNotFoundError: No module named 'hb_missing_dependency'");
  REQUIRE(chosen.candidates[1].ok);
  REQUIRE(chosen.candidates[1].reason.rfind("imports run_agent.AIAgent (Python 3.", 0) == 0);
  REQUIRE(!chosen.candidates[2].probed);
  REQUIRE(chosen.candidates[2].reason == "not probed: " + t.file("good/python3") + " was taken first");
  auto json = chosen.agent_json();
  REQUIRE(json.find("\"candidates\": [{\"python\": \"" + t.file("bin/python3") + "\", \"source\": \"PATH\", "
                    "\"ok\": false, \"reason\": \"ModuleNotFoundError") != std::string::npos);
  REQUIRE(json.find("\"ok\": null, \"reason\": \"not probed") != std::string::npos);
}

TEST_CASE("agent env: the model client the agent declares and imports lazily must import too", "[agent_env]") {
  hb::test::temp_dir t;
  make_importable_root(t.file("root"));
  write(t.file("root/pyproject.toml"), "[project]\nname = \"hermes-agent\"\nversion = \"0.20.3\"\n"
                                       "dependencies = [\"openai==2.24.0\", \"python-dotenv==1.2.2\"]\n");
  // An openai that cannot import what it needs, and one that can (stubs ahead of any installed one).
  write(t.file("broken/openai/__init__.py"), "import hb_missing_httpx\n");
  write(t.file("fine/openai/__init__.py"), "");
  for (auto which : {"broken", "fine"})
    write(t.file(std::string(which) + "/python3"),
          "#!/bin/sh\nPYTHONPATH=" + t.file(which) + " exec /usr/bin/python3 \"$@\"\n", true);
  auto broken = probe_interpreter(interpreter{{t.file("broken/python3")}, "PATH"}, t.file("root"));
  REQUIRE(broken.problem == "ModuleNotFoundError: No module named 'hb_missing_httpx'");
  auto fine = probe_interpreter(interpreter{{t.file("fine/python3")}, "PATH"}, t.file("root"));
  REQUIRE(fine.problem.empty());
  REQUIRE(fine.agent_version == "0.20.3");
}

TEST_CASE("agent env: a probe that hangs or an old Python is refused with why", "[agent_env]") {
  hb::test::temp_dir t;
  make_importable_root(t.file("root"));
  write(t.file("slow/python3"), "#!/bin/sh\nexec sleep 30\n", true);
  write(t.file("old/python3"),
        "#!/bin/sh\necho '{\"executable\": \"/old/python3\", \"version\": \"3.10.12\", \"imports_agent\": true}'\n",
        true);
  auto slow = probe_interpreter(interpreter{{t.file("slow/python3")}, "PATH"}, t.file("root"),
                                std::chrono::milliseconds(300));
  REQUIRE(slow.problem == "timed out after 0.3 s");
  auto old = probe_interpreter(interpreter{{t.file("old/python3")}, "PATH"}, t.file("root"));
  REQUIRE(old.problem == "Python 3.10.12 is too old (the bridge needs 3.11 or newer)");
}

TEST_CASE("agent env: a pyenv shim runs as the interpreter behind it", "[agent_env]") {
  hb::test::temp_dir t;
  make_importable_root(t.file("root"));
  write(t.file("home/.pyenv/shims/python3"), "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n", true);
  auto in = inputs(t);
  in.agent_root = t.file("root");
  in.path = t.file("home/.pyenv/shims");
  auto env = find_agent_env(in);
  REQUIRE(env.interpreters.size() == 1);
  REQUIRE(env.interpreters[0].source == "pyenv shim");
  auto chosen = choose_interpreter(env);
  REQUIRE(chosen.python);
  REQUIRE(chosen.python->argv == std::vector<std::string>{"/usr/bin/python3"});
  REQUIRE(chosen.candidates[0].reason.rfind("pyenv shim for /usr/bin/python3: imports run_agent.AIAgent", 0) == 0);
}

TEST_CASE("agent env: every python3 then python on PATH, once each, the system's, the current directory's last",
          "[agent_env]") {
  hb::test::temp_dir t;
  make_root(t.file("root"));
  write(t.file("a/python3"), "", true);
  write(t.file("b/python3"), "", true);
  write(t.file("b/python"), "", true);
  write(t.file("cwd/python3"), "", true);
  write(t.file("usr/bin/python3"), "", true);
  fs::create_directories(t.file("c"));
  fs::create_symlink(t.file("a/python3"), t.file("c/python")); // the same interpreter under another name
  auto in = inputs(t);
  in.agent_root = t.file("root");
  in.path = t.file("a") + "::" + t.file("b") + ":" + t.file("c");
  in.python_env = t.file("b/python");
  auto env = find_agent_env(in);
  std::vector<std::string> pythons, sources;
  for (const auto& i : env.interpreters) {
    pythons.push_back(i.display());
    sources.push_back(i.source);
  }
  REQUIRE(pythons == std::vector<std::string>{t.file("b/python"), t.file("a/python3"), t.file("b/python3"),
                                              t.file("usr/bin/python3"), t.file("cwd/python3")});
  REQUIRE(sources == std::vector<std::string>{"$PYTHON", "PATH", "PATH", "system", "current directory"});
}
