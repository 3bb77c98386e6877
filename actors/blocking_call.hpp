// Runs one blocking function (a Python call, mostly) on a thread of its own
// and hands its result back as an ordinary response, so the calling actor
// stays responsive and the scheduler's workers never wait on the GIL.
#pragma once

#include "actors/vocabulary.hpp"

#include <caf/all.hpp>

namespace hb::actors {

// (The unused int keeps CAF 0.17 from dereferencing a null argument tuple,
// which UBSan reports, when an actor function takes no arguments.)
template <class Self, class F>
auto blocking_call(Self* self, F f) {
  auto worker = self->system().template spawn<caf::detached>(
    [f](caf::event_based_actor* w, int) mutable -> caf::behavior {
      return {[=](call_atom) mutable {
        auto result = f();
        w->quit();
        return result;
      }};
    },
    0);
  return self->request(worker, caf::infinite, call_atom::value);
}

// The same, when nobody waits for the outcome.
template <class Self, class F>
void blocking_detach(Self* self, F f) {
  self->system().template spawn<caf::detached>([f](int) mutable { f(); }, 0);
}

} // namespace hb::actors
