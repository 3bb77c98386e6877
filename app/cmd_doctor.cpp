// `hermes-bridge doctor`: looks at everything a daemon started with the same
// options would depend on and says, a line each, what is fine, what is
// doubtful and what stops it serving, with what to do. Exit code 1 when
// something would stop `serve` (or leave it with no agent to host).
#include "app/build_info.hpp"
#include "app/doctor_checks.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"
#include "bridge/tmux/native_session.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/json_text.hpp"

#include <iostream>
#include <memory>

namespace hb::app {

namespace {

struct doctor_flags {
  std::string agent_root, agent_python, endpoint = protocol::default_endpoint(), token_file;
  std::string hermes_home = "~/.hermes", db, hermes_bin = "hermes", native_dir = bridge::default_native_runtime_dir();
  bool json = false;
};

std::string check_json(const check_result& c) {
  protocol::object_writer w;
  w.str("check", c.check).str("status", status_name(c.status)).str("detail", c.detail);
  if (c.fix.empty())
    w.null("fix");
  else
    w.str("fix", c.fix);
  return w.finish();
}

int doctor(const doctor_flags& f) {
  doctor_inputs in;
  in.agent_root = f.agent_root;
  in.agent_python = f.agent_python;
  in.hermes_home = absolute_path(f.hermes_home);
  in.db = f.db.empty() ? in.hermes_home + "/hermes-bridge/events.db" : absolute_path(f.db);
  in.endpoint = f.endpoint;
  in.token_file = f.token_file;
  in.hermes_bin = f.hermes_bin;
  in.native_dir = absolute_path(f.native_dir);

  check_list checks;
  check_agent(in, checks);
  check_hermes_home(in, checks);
  check_event_log(in, checks);
  check_endpoint(in, checks);
  check_runtime_dirs(in, checks);
  check_native(in, checks);
  check_studio(in, checks);

  size_t failed = 0, warned = 0;
  for (const auto& c : checks) {
    failed += c.status == check_status::fail;
    warned += c.status == check_status::warn;
  }
  if (f.json) {
    std::string list = "[";
    for (size_t i = 0; i < checks.size(); ++i)
      list += (i ? ", " : "") + check_json(checks[i]);
    list += "]";
    std::cout << protocol::object_writer{}
                   .boolean("ok", failed == 0)
                   .integer("failed", static_cast<int64_t>(failed))
                   .integer("warnings", static_cast<int64_t>(warned))
                   .raw("version", build_info_json())
                   .raw("checks", list)
                   .finish()
              << std::endl;
  } else {
    auto b = this_build();
    std::cout << "hermes-bridge " << b.version << " (commit " << b.commit << ")\n";
    for (const auto& c : checks) {
      std::string label = status_name(c.status);
      label.resize(5, ' ');
      std::cout << label << c.check << ": " << c.detail << "\n";
      if (!c.fix.empty())
        std::cout << "     " << (c.status == check_status::ok ? "how: " : "fix: ") << c.fix << "\n";
    }
    if (failed)
      std::cout << failed << " problem(s) stop serving; " << warned << " warning(s)\n";
    else
      std::cout << "ready to serve; " << warned << " warning(s)\n";
    std::cout << std::flush;
  }
  return failed ? exit_failure : exit_ok;
}

} // namespace

void add_doctor_command(CLI::App& app, std::function<int()>& chosen) {
  auto f = std::make_shared<doctor_flags>();
  auto* sub = app.add_subcommand("doctor", "Check a set-up (agent, interpreters, log, socket, tmux) and say "
                                           "what to fix.");
  sub->allow_extras();
  add_value(sub, "--agent-root", f->agent_root, "as serve's --agent-root")->envname("HERMES_AGENT_ROOT");
  add_value(sub, "--agent-python", f->agent_python, "as serve's --agent-python")->envname("HERMES_AGENT_PYTHON");
  add_value(sub, "--endpoint", f->endpoint, "as serve's --endpoint")->envname("HERMES_AGENT_BRIDGE_ENDPOINT");
  add_value(sub, "--token-file", f->token_file, "as serve's --token-file")->envname("HERMES_BRIDGE_TOKEN_FILE");
  add_value(sub, "--hermes-home", f->hermes_home, "as serve's --hermes-home")->envname("HERMES_HOME");
  add_value(sub, "--db", f->db, "as serve's --db")->envname("HERMES_BRIDGE_DB");
  add_value(sub, "--hermes-bin", f->hermes_bin, "as serve's --hermes-bin")->envname("HERMES_BIN");
  add_value(sub, "--native-dir", f->native_dir, "as serve's --native-dir")->envname("HERMES_BRIDGE_NATIVE_DIR");
  sub->add_flag("--json", f->json,
                "one JSON object: ok, failed, warnings, version, checks [{check, status, detail, fix}]");
  sub->footer("Each line: ok, warn (works, but look at it) or fail (serve would refuse, or host no agent),\n"
              "what was found and the fix. Only looks: creates nothing, starts no daemon, binds nothing.\n"
              "Exit codes: 0 nothing fails (warnings allowed), 1 something fails, 2 bad usage.");
  on_chosen(sub, chosen, "doctor", [f] { return doctor(*f); });
}

} // namespace hb::app
