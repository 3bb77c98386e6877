// Runs one blocking function (a Python call, mostly) on a thread of its own
// and hands its result back as an ordinary response, so the calling actor
// stays responsive and the scheduler's workers never wait on the GIL.
#pragma once

#include "actors/vocabulary.hpp"

#include <caf/all.hpp>

namespace hb::actors {

// (The unused int keeps CAF 0.17 from dereferencing a null argument tuple,
// which UBSan reports, when an actor function takes no arguments.)
// The one message of a blocking call's actor: run now, answer with the outcome.
struct call_now {};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, call_now&) {
  return f(caf::meta::type_name("call_now"));
}

// The actor tests' systems set this option: their stand-in agents never
// block, and a call on the test coordinator's thread keeps the test
// deterministic (a detached actor has a thread of its own even there).
constexpr const char* scheduled_calls_option = "hb.scheduled-blocking-calls";

inline bool calls_scheduled(caf::actor_system& sys) {
  return caf::get_or(sys.config(), scheduled_calls_option, false);
}

template <class Self, class F>
auto blocking_call(Self* self, F f) {
  auto call = [f](caf::event_based_actor* w, int) mutable -> caf::behavior {
    return {[=](call_now) mutable {
      auto result = f();
      w->quit();
      return result;
    }};
  };
  auto& sys = self->system();
  auto worker = calls_scheduled(sys) ? sys.spawn(call, 0) : sys.template spawn<caf::detached>(call, 0);
  return self->request(worker, caf::infinite, call_now{});
}

// The same, when nobody waits for the outcome.
template <class Self, class F>
void blocking_detach(Self* self, F f) {
  auto& sys = self->system();
  auto call = [f](int) mutable { f(); };
  if (calls_scheduled(sys))
    sys.spawn(call, 0);
  else
    sys.template spawn<caf::detached>(call, 0);
}

} // namespace hb::actors
