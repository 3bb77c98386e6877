// Limits on JSON that comes from outside: how deep a request may nest, and
// JSON text from an agent (events, results) checked once on its way into the
// log, because answers splice that text in without parsing it again.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hb::protocol {

// A request nests arrays and objects at most this deep. Real requests use a
// handful of levels; the limit keeps every recursive walk of a request (a
// copy, a repr) far from the end of a thread's stack.
constexpr size_t max_request_depth = 64;
// Agents' events and results may nest deeper than requests (tool output),
// but not without bound.
constexpr size_t max_agent_json_depth = 512;

// Whether `text` opens more than `limit` arrays/objects inside each other
// (brackets inside strings do not count). Linear, no allocation, and it
// does not need the text to be valid JSON.
bool nests_deeper_than(std::string_view text, size_t limit);

// Whether `text` is one JSON value, as nlohmann::json::accept() says, in
// less memory: accept() keeps each token twice while it reads it, which for
// a long run's result (its text in one string) is four times the text. A
// string longer than `long_string` bytes is checked here instead, and only
// the rest of the text goes to accept().
bool accepts_json(std::string_view text, size_t long_string = 4096);

// `text` if it is one valid JSON value (lone surrogate escapes replaced by
// U+FFFD, as requests get them) nesting at most max_agent_json_depth;
// otherwise the text itself as a JSON string, so nothing is lost and the
// answer line it goes into stays valid. Empty text stays empty ("none").
std::string checked_json_value(std::string text);
// The same for an event, which clients read as an object: anything else
// becomes {"event": "bridge.invalid_event", "text": <the text as a string>}.
std::string checked_event_json(std::string text);

// A timeout in seconds from a client or an agent made safe to turn into a
// duration: NaN and negative values are 0 (callers read 0 as "none"),
// anything above max_timeout_s (infinity included) is max_timeout_s.
constexpr double max_timeout_s = 86'400;
double clamp_timeout_s(double seconds);

} // namespace hb::protocol
