// Opening the event log for a serving daemon: schema, integrity check,
// recovery of what the last run left open, and the sessions to bring back.
#pragma once

#include "storage/log_writer.hpp"
#include "storage/recovery.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hb::storage {

struct startup_options {
  std::string synchronous = "NORMAL";
  bool skip_integrity_check = false;
  // Logs up to this size are checked before serving; larger ones afterwards,
  // so start-up time does not grow with the log.
  uint64_t check_before_serving_max_bytes = uint64_t{256} << 20;
  // Runs whose turns go on in workers that outlived the last daemon: not
  // interrupted if the log shows them live (they come back in `continuing`).
  std::set<std::string> continuing;
};

struct opened_log {
  std::shared_ptr<log_writer> writer;
  std::vector<session_row> sessions; // not destroyed, history not loaded
  recovery_report recovered;
  std::map<std::string, continuing_run> continuing; // run id -> its session and host_seq
  bool check_after_serving = false;
  double seconds = 0;
};

// Throws std::runtime_error, with what to do about it, for a damaged or
// newer log.
opened_log open_for_serving(const std::string& path, const startup_options& options, double now);

// Runs the integrity check on its own read-only connection and thread;
// `report` receives the verdict ("ok" or the damage). A verdict other than
// "ok" is also kept for damage_found_after_start().
void check_in_background(const std::string& path, void (*report)(const std::string& path,
                                                                 const std::string& verdict));

// What the background check found wrong with this process's log (damage,
// or why the check could not run), for `health`; nothing while it has not
// finished or found the log sound. Safe from any thread.
struct found_damage {
  std::string reason;
  double at = 0; // wall clock seconds
};
std::optional<found_damage> damage_found_after_start();

std::string damage_advice(const std::string& path, const std::string& verdict);

} // namespace hb::storage
