#include "storage/recovery.hpp"

#include "protocol/json_text.hpp"
#include "storage/cut_turn.hpp"

#include <vector>

namespace hb::storage {

using protocol::json;

const char* const restart_reason = "hermes-bridge restarted while this run was live";

namespace {

struct open_questions {
  std::vector<std::string> approvals;
  std::vector<json> compressions; // their requested events
  std::vector<std::string> clarifications;
};

open_questions find_open_questions(SQLite::Database& db, int64_t run_no) {
  open_questions open;
  SQLite::Statement scan(db,
    "SELECT body FROM events WHERE run_no=? AND (body LIKE '{\"event\": \"approval.%'"
    " OR body LIKE '{\"event\": \"bridge.compression.%' OR body LIKE '{\"event\": \"clarify.%')"
    " ORDER BY seq");
  scan.bind(1, run_no);
  auto drop = [](auto& list, const std::string& id, auto key_of) {
    for (auto it = list.begin(); it != list.end(); ++it)
      if (key_of(*it) == id) {
        list.erase(it);
        return;
      }
  };
  while (scan.executeStep()) {
    json ev = json::parse(scan.getColumn(0).getString(), nullptr, false);
    if (!ev.is_object())
      continue;
    std::string name = ev.value("event", "");
    if (name == "approval.requested")
      open.approvals.push_back(ev.value("approval_id", ""));
    else if (name == "approval.resolved")
      drop(open.approvals, ev.value("approval_id", ""), [](const std::string& s) { return s; });
    else if (name == "bridge.compression.requested")
      open.compressions.push_back(ev);
    else if (name == "bridge.compression.completed" || name == "bridge.compression.failed")
      drop(open.compressions, ev.value("request_id", ""),
           [](const json& j) { return j.value("request_id", ""); });
    else if (name == "clarify.requested")
      open.clarifications.push_back(ev.value("clarify_id", ""));
    else if (name == "clarify.resolved")
      drop(open.clarifications, ev.value("clarify_id", ""), [](const std::string& s) { return s; });
  }
  return open;
}

} // namespace

std::vector<std::string> settle_open_questions(SQLite::Database& db, int64_t run_no, recovery_report* report) {
  std::vector<std::string> events;
  auto add = [&](const json& event) { events.push_back(protocol::dumps(event)); };
  open_questions open = find_open_questions(db, run_no);
  for (const auto& id : open.approvals) {
    json ev;
    ev["event"] = "approval.resolved";
    ev["approval_id"] = id;
    ev["choice"] = "deny";
    ev["reason"] = "daemon restarted";
    add(ev);
    if (report)
      ++report->approvals_denied;
  }
  for (const auto& requested : open.compressions) {
    json ev;
    ev["event"] = "bridge.compression.failed";
    ev["request_id"] = requested.value("request_id", "");
    ev["message_count"] = requested.value("message_count", json());
    ev["approx_tokens"] = requested.value("approx_tokens", json());
    ev["error"] = "hermes-bridge restarted before the compression reply";
    add(ev);
    if (report)
      ++report->compressions_failed;
  }
  for (const auto& id : open.clarifications) {
    json ev;
    ev["event"] = "clarify.resolved";
    ev["clarify_id"] = id;
    ev["response"] = nullptr;
    ev["reason"] = "daemon restarted";
    add(ev);
  }
  return events;
}

recovery_report recover_open_runs(SQLite::Database& db, double now, const std::set<std::string>& continuing,
                                  std::map<std::string, continuing_run>* kept) {
  recovery_report report;
  SQLite::Transaction tx(db);
  std::vector<int64_t> live;
  {
    SQLite::Statement q(db, "SELECT run_no, run_id, session_id, host_seq FROM runs WHERE status='running' ORDER BY run_no");
    while (q.executeStep()) {
      std::string run_id = q.getColumn(1).getString();
      if (continuing.count(run_id) == 0) {
        live.push_back(q.getColumn(0).getInt64());
      } else if (kept) {
        (*kept)[run_id] = continuing_run{q.getColumn(2).getString(), static_cast<uint64_t>(q.getColumn(3).getInt64())};
      }
    }
  }
  SQLite::Statement next_seq(db, "SELECT coalesce(max(seq) + 1, 0) FROM events WHERE run_no=?");
  SQLite::Statement append(db, "INSERT INTO events(run_no, seq, at, body) VALUES(?, ?, ?, ?)");
  SQLite::Statement finish(db,
    "UPDATE runs SET status='interrupted', error=?, ended_at=?, result=? WHERE run_no=?");
  for (int64_t run_no : live) {
    next_seq.bind(1, run_no);
    next_seq.executeStep();
    int64_t seq = next_seq.getColumn(0).getInt64();
    next_seq.reset();
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

} // namespace hb::storage
