#include "bridge/worker/worker_pool.hpp"

#include "bridge/worker/worker_pool_slot.hpp"

#include "bridge/worker/worker_session.hpp"
#include "protocol/json_text.hpp"
#include "protocol/wire_error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <system_error>
#include <thread>

namespace hb::bridge::worker {

namespace {
using clock = std::chrono::steady_clock;
// A worker that dies sooner than this after starting counts as "keeps dying".
constexpr std::chrono::seconds short_life{30};
constexpr double max_backoff_s = 30;
constexpr std::chrono::seconds create_deadline{300}; // AIAgent construction; `uv run` may build a venv first
constexpr std::chrono::seconds prestart_warm_deadline{300};
constexpr std::chrono::seconds follow_deadline{60};
} // namespace

worker_pool::worker_pool(pool_options options) : options_(std::move(options)) {
  options_.auto_cap = std::max<size_t>(1, options_.auto_cap);
}

std::shared_ptr<worker_pool::slot> worker_pool::pick(const std::string& profile) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slots = slots_[profile];
  if (options_.per_profile == 0)
    return pick_warm(slots, profile);
  for (size_t i = slots.size(); i < options_.per_profile; ++i) { // (adopted workers may hold the first)
    auto s = std::make_shared<slot>();
    s->profile = profile;
    s->index = i;
    slots.push_back(s);
  }
  return *std::min_element(slots.begin(), slots.end(),
                           [](const auto& a, const auto& b) { return a->sessions < b->sessions; });
}

std::shared_ptr<worker_process> worker_pool::running(slot& s, bool spare) {
  std::lock_guard<std::mutex> start(s.start_mu);
  std::shared_ptr<worker_process> proc;
  struct settled { // however this ends, no start of this slot is on its way any more
    worker_pool& pool;
    slot& s;
    ~settled() {
      std::lock_guard<std::mutex> lock(pool.mu_);
      s.starting = false;
    }
  } done{*this, s};
  {
    std::lock_guard<std::mutex> lock(mu_);
    proc = s.proc;
    if (!proc || !proc->accepting())
      s.starting = true;
  }
  if (proc && proc->accepting())
    return proc;
  auto now = clock::now();
  if (proc) { // it died: count it, and wait before starting again if it keeps dying
    double lived = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
                   proc->started_at();
    s.crashes = lived < short_life.count() ? s.crashes + 1 : 1;
    s.last_death = proc->death_reason();
    double delay = s.crashes <= 1 ? 0 : std::min(max_backoff_s, 0.5 * std::pow(2.0, s.crashes - 2));
    s.retry_at = now + std::chrono::milliseconds(static_cast<int64_t>(delay * 1000));
    std::lock_guard<std::mutex> lock(mu_);
    s.proc.reset();
  }
  if (now < s.retry_at) {
    double wait = std::chrono::duration<double>(s.retry_at - now).count();
    throw protocol::runtime_error("the agent worker for profile " + s.profile + " keeps dying (" +
                                  std::to_string(s.crashes) + " times in a row, last: " + s.last_death +
                                  "); it is started again in " + std::to_string(static_cast<int>(std::ceil(wait))) +
                                  " s");
  }
  std::shared_ptr<worker_process> make_room;
  if (auto spare = spare_on_its_way(s)) {
    // At the cap with a spare still starting: it gives way once it is up
    // (its start ends within the ready deadline), rather than this start
    // being refused for a worker nobody needs.
    std::lock_guard<std::mutex> wait(spare->start_mu);
  }
  {
    // A cap on processes in all: every distinct profile would otherwise
    // start one more (an interpreter and an agent's memory each). A spare
    // never takes the place a worker with a session to serve needs.
    std::lock_guard<std::mutex> lock(mu_);
    if (options_.max_workers > 0 && live_workers() >= options_.max_workers)
      make_room = take_spare_for_room();
    if (options_.max_workers > 0 && live_workers() >= options_.max_workers)
      throw protocol::runtime_error("too many agent workers (" + std::to_string(options_.max_workers) +
                                    "): raise --max-workers, or let idle ones exit (--worker-idle-timeout)");
    starting_++;
  }
  if (make_room)
    make_room->stop(std::chrono::seconds(3)); // gone before the new one starts: the cap holds
  try {
    launch_options how = options_.launch;
    if (spare)
      how.warm_nice = spare_warm_nice;
    proc = worker_process::start(how, s.profile);
  } catch (const protocol::wire_error&) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      starting_--;
    }
    s.crashes++;
    double delay = std::min(max_backoff_s, 0.5 * std::pow(2.0, std::max(0, s.crashes - 1)));
    s.retry_at = clock::now() + std::chrono::milliseconds(static_cast<int64_t>(delay * 1000));
    throw;
  }
  std::lock_guard<std::mutex> lock(mu_);
  starting_--;
  s.restarts++;
  s.proc = proc;
  if (s.sessions == 0)
    s.idle_since = clock::now(); // a fresh spare is not idle since its slot's last use
  return proc;
}

std::shared_ptr<agent_host> worker_pool::create_session(const std::string& session_id, const std::string& profile_in,
                                                        const std::string& model, const std::string& provider,
                                                        std::string& config_json) {
  if (!options_.unavailable.empty())
    throw protocol::runtime_error(options_.unavailable);
  std::string profile = profile_in.empty() ? "default" : profile_in;
  auto s = pick(profile);
  {
    std::lock_guard<std::mutex> lock(mu_);
    s->sessions++; // counted before the slow start, so concurrent chats spread over the slots
  }
  try {
    auto proc = running(*s);
    uint64_t handle = proc->next_handle();
    config_json = proc->call_value(worker::create_session{0, handle, session_id, profile, model, provider},
                                   create_deadline);
    std::lock_guard<std::mutex> lock(mu_);
    sessions_[session_id] = proc;
    // From here the session's destructor gives the count back (forget()).
    return std::make_shared<worker_session>(shared_from_this(), s, proc, handle, session_id);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    s->sessions--;
    s->idle_since = clock::now();
    throw;
  }
}

void worker_pool::forget(const std::string& session_id, const worker_process* proc, slot& s) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session_id);
  if (it != sessions_.end() && it->second.lock().get() == proc)
    sessions_.erase(it);
  if (s.sessions > 0 && --s.sessions == 0)
    s.idle_since = clock::now();
}

std::shared_ptr<worker_process> worker_pool::worker_of(const std::string& session_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(session_id);
  return it == sessions_.end() ? nullptr : it->second.lock();
}

int worker_pool::resolve_gateway(const std::string& session_id, const std::string& choice,
                                 const std::string& request_id, const std::string& token,
                                 const std::function<void(int, const std::string&)>& before_agent_runs) {
  auto proc = worker_of(session_id);
  int released = 0;
  bool reported = false;
  std::string failure = proc ? "the session's worker is not running" : "the session has no worker";
  if (proc && proc->alive()) {
    failure = "the worker did not answer";
    // The worker writes its reply before the agent it woke can write
    // anything (FRAMES.md), and this hook runs before the next frame is
    // read: what it records comes before what the agent does next.
    auto answer = proc->call(worker::resolve_gateway{0, session_id, choice, request_id, token}, std::chrono::seconds(15),
               [&](const reply& r) {
      released = r.ok ? std::atoi(r.value.c_str()) : 0;
      before_agent_runs(released, r.ok ? std::string() : r.error_type + ": " + r.error);
      reported = true;
    });
    if (!reported && !answer.error.empty())
      failure = answer.error; // its deadline, or its death
  }
  if (!reported)
    before_agent_runs(0, failure);
  return released;
}

std::string worker_pool::call(const std::string& profile_in, const std::string& op, const std::string& args_json) {
  return call_for_session("", profile_in, op, args_json);
}

std::string worker_pool::call_for_session(const std::string& session_id, const std::string& profile_in,
                                          const std::string& op, const std::string& args_json) {
  if (!options_.unavailable.empty())
    throw protocol::runtime_error(options_.unavailable);
  std::string profile = profile_in.empty() ? "default" : profile_in;
  auto proc = worker_of(session_id);
  if (!proc || !proc->accepting() || proc->profile() != profile) // (a session moved to another profile)
    proc = running(*pick(profile));
  std::string value = proc->call_value(worker::profile_call{0, profile, op, args_json}, create_deadline);
  if (auto follow = followed_by(op, value); !follow.empty())
    tell_the_others(profile, proc.get(), follow, args_json);
  return value;
}

std::string worker_pool::followed_by(const std::string& op, const std::string& value) {
  // Skills and MCP servers live in each worker's own process: a reload or a
  // server edit done in one of a profile's workers is repeated in the others,
  // whose sessions would otherwise keep the old skills and tools. A server
  // edit is written to config.yaml once; the others follow that file.
  static const std::map<std::string, std::string> follow = {
      {"skills_reload", "skills_reload"}, {"mcp_reload", "mcp_reload"},   {"mcp_server_add", "mcp_follow"},
      {"mcp_server_update", "mcp_follow"}, {"mcp_server_remove", "mcp_follow"},
  };
  if (auto it = follow.find(op); it != follow.end())
    return it->second;
  // A session's /reload-skills (the worker says which command it ran).
  if (op == "command" && value.find("reload-skills") != std::string::npos) {
    auto answer = protocol::json::parse(value, nullptr, false);
    auto type = answer.is_object() ? answer.find("type") : answer.end();
    if (type != answer.end() && *type == "reload-skills")
      return "skills_reload";
  }
  return {};
}

void worker_pool::tell_the_others(const std::string& profile, const worker_process* done, const std::string& op,
                                  const std::string& args_json) {
  std::vector<std::shared_ptr<worker_process>> others;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = slots_.find(profile); it != slots_.end())
      for (auto& s : it->second)
        if (s->proc && s->proc.get() != done && s->proc->alive() && !s->proc->unresponsive())
          others.push_back(s->proc);
  }
  auto tell = [&](const std::shared_ptr<worker_process>& proc) {
    try {
      proc->call_value(worker::profile_call{0, profile, op, args_json}, follow_deadline);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hermes-bridge: %s in worker %d (profile %s) failed: %s\n", op.c_str(),
                   static_cast<int>(proc->pid()), profile.c_str(), e.what());
    }
  };
  // In parallel, and answered only once all have it: a session's next
  // command, on whichever worker, sees the change. (A worker still warming
  // up runs it beside its imports.)
  std::vector<std::thread> calls;
  for (auto& proc : others) {
    try {
      calls.emplace_back(tell, proc);
    } catch (const std::system_error&) {
      tell(proc); // no thread to be had: in this one
    }
  }
  for (auto& t : calls)
    t.join();
}

void worker_pool::collect_idle() {
  std::vector<std::shared_ptr<worker_process>> retire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto now = clock::now();
    for (auto& [_, slots] : slots_)
      for (auto& s : slots) {
        if (!s->proc || !s->proc->alive())
          continue;
        // Idle: no session left. Too big: no turn running (its sessions
        // resume from the log in a fresh worker on their next chat).
        bool idle = s->sessions == 0 && options_.idle_timeout.count() > 0 &&
                    now - s->idle_since >= options_.idle_timeout;
        bool big = options_.max_rss_mb > 0 && s->proc->rss_mb() > options_.max_rss_mb;
        if ((idle || big) && s->proc->retire_if_idle()) {
          s->recycled++;
          retire.push_back(s->proc);
          s->proc.reset(); // not a crash: the next session starts a fresh one at once
        }
      }
  }
  for (auto& p : retire)
    p->stop(std::chrono::seconds(3));
}

void worker_pool::prestart(const std::string& profile) {
  if (!options_.unavailable.empty())
    return;
  auto self = shared_from_this();
  std::thread([self, profile] {
    try {
      auto first = self->running(*self->pick(profile));
      // Automatic: the spare the first turn would start, started now, once
      // the first worker's imports are done (never two imports competing for
      // the cores at start-up): a second chat while the first one's turn runs
      // finds a warm worker of its own.
      if (self->options_.per_profile == 0 && first->wait_until_warm(prestart_warm_deadline))
        self->turn_starting(profile, first.get());
    } catch (const std::exception&) {
      // The first chat that needs it tries again and reports why.
    }
  }).detach();
}

void worker_pool::start_housekeeping() {
  if (options_.idle_timeout.count() <= 0 && options_.max_rss_mb <= 0)
    return;
  auto every = std::chrono::milliseconds(5000);
  if (options_.idle_timeout.count() > 0)
    every = std::min<std::chrono::milliseconds>(every, std::chrono::milliseconds(options_.idle_timeout) / 4 +
                                                         std::chrono::milliseconds(100));
  std::weak_ptr<worker_pool> weak = shared_from_this();
  std::thread([weak, every] {
    for (;;) {
      std::this_thread::sleep_for(every);
      auto pool = weak.lock();
      if (!pool)
        return;
      pool->collect_idle();
    }
  }).detach();
}

void worker_pool::stop_all(std::chrono::milliseconds grace) {
  std::vector<std::shared_ptr<worker_process>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [_, slots] : slots_)
      for (auto& s : slots)
        if (s->proc)
          all.push_back(s->proc);
  }
  for (auto& p : all)
    p->post(shutdown{}); // all at once, then wait for each
  for (auto& p : all)
    p->stop(grace);
}

} // namespace hb::bridge::worker
