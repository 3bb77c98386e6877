// A fast path for the frames a streaming turn mostly sends (texts_decoder.cpp).
#pragma once

#include "bridge/worker/frames.hpp"

#include <optional>
#include <string_view>

namespace hb::bridge::worker {

// A `texts` frame, or a `batch` of nothing but `texts` frames, exactly as
// the worker encodes them, decoded; nullopt for any other body (the general
// decoder then decodes it, or says what is wrong with it).
std::optional<from_worker> decode_texts_quickly(std::string_view body);

} // namespace hb::bridge::worker
