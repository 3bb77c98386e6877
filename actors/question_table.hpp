// Questions an agent is waiting on (approvals, compression requests), keyed
// by the id the client answers with. Each is taken out exactly once: by the
// client's answer, its deadline, an interrupt or the end of its run.
#pragma once

#include <caf/response_promise.hpp>

#include <string>
#include <unordered_map>
#include <vector>

namespace hb::actors {

struct question {
  enum class kind { terminal_approval, gateway_approval, compression };
  kind what;
  std::string id;
  std::string run_id;
  std::string session_id;
  caf::response_promise answer; // unused for gateway approvals: the agent waits itself
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
    return true;
  }

  template <class Pred>
  std::vector<question> take_all(Pred pred) {
    std::vector<question> taken;
    for (auto it = open_.begin(); it != open_.end();) {
      if (pred(it->second)) {
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
  std::unordered_map<std::string, question> open_;
};

} // namespace hb::actors
