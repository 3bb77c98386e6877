// A fast path for the frames a streaming turn mostly sends (stream_decoder.cpp).
#pragma once

#include "bridge/worker/frames.hpp"

#include <optional>
#include <string_view>

namespace hb::bridge::worker {

// A `texts` or `event` frame, or a `batch` of nothing but those, exactly
// as the worker encodes them, decoded; nullopt for any other body (the general
// decoder then decodes it, or says what is wrong with it).
std::optional<from_worker> decode_stream_quickly(std::string_view body);

} // namespace hb::bridge::worker
