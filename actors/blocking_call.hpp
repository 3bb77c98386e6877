// Runs one blocking function (a Python call, mostly) on a thread of its own
// and hands its result back as an ordinary response, so the calling actor
// stays responsive and the scheduler's workers never wait on the GIL.
#pragma once

#include "actors/vocabulary.hpp"

#include <caf/all.hpp>

namespace hb::actors {

template <class Self, class F>
auto blocking_call(Self* self, F f) {
  auto worker = self->system().template spawn<caf::detached>(
    [f](caf::event_based_actor* w) mutable -> caf::behavior {
      return {[=](call_atom) mutable {
        auto result = f();
        w->quit();
        return result;
      }};
    });
  return self->request(worker, caf::infinite, call_atom::value);
}

// The same, when nobody waits for the outcome.
template <class Self, class F>
void blocking_detach(Self* self, F f) {
  self->system().template spawn<caf::detached>([f]() mutable { f(); });
}

} // namespace hb::actors
