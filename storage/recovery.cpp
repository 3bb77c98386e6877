#include "storage/recovery.hpp"

#include "protocol/json_text.hpp"
#include "storage/cut_turn.hpp"
#include "storage/run_events.hpp"

#include <vector>

namespace hb::storage {

using protocol::json;

const char* const restart_reason = "hermes-bridge restarted while this run was live";

namespace {

// A question the log shows asked and not yet settled: its requested event.
struct open_question {
  std::string topic; // "approval", "compression" or "clarify"
  std::string id;
  json requested;
  double at = 0; // when it was announced
};

const char* id_key_of(const std::string& topic) {
  return topic == "compression" ? "request_id" : topic == "clarify" ? "clarify_id" : "approval_id";
}

// In the order they were asked.
std::vector<open_question> find_open_questions(SQLite::Database& db, int64_t run_no) {
  std::vector<open_question> open;
  SQLite::Statement scan(db,
    "SELECT body, at FROM events WHERE run_no=? AND (body LIKE '{\"event\": \"approval.%'"
    " OR body LIKE '{\"event\": \"bridge.compression.%' OR body LIKE '{\"event\": \"clarify.%')"
    " ORDER BY seq");
  scan.bind(1, run_no);
  auto settle = [&](const std::string& topic, const json& ev) {
    std::string id = ev.value(id_key_of(topic), "");
    for (auto it = open.begin(); it != open.end(); ++it)
      if (it->topic == topic && it->id == id) {
        open.erase(it);
        return;
      }
  };
  while (scan.executeStep()) {
    json ev = json::parse(scan.getColumn(0).getString(), nullptr, false);
    if (!ev.is_object())
      continue;
    std::string name = ev.value("event", "");
    if (name == "approval.requested" || name == "bridge.compression.requested" || name == "clarify.requested") {
      std::string topic = name == "approval.requested" ? "approval" : name == "clarify.requested" ? "clarify" : "compression";
      std::string id = ev.value(id_key_of(topic), "");
      open.push_back(open_question{std::move(topic), std::move(id), std::move(ev), scan.getColumn(1).getDouble()});
    } else if (name == "approval.resolved") {
      settle("approval", ev);
    } else if (name == "bridge.compression.completed" || name == "bridge.compression.failed") {
      settle("compression", ev);
    } else if (name == "clarify.resolved") {
      settle("clarify", ev);
    }
  }
  return open;
}

// The fields a question's requested event was announced with, as the agent
// sent them: without the event's name and id, without what the daemon
// withholds from clients (a gateway approval's routing), and without its
// deadline, which is how long it had left when asked, not which question it is
// (a TUI's clarify panel counts down).
json asked_fields(json fields, const std::string& topic) {
  if (!fields.is_object())
    return json::object();
  fields.erase("event");
  fields.erase(id_key_of(topic));
  fields.erase("agent_request_id");
  fields.erase("bridge_token");
  fields.erase("timeout_ms");
  return fields;
}

std::string topic_of(const std::string& kind) { return kind == "gateway" ? "approval" : kind; }

} // namespace

std::vector<std::string> settle_open_questions(SQLite::Database& db, int64_t run_no, recovery_report* report,
                                               const std::set<std::string>& still_open) {
  std::vector<std::string> events;
  for (const auto& q : find_open_questions(db, run_no)) {
    if (still_open.count(q.id))
      continue;
    json ev;
    if (q.topic == "approval") {
      ev["event"] = "approval.resolved";
      ev["approval_id"] = q.id;
      ev["choice"] = "deny";
      ev["reason"] = "daemon restarted";
      if (report)
        ++report->approvals_denied;
    } else if (q.topic == "compression") {
      ev["event"] = "bridge.compression.failed";
      ev["request_id"] = q.id;
      ev["message_count"] = q.requested.value("message_count", json());
      ev["approx_tokens"] = q.requested.value("approx_tokens", json());
      ev["error"] = "hermes-bridge restarted before the compression reply";
      if (report)
        ++report->compressions_failed;
    } else {
      ev["event"] = "clarify.resolved";
      ev["clarify_id"] = q.id;
      ev["response"] = nullptr;
      ev["reason"] = "daemon restarted";
    }
    events.push_back(protocol::dumps(ev));
  }
  return events;
}

std::vector<reopened_question> match_waiting_questions(SQLite::Database& db, int64_t run_no,
                                                       const std::vector<waiting_question>& waiting) {
  std::vector<reopened_question> matched;
  std::vector<open_question> open = find_open_questions(db, run_no);
  for (const auto& w : waiting) {
    json asked = json::parse(w.request, nullptr, false);
    std::string topic = topic_of(w.kind);
    for (auto it = open.begin(); it != open.end(); ++it) {
      if (it->topic == topic && asked_fields(it->requested, topic) == asked_fields(asked, topic)) {
        auto timeout_ms = it->requested.value("timeout_ms", json());
        double due_at = timeout_ms.is_number() ? it->at + timeout_ms.get<double>() / 1000 : 0;
        matched.push_back(reopened_question{w.ask, it->id, due_at});
        open.erase(it);
        break;
      }
    }
  }
  return matched;
}

uint64_t logged_host_seq(SQLite::Database& db, int64_t run_no) {
  // A host sends a run's deltas in its own order, so their last row holds
  // the highest (and only that row is read: host_seq follows the text, which
  // a big row keeps on overflow pages). Events are scanned: the daemon's own
  // (settled questions) carry 0 and may come last.
  SQLite::Statement q(db, "SELECT max((SELECT host_seq FROM runs WHERE run_no=?1),"
                          " coalesce((SELECT max(host_seq) FROM events WHERE run_no=?1), 0),"
                          " coalesce((SELECT host_seq FROM deltas WHERE run_no=?1 ORDER BY seq DESC LIMIT 1), 0))");
  q.bind(1, run_no);
  q.executeStep();
  return static_cast<uint64_t>(q.getColumn(0).getInt64());
}

recovery_report recover_open_runs(SQLite::Database& db, double now, const std::set<std::string>& continuing,
                                  std::map<std::string, continuing_run>* kept) {
  recovery_report report;
  SQLite::Transaction tx(db);
  std::vector<int64_t> live;
  {
    SQLite::Statement q(db, "SELECT run_no, run_id, session_id FROM runs WHERE status='running' ORDER BY run_no");
    while (q.executeStep()) {
      std::string run_id = q.getColumn(1).getString();
      if (continuing.count(run_id) == 0) {
        live.push_back(q.getColumn(0).getInt64());
      } else if (kept) {
        (*kept)[run_id] = continuing_run{q.getColumn(2).getString(), logged_host_seq(db, q.getColumn(0).getInt64())};
      }
    }
  }
  run_events events(db);
  SQLite::Statement append(db, "INSERT INTO events(run_no, seq, at, body) VALUES(?, ?, ?, ?)");
  SQLite::Statement finish(db,
    "UPDATE runs SET status='interrupted', error=?, ended_at=?, result=? WHERE run_no=?");
  for (int64_t run_no : live) {
    int64_t seq = events.count(run_no);
    auto add = [&](const std::string& body) {
      append.bind(1, run_no);
      append.bind(2, seq++);
      append.bind(3, now);
      append.bind(4, body);
      append.exec();
      append.reset();
    };
    for (const auto& body : settle_open_questions(db, run_no, &report))
      add(body);
    json recovered;
    recovered["event"] = "bridge.recovered";
    recovered["status"] = "interrupted";
    recovered["reason"] = restart_reason;
    add(protocol::dumps(recovered));
    json result;
    result["interrupted"] = true;
    result["error"] = restart_reason;
    finish.bind(1, restart_reason);
    finish.bind(2, now);
    finish.bind(3, protocol::dumps(result));
    finish.bind(4, run_no);
    finish.exec();
    finish.reset();
    ++report.runs_interrupted;
    if (keep_cut_turn(db, run_no, "hermes-bridge restarted") > 0)
      ++report.turns_kept;
  }
  tx.commit();
  return report;
}

std::string check_integrity(SQLite::Database& db) {
  std::string verdict;
  try {
    SQLite::Statement q(db, "PRAGMA quick_check");
    while (q.executeStep()) {
      if (!verdict.empty())
        verdict += "; ";
      verdict += q.getColumn(0).getString();
    }
  } catch (const SQLite::Exception& e) {
    // Some damage stops the check itself: that is a verdict too.
    verdict += (verdict.empty() ? "" : "; ") + std::string(e.what());
  }
  return verdict;
}

std::set<std::string> open_question_ids(SQLite::Database& db, const std::set<std::string>& run_ids) {
  std::set<std::string> ids;
  SQLite::Statement find(db, "SELECT run_no FROM runs WHERE run_id=?");
  for (const auto& run : run_ids) {
    find.reset();
    find.bind(1, run);
    if (!find.executeStep())
      continue;
    for (auto& q : find_open_questions(db, find.getColumn(0).getInt64()))
      ids.insert(std::move(q.id));
  }
  return ids;
}

} // namespace hb::storage
