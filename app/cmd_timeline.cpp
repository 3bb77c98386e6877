// `hermes-bridge timeline RUN_ID -o run.html`: a run drawn on a time axis as
// one self-contained HTML page, from the event log (read-only). The page is
// app/timeline_html.cpp + app/timeline_page.cpp; this file reads the run
// and writes the file.
#include "app/log_query.hpp"
#include "app/private_output.hpp"
#include "app/timeline_html.hpp"
#include "app/tool_commands.hpp"
#include "app/tool_support.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

namespace hb::app {

using namespace hb::storage; // the log's rows

namespace {

struct timeline_flags {
  log_location where;
  std::string run_id, output;
};

int timeline(const timeline_flags& f) {
  if (f.run_id.empty())
    throw tool_error(exit_usage, "which run? give its RUN_ID (hermes-bridge runs lists them)");
  if (f.output.empty())
    throw tool_error(exit_usage, "where to? give -o FILE.html (or -o - for stdout)");

  log_query log(log_path(f.where));
  auto snapshot = log.snapshot();
  run_row run = require_readable_run(log, f.run_id);
  std::vector<seq_row> events;
  log.each_event(run.run_no, [&](const seq_row& r) { events.push_back(r); });
  snapshot.reset();

  timeline_data data = build_timeline(run, events);
  private_output page(f.output);
  page.write(render_timeline_html(data));
  page.finish();
  if (f.output != "-")
    std::cerr << "wrote the timeline of run " << run.run_id << " (" << data.tools.size() << " tool calls, "
              << data.approvals.size() << " approvals, " << data.compressions.size() << " compressions, "
              << data.delta_times.size() << " deltas) to " << f.output << std::endl;
  return exit_ok;
}

} // namespace

void add_timeline_command(CLI::App& app, std::function<int()>& chosen) {
  auto f = std::make_shared<timeline_flags>();
  auto* sub = app.add_subcommand("timeline", "Draw a run on a time axis as one self-contained HTML page "
                                             "(read-only on the log).");
  sub->allow_extras();
  sub->add_option("RUN_ID", f->run_id, "the run (hermes-bridge runs lists them)");
  add_value(sub, "-o,--output", f->output, "the HTML file to write, or - for stdout (required)");
  add_log_options(sub, f->where);
  sub->footer(std::string("The page shows the run's id, session, status and duration, then on one time axis:\n"
                          "periods of model streaming, each tool call from tool.started to tool.completed,\n"
                          "approval waits with their answers, compressions with their outcome, and deltas\n"
                          "per second; a table below lists every bar with its details (tool arguments,\n"
                          "results). Styles and script are inline: the page loads nothing from anywhere.\n"
                          "A run still going is drawn as far as the log holds it.\n") +
              exit_codes_footer);
  on_chosen(sub, chosen, "timeline", [f] { return timeline(*f); });
}

} // namespace hb::app
