// Questions an agent is waiting on (approvals, compression requests), keyed
// by the id the client answers with. Each is taken out exactly once: by the
// client's answer, its deadline, an interrupt or the end of its run.
#pragma once

#include <caf/response_promise.hpp>

#include <deque>
#include <string>
#include <unordered_set>
#include <unordered_map>
#include <vector>

namespace hb::actors {

struct question {
  enum class kind { terminal_approval, gateway_approval, compression, clarify };
  kind what;
  std::string id;
  std::string run_id;
  std::string session_id;
  caf::response_promise answer; // unused for gateway approvals: the agent waits itself
  // Gateway approvals: how the agent tells this request from its others.
  std::string agent_request_id; // hermes-agent 0.20+
  std::string bridge_token;     // the adapter's handle on the agent's queue entry
};

class question_table {
public:
  void add(question q) { open_.emplace(q.id, std::move(q)); }

  const question* find(const std::string& id) const {
    auto it = open_.find(id);
    return it == open_.end() ? nullptr : &it->second;
  }

  bool take(const std::string& id, question& out) {
    auto it = open_.find(id);
    if (it == open_.end())
      return false;
    out = std::move(it->second);
    open_.erase(it);
    remember_closed(out.id);
    return true;
  }

  // A question that was open here and has been settled: a late answer to it
  // is told "not resolved" rather than "unknown".
  bool was_closed(const std::string& id) const { return closed_.count(id) != 0; }

  template <class Pred>
  std::vector<question> take_all(Pred pred) {
    std::vector<question> taken;
    for (auto it = open_.begin(); it != open_.end();) {
      if (pred(it->second)) {
        remember_closed(it->first);
        taken.push_back(std::move(it->second));
        it = open_.erase(it);
      } else {
        ++it;
      }
    }
    return taken;
  }

  size_t size() const { return open_.size(); }

private:
  static constexpr size_t closed_kept = 4096;

  void remember_closed(const std::string& id) {
    if (!closed_.insert(id).second)
      return;
    closed_order_.push_back(id);
    if (closed_order_.size() > closed_kept) {
      closed_.erase(closed_order_.front());
      closed_order_.pop_front();
    }
  }

  std::unordered_map<std::string, question> open_;
  std::unordered_set<std::string> closed_;
  std::deque<std::string> closed_order_;
};

} // namespace hb::actors
