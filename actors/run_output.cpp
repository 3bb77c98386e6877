#include "actors/run_output.hpp"

#include <atomic>
#include <chrono>
#include <thread>
#include <unordered_map>

namespace hb::actors {

run_output::pushed run_output::push(bool is_event, std::string text, double at, uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_)
    return pushed::refused;
  items_.push_back(item{is_event, std::move(text), at, seq});
  return items_.size() == 1 ? pushed::first : pushed::more;
}

run_output::pushed run_output::push_deltas(std::vector<std::string>& texts, double at, uint64_t first_seq) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_)
    return pushed::refused;
  bool was_empty = items_.empty();
  for (auto& text : texts)
    items_.push_back(item{false, std::move(text), at, first_seq++});
  texts.clear();
  return was_empty ? pushed::first : pushed::more;
}

void run_output::on_committed(std::function<void(uint64_t)> told) {
  std::lock_guard<std::mutex> lock(mu_);
  told_ = std::move(told);
}

void run_output::committed(uint64_t seq) {
  std::function<void(uint64_t)> told;
  {
    std::lock_guard<std::mutex> lock(mu_);
    told = told_;
  }
  if (told && seq > 0)
    told(seq);
}

std::vector<run_output::item> run_output::take() {
  std::vector<item> out;
  std::lock_guard<std::mutex> lock(mu_);
  out.swap(items_);
  return out;
}

std::vector<run_output::item> run_output::close() {
  std::vector<item> out;
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  out.swap(items_);
  return out;
}

namespace {

struct registry {
  std::mutex mu;
  std::unordered_map<std::string, std::shared_ptr<run_output>> runs;
};

registry& outputs() {
  static registry r; // process-wide, like the one writer it feeds
  return r;
}

std::atomic<int64_t> writer_backlog{0};
std::atomic<bool> writer_stuck{false}; // took nothing for stuck_after: nobody waits for it
constexpr std::chrono::seconds stuck_after{30};
std::atomic<bool> writer_degraded{false};

} // namespace

std::shared_ptr<run_output> open_run_output(const std::string& run_id) {
  auto& r = outputs();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& slot = r.runs[run_id];
  if (!slot)
    slot = std::make_shared<run_output>();
  return slot;
}

std::shared_ptr<run_output> find_run_output(const std::string& run_id) {
  auto& r = outputs();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.runs.find(run_id);
  return it == r.runs.end() ? nullptr : it->second;
}

void forget_run_output(const std::string& run_id) {
  auto& r = outputs();
  std::lock_guard<std::mutex> lock(r.mu);
  r.runs.erase(run_id);
}

void writer_backlog_add(int64_t bytes) {
  writer_backlog.fetch_add(bytes, std::memory_order_relaxed);
  if (bytes < 0 && writer_stuck.load(std::memory_order_relaxed))
    writer_stuck.store(false, std::memory_order_relaxed); // it moves again
}

bool writer_backlogged() { return writer_backlog.load(std::memory_order_relaxed) > writer_backlog_limit; }

void set_writer_degraded(bool degraded) {
  writer_degraded.store(degraded, std::memory_order_relaxed);
  if (degraded)
    writer_stuck.store(false, std::memory_order_relaxed);
}

void wait_for_writer(const std::function<bool()>& stop) {
  // A writer that takes nothing for stuck_after is stuck (or gone, as the
  // daemon stops): agents go on rather than hang in their callbacks, and no
  // one waits for it again until it takes something.
  int64_t seen = writer_backlog.load(std::memory_order_relaxed);
  auto moved_at = std::chrono::steady_clock::now();
  while (seen > writer_backlog_limit / 2 && !stop() && !writer_stuck.load(std::memory_order_relaxed)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    int64_t now_seen = writer_backlog.load(std::memory_order_relaxed);
    auto now = std::chrono::steady_clock::now();
    if (now_seen < seen)
      moved_at = now;
    else if (now - moved_at > stuck_after && !writer_degraded.load(std::memory_order_relaxed))
      writer_stuck.store(true, std::memory_order_relaxed);
    seen = now_seen;
  }
}

} // namespace hb::actors
