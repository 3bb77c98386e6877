#include "storage/run_events.hpp"

#include "protocol/json_text.hpp"
#include "storage/schema.hpp"

namespace hb::storage {

namespace {

constexpr std::string_view stream_delta_prefix = "{\"event\": \"stream.delta\", \"delta\": ";

// "This row is not a delta's event", for rows from before version 5.
const std::string not_a_delta_row = "NOT " HB_STREAM_DELTA_ROW;

} // namespace

void stream_delta_body(std::string& body, std::string_view text) {
  body.assign(stream_delta_prefix);
  protocol::append_quoted(body, text);
  body += '}';
}

bool is_stream_delta_body(std::string_view body) {
  return body.substr(0, stream_delta_prefix.size()) == stream_delta_prefix;
}

run_events::run_events(SQLite::Database& db)
  : rows_before_(db, "SELECT count(*) FROM events WHERE run_no=? AND seq<? AND " + not_a_delta_row),
    count_(db, "SELECT count(*) FROM events WHERE run_no=? AND " + not_a_delta_row),
    events_(db, "SELECT seq, at, body FROM events WHERE run_no=? AND seq>=? ORDER BY seq"),
    deltas_(db) {}

int64_t run_events::count(int64_t run_no) { return integer_for_run(count_, run_no) + deltas_.count(run_no); }

void run_events::open(int64_t run_no, int64_t from) {
  rows_before_.reset();
  rows_before_.bind(1, run_no);
  rows_before_.bind(2, from);
  rows_before_.executeStep();
  int64_t first_delta = from - rows_before_.getColumn(0).getInt64();
  rows_before_.reset();

  events_.reset();
  events_.bind(1, run_no);
  events_.bind(2, from);
  deltas_.open(run_no, first_delta);
  seq_ = from - 1;
  step_events();
  step_deltas();
}

void run_events::close() {
  events_.reset();
  deltas_.close();
  event_ready_ = delta_ready_ = false;
}

void run_events::step_events() {
  event_ready_ = events_.executeStep();
  if (event_ready_)
    event_seq_ = events_.getColumn(0).getInt64();
}

void run_events::step_deltas() { delta_ready_ = deltas_.next(); }

bool run_events::next() {
  int64_t slot = seq_ + 1;
  if (event_ready_ && (event_seq_ == slot || !delta_ready_)) {
    // (Past the last delta, a row after free seqs is a damaged log's: it
    // still comes, at its own seq; `verify` names the gap.)
    seq_ = event_seq_;
    at_ = events_.getColumn(1).getDouble();
    body_ = events_.getColumn(2).getString();
    delta_ = is_stream_delta_body(body_);
    if (delta_ && delta_ready_)
      step_deltas(); // a row from before version 5 stands for its delta
    step_events();
    return true;
  }
  if (!delta_ready_)
    return false;
  seq_ = slot;
  at_ = deltas_.at();
  stream_delta_body(body_, deltas_.text());
  delta_ = true;
  step_deltas();
  return true;
}

} // namespace hb::storage
