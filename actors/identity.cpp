#include "actors/vocabulary.hpp"

#include <chrono>
#include <random>

namespace hb::actors {

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string new_id() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string out(32, '0');
  uint64_t a = gen(), b = gen();
  for (int i = 0; i < 16; ++i) {
    out[static_cast<size_t>(i)] = hex[(a >> (i * 4)) & 0xF];
    out[static_cast<size_t>(16 + i)] = hex[(b >> (i * 4)) & 0xF];
  }
  return out;
}

} // namespace hb::actors
