// The log readers: answers to get_output / get_result from committed data
// only, each reader on its own read-only connection; finished runs read
// twice are kept in memory (storage/finished_runs.hpp).
#include "actors/daemon_log.hpp"
#include "actors/errors.hpp"
#include "actors/log_actors.hpp"
#include "actors/log_messages.hpp"
#include "actors/responses.hpp"
#include "actors/test_faults.hpp"
#include "protocol/wire_error.hpp"
#include "storage/finished_runs.hpp"
#include "storage/log_reader.hpp"

#include <caf/all.hpp>

#include <cstdint>

namespace hb::actors {

namespace {

struct reader_state {
  std::string path;
  std::unique_ptr<storage::log_reader> log;
  bool open_failed = false; // logged once, until an open works again
  std::shared_ptr<storage::finished_run_cache> finished;
  static inline const char* name = "log_reader";
};

using reader_actor = caf::stateful_actor<reader_state>;

// A reader that could not open the log (a file briefly unreadable, too many
// open files) tries again at each request instead of failing every read for
// the rest of the daemon's life.
void open_log(reader_actor* self) {
  auto& st = self->state;
  if (st.log)
    return;
  try {
    if (test_fault_enabled("reader_open_fails") && !st.open_failed)
      throw std::runtime_error("test fault: reader_open_fails");
    st.log = std::make_unique<storage::log_reader>(st.path);
  } catch (const std::exception& e) {
    if (!st.open_failed)
      log_event(log_level::error, "log.reader_open_failed", e.what(), {{"then", "retrying at the next read"}});
    st.open_failed = true;
    return;
  }
  if (st.open_failed)
    log_event(log_level::warn, "log.reader_opened", "a log reader opened the event log after failing to");
  st.open_failed = false;
}

// A run's answer as `encode` writes it, with where the reader stopped; an
// unknown or pruned run, or a log that cannot be read, is an error.
template <class Encode>
expected<output_reply> answer_from_log(reader_actor* self, const std::string& run_id, int64_t cursor,
                                       int64_t delta_from, int64_t event_from, size_t max_bytes, Encode encode) {
  try {
    open_log(self);
    if (!self->state.log)
      throw std::runtime_error("event log is not open for reading");
    auto snap = self->state.log->read_run(run_id, delta_from, event_from, max_bytes);
    if (!snap)
      return make_error(errc::not_found, "unknown run: " + run_id);
    if (snap->pruned_at)
      return make_error(errc::pruned, "run " + run_id +
                                        " was pruned from the event log by its retention limits "
                                        "(--retain-days / --retain-mb); its output is gone");
    output_reply out;
    out.line = encode(*snap);
    out.cursor = snap->delta_count;
    out.event_cursor = snap->event_count;
    out.done = snap->status != "running";
    out.more = snap->cut;
    out.news = out.done || snap->event_count > snap->event_from || snap->delta_count > cursor;
    return out;
  } catch (const std::exception& e) {
    return make_error(errc::failed, std::string("event log read failed: ") + e.what());
  }
}

size_t text_bytes(const std::vector<std::string>& texts) {
  size_t n = 0;
  for (const auto& t : texts)
    n += t.size();
  return n;
}

// Keeps a finished run read a second time; a read that skipped its earlier
// deltas or events is completed once (later reads of it are all from memory).
// A run the cache would not keep is never assembled: for a 100 MB run that
// was several copies of its output at once, only to be thrown away.
void keep_finished(reader_actor* self, const storage::run_snapshot& run) {
  auto& cache = self->state.finished;
  if (!cache || run.status == "running" || run.pruned_at || !cache->read_again(run.run_id))
    return;
  // The text counts twice (joined and quoted); the result usually holds it too.
  auto size = [](const storage::run_snapshot& r) {
    return 2 * text_bytes(r.deltas) + text_bytes(r.events) + (r.result ? r.result->size() : 0);
  };
  if (!cache->would_keep(size(run)))
    return;
  if (run.delta_from == 0 && run.event_from == 0)
    return cache->put(storage::finished_run::from(run));
  auto whole = self->state.log->read_run(run.run_id, 0, 0);
  if (whole && !whole->pruned_at && whole->status != "running" && cache->would_keep(size(*whole)))
    cache->put(storage::finished_run::from(*whole));
}

caf::behavior log_reader_actor(reader_actor* self, std::string path,
                               std::shared_ptr<storage::finished_run_cache> finished) {
  self->state.finished = std::move(finished);
  self->state.path = std::move(path);
  open_log(self);
  return {
    [=](const output_query& q) {
      auto& st = self->state;
      const auto& run_id = q.run_id;
      int64_t cursor = q.cursor, event_cursor = q.event_cursor;
      bool include_output = q.include_output;
      expected<output_reply> out{output_reply{}};
      if (auto run = st.finished ? st.finished->find(run_id) : nullptr) {
        out->line = get_output_line(*run, cursor, event_cursor, include_output);
        out->cursor = run->delta_count();
        out->event_cursor = run->event_count();
      } else {
        size_t limit = q.max_bytes > 0 ? static_cast<size_t>(q.max_bytes) : SIZE_MAX;
        out = answer_from_log(self, run_id, cursor, include_output ? 0 : cursor, event_cursor, limit,
                              [&](const storage::run_snapshot& run) {
                                keep_finished(self, run);
                                return get_output_line(run, cursor, include_output);
                              });
      }
      if (!out)
        return caf::make_message(std::move(out.error())); // the asker's error handler takes it
      note_output_moved(out->line.size());
      // A message built here takes the reply by move; a returned value was
      // copied into one (a done run's line holds its result: 200 MB for a
      // 100 MB run).
      return caf::make_message(std::move(*out));
    },
    [=](const result_query& q) {
      auto out = answer_from_log(self, q.run_id, 0, 0, 0, SIZE_MAX, get_result_line);
      if (!out)
        return caf::make_message(std::move(out.error()));
      note_output_moved(out->line.size());
      return caf::make_message(std::move(out->line)); // (see above)
    },
    [=](const history_query& q) -> caf::result<std::string> {
      try {
        open_log(self);
        if (!self->state.log)
          throw std::runtime_error("event log is not open for reading");
        return self->state.log->read_history(q.session_id);
      } catch (const std::exception& e) {
        return caf::make_error(caf::sec::runtime_error, e.what());
      }
    },
  };
}

} // namespace

caf::actor spawn_log_reader(caf::actor_system& sys, const std::string& db_path,
                            std::shared_ptr<storage::finished_run_cache> finished, spawn_mode mode) {
  if (mode == spawn_mode::scheduled)
    return sys.spawn(log_reader_actor, db_path, std::move(finished));
  return sys.spawn<caf::detached>(log_reader_actor, db_path, std::move(finished));
}

} // namespace hb::actors
