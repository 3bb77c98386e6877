// The native TUIs this daemon drives, for --max-native: each is a hermes
// process with its own agent, tools and MCP servers, so their number is
// capped like sessions are. A TUI counts while its session holds it and it
// has not exited.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <set>

namespace hb::bridge::native_detail {

class live_tuis {
public:
  static live_tuis& all();
  // Counts `alive` (a session's flag) in, unless `cap` TUIs that are alive
  // are counted already: then RuntimeError naming the cap.
  void take(const std::atomic<bool>* alive, size_t cap);
  void give_back(const std::atomic<bool>* alive) noexcept;

private:
  std::mutex mu_;
  std::set<const std::atomic<bool>*> held_;
};

} // namespace hb::bridge::native_detail
