#include "bridge/tmux/native_slots.hpp"

#include "protocol/wire_error.hpp"

#include <algorithm>
#include <string>

namespace hb::bridge::native_detail {

live_tuis& live_tuis::all() {
  static live_tuis tuis;
  return tuis;
}

void live_tuis::take(const std::atomic<bool>* alive, size_t cap) {
  std::lock_guard<std::mutex> lock(mu_);
  auto running = std::count_if(held_.begin(), held_.end(), [](const std::atomic<bool>* a) { return a->load(); });
  if (static_cast<size_t>(running) >= cap)
    throw protocol::runtime_error("too many native sessions: " + std::to_string(running) +
                                  " hermes TUIs run already (--max-native " + std::to_string(cap) +
                                  "); close one (destroy its session) or raise the cap");
  held_.insert(alive);
}

void live_tuis::give_back(const std::atomic<bool>* alive) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  held_.erase(alive);
}

} // namespace hb::bridge::native_detail
