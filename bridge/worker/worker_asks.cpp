// The questions a worker's agents ask (approval, compression, clarify):
// each waits for a client on a thread of its own, a bounded number at once.
#include "bridge/worker/worker_process.hpp"

#include <functional>
#include <system_error>
#include <thread>

namespace hb::bridge::worker {

namespace {

// What a question gets when no client may be asked: what the worker itself
// falls back to (worker_main.py's DEFAULT_ANSWERS), said explicitly.
std::string fail_closed(const std::string& kind) {
  if (kind == "approval")
    return "deny";
  if (kind == "compression")
    return R"({"failure": "too many questions waiting at once"})";
  return "";
}

} // namespace

void worker_process::ask_client(ask f, std::shared_ptr<turn_sink> sink) {
  auto kind = f.kind;
  wait_for_answer(f.turn, f.ask, kind, [f = std::move(f), sink = std::move(sink)]() mutable {
    if (f.kind == "approval")
      return sink->ask_approval(std::move(f.request), f.timeout_s);
    if (f.kind == "compression")
      return sink->ask_compression(std::move(f.request), f.timeout_s);
    if (f.kind == "clarify")
      return sink->ask_clarify(std::move(f.request), f.timeout_s);
    return std::string();
  });
}

void worker_process::wait_for_answer(uint64_t turn, uint64_t ask_no, const std::string& kind,
                                     std::function<std::string()> asking) {
  // The broker answers when a client does or at the deadline: wait on a
  // thread of its own, so this reader goes on with other turns; past the
  // bound, fail closed at once instead of starting another thread.
  if (open_asks_.fetch_add(1) >= max_open_asks_) {
    open_asks_--;
    post(answer{turn, ask_no, fail_closed(kind)});
    return;
  }
  auto self = shared_from_this();
  try {
    std::thread([self, turn, ask_no, kind, asking = std::move(asking)] {
      std::string text;
      try {
        text = asking();
      } catch (const std::exception&) {
        text = fail_closed(kind);
      }
      self->open_asks_--;
      self->post(answer{turn, ask_no, std::move(text)});
    }).detach();
  } catch (const std::system_error&) { // no thread to be had
    open_asks_--;
    post(answer{turn, ask_no, fail_closed(kind)});
  }
}

} // namespace hb::bridge::worker
