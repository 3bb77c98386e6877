#include "actors/log_messages.hpp"

#include "storage/log_startup.hpp"

namespace hb::actors {

void add_damage_found(log_health& h) {
  auto damage = storage::damage_found_after_start();
  if (!damage)
    return;
  if (!h.degraded) {
    h.degraded = true;
    h.reason = damage->reason;
    h.degraded_since = damage->at;
  } else {
    h.reason += "; " + damage->reason;
  }
}

} // namespace hb::actors
