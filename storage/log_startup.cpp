#include "storage/log_startup.hpp"

#include "storage/log_reader.hpp"
#include "storage/private_files.hpp"

#include <chrono>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace hb::storage {

std::string damage_advice(const std::string& path, const std::string& verdict) {
  return "event log " + path + " is damaged: " + verdict +
         "\n  Move it aside (and recover what you can with: sqlite3 " + path +
         " .recover), or start with --skip-integrity-check to serve it as it is.";
}

opened_log open_for_serving(const std::string& path, const startup_options& options, double now) {
  auto started = std::chrono::steady_clock::now();
  make_private_dirs(std::filesystem::path(path).parent_path().string());
  opened_log out;
  writer_options writing;
  writing.synchronous = options.synchronous;
  writing.checkpoint_on_commit = false; // the daemon's checkpointer does it
  out.writer = std::make_shared<log_writer>(path, writing);
  auto& db = out.writer->database();
  if (!options.skip_integrity_check) {
    if (std::filesystem::file_size(path) > options.check_before_serving_max_bytes) {
      out.check_after_serving = true;
    } else if (std::string verdict = check_integrity(db); verdict != "ok") {
      throw std::runtime_error(damage_advice(path, verdict));
    }
  }
  out.recovered = recover_open_runs(db, now, options.continuing, &out.continuing);
  out.sessions = load_sessions(db);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return out;
}

namespace {

std::mutex damage_mu;
std::optional<found_damage> damage_found; // guarded by damage_mu

void keep_damage(const std::string& reason) {
  double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::lock_guard<std::mutex> lock(damage_mu);
  damage_found = found_damage{reason, now};
}

} // namespace

std::optional<found_damage> damage_found_after_start() {
  std::lock_guard<std::mutex> lock(damage_mu);
  return damage_found;
}

void check_in_background(const std::string& path,
                         void (*report)(const std::string& path, const std::string& verdict)) {
  std::thread([path, report] {
    std::string verdict;
    try {
      SQLite::Database db(path, SQLite::OPEN_READONLY);
      verdict = check_integrity(db);
      if (verdict != "ok")
        keep_damage("the integrity check after start found the event log damaged: " + verdict);
    } catch (const std::exception& e) {
      verdict = std::string("the check could not run: ") + e.what();
      keep_damage(std::string("the integrity check after start could not run: ") + e.what());
    }
    report(path, verdict);
  }).detach();
}

} // namespace hb::storage
