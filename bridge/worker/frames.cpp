#include "bridge/worker/frames.hpp"

#include "bridge/worker/stream_decoder.hpp"
#include "protocol/json_text.hpp"

#include <nlohmann/json.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

namespace hb::bridge::worker {

using nlohmann::json;

namespace {

// Each kind's wire name and fields, once: the writer and the reader below
// both walk these (as CAF's inspect() does for its messages).
template <class F> void fields(F& f, create_session& x) {
  f("req", x.req), f("handle", x.handle), f("session_id", x.session_id), f("profile", x.profile),
    f("model", x.model), f("provider", x.provider);
}
template <class F> void fields(F& f, prepare_turn& x) { f("req", x.req), f("handle", x.handle); }
template <class F> void fields(F& f, start_turn& x) {
  f("turn", x.turn), f("handle", x.handle), f("run", x.run), f("request", x.request), f("steer", x.steer),
    f("clear_interrupt", x.clear_interrupt);
}
template <class F> void fields(F& f, interrupt_turn& x) {
  f("req", x.req), f("handle", x.handle), f("message", x.message);
}
template <class F> void fields(F& f, steer_turn& x) { f("req", x.req), f("handle", x.handle), f("text", x.text); }
template <class F> void fields(F& f, release_session& x) { f("handle", x.handle); }
template <class F> void fields(F& f, resolve_gateway& x) {
  f("req", x.req), f("session_id", x.session_id), f("choice", x.choice), f("request_id", x.request_id),
    f("token", x.token);
}
template <class F> void fields(F& f, session_call& x) {
  f("req", x.req), f("handle", x.handle), f("op", x.op), f("args", x.args);
}
template <class F> void fields(F& f, profile_call& x) {
  f("req", x.req), f("profile", x.profile), f("op", x.op), f("args", x.args);
}
template <class F> void fields(F& f, answer& x) { f("turn", x.turn), f("ask", x.ask), f("text", x.text); }
template <class F> void fields(F& f, committed& x) { f("turn", x.turn), f("seq", x.seq); }
template <class F> void fields(F&, shutdown&) {}
template <class F> void fields(F& f, heartbeat& x) { f("beat", x.beat); }
template <class F> void fields(F& f, heartbeat_reply& x) {
  f("beat", x.beat);
  f("unacknowledged", x.unacknowledged);
}
template <class F> void fields(F& f, attach& x) { f("secret", x.secret), f("version", x.version); }
template <class F> void fields(F& f, resume& x) { f("turn", x.turn), f("after", x.after); }
template <class F> void fields(F& f, drop_turn& x) { f("turn", x.turn); }
template <class F> void fields(F& f, ready& x) {
  f("pid", x.pid), f("version", x.version), f("python", x.python), f("python_version", x.python_version), f("agent_root", x.agent_root),
    f("agent_version", x.agent_version), f("error", x.error);
}
template <class F> void fields(F& f, reply& x) {
  f("req", x.req), f("ok", x.ok), f("value", x.value), f("error_type", x.error_type), f("error", x.error);
}
template <class F> void fields(F& f, text& x) { f("turn", x.turn), f("seq", x.seq), f("text", x.text); }
template <class F> void fields(F& f, texts& x) { f("turn", x.turn), f("seq", x.seq), f("texts", x.texts); }
template <class F> void fields(F& f, event& x) { f("turn", x.turn), f("seq", x.seq), f("json", x.json); }
template <class F> void fields(F& f, ask& x) {
  f("turn", x.turn), f("seq", x.seq), f("ask", x.ask), f("kind", x.kind), f("request", x.request),
    f("timeout_s", x.timeout_s);
}
template <class F> void fields(F& f, notify& x) {
  f("turn", x.turn), f("seq", x.seq), f("request", x.request), f("timeout_s", x.timeout_s);
}
template <class F> void fields(F& f, turn_end& x) {
  f("turn", x.turn), f("seq", x.seq), f("status", x.status), f("result", x.result), f("error", x.error),
    f("history", x.history), f("message_count", x.message_count);
}

template <class F> void fields(F&, warm&) {}
template <class F> void fields(F& f, held_session& x) { f("handle", x.handle), f("session_id", x.session_id); }
template <class F> void fields(F& f, held_turn& x) {
  f("turn", x.turn), f("handle", x.handle), f("run", x.run), f("seq", x.seq), f("ended", x.ended);
}
template <class F> void fields(F& f, held_ask& x) {
  f("turn", x.turn), f("ask", x.ask), f("seq", x.seq), f("kind", x.kind), f("request", x.request),
    f("timeout_s", x.timeout_s), f("waited_s", x.waited_s);
}
template <class F> void fields(F& f, attached& x) {
  fields(f, x.who);
  f("warm", x.warm), f("req", x.req), f("sessions", x.sessions), f("turns", x.turns), f("asks", x.asks);
}
template <class F> void fields(F& f, attach_refused& x) { f("reason", x.reason); }
template <class F> void fields(F& f, drain& x) { f("secret", x.secret); }
template <class F> void fields(F& f, drained& x) { f("version", x.version), f("turns", x.turns); }
template <class F> void fields(F& f, batch& x) { f("frames", x.frames); }

template <class T> constexpr const char* kind_name();
#define HB_FRAME_NAME(type) \
  template <> constexpr const char* kind_name<type>() { return #type; }
HB_FRAME_NAME(create_session)
HB_FRAME_NAME(prepare_turn)
HB_FRAME_NAME(start_turn)
HB_FRAME_NAME(interrupt_turn)
HB_FRAME_NAME(steer_turn)
HB_FRAME_NAME(release_session)
HB_FRAME_NAME(resolve_gateway)
HB_FRAME_NAME(session_call)
HB_FRAME_NAME(profile_call)
HB_FRAME_NAME(answer)
HB_FRAME_NAME(committed)
HB_FRAME_NAME(shutdown)
HB_FRAME_NAME(heartbeat)
HB_FRAME_NAME(heartbeat_reply)
HB_FRAME_NAME(ready)
HB_FRAME_NAME(reply)
HB_FRAME_NAME(text)
HB_FRAME_NAME(texts)
HB_FRAME_NAME(event)
HB_FRAME_NAME(ask)
HB_FRAME_NAME(notify)
HB_FRAME_NAME(turn_end)
HB_FRAME_NAME(warm)
HB_FRAME_NAME(batch)
HB_FRAME_NAME(attach)
HB_FRAME_NAME(resume)
HB_FRAME_NAME(drop_turn)
HB_FRAME_NAME(attached)
HB_FRAME_NAME(attach_refused)
HB_FRAME_NAME(drain)
HB_FRAME_NAME(drained)
#undef HB_FRAME_NAME

template <class Variant> json body_of(const Variant& frame);
template <class Variant, size_t I = 0> Variant decode_kind(json& body, const std::string& kind);
template <class Variant> Variant decode_body(json& body);

struct writer {
  json& out;
  int operator()(const char* key, const std::vector<turn_frame>& frames) {
    json& list = out[key] = json::array();
    for (const auto& f : frames)
      list.push_back(body_of(f));
    return 0;
  }
  int operator()(const char* key, const std::vector<std::string>& v) {
    out[key] = v;
    return 0;
  }
  template <class T> int operator()(const char* key, const std::vector<T>& items) {
    json& list = out[key] = json::array();
    for (const auto& item : items) {
      json one = json::object();
      writer w{one};
      fields(w, const_cast<T&>(item)); // the writer only reads
      list.push_back(std::move(one));
    }
    return 0;
  }
  template <class V> int operator()(const char* key, const V& v) {
    out[key] = v;
    return 0;
  }
  int operator()(const char* key, const std::optional<std::string>& v) {
    if (v)
      out[key] = *v;
    else
      out[key] = nullptr;
    return 0;
  }
};

// Moves strings out of the parsed body: a turn's outcome can be hundreds of
// MB, and each copy of it is memory the daemon holds at once.
struct reader {
  json& in;
  const char* kind;
  json& at(const char* key) {
    auto it = in.find(key);
    if (it == in.end())
      throw frame_error(std::string(kind) + " frame without " + key);
    return *it;
  }
  [[noreturn]] void wrong(const char* key, const char* want) {
    throw frame_error(std::string(kind) + " frame: " + key + " is not " + want);
  }
  int operator()(const char* key, std::string& v) {
    json& j = at(key);
    if (!j.is_string())
      wrong(key, "a string");
    v = std::move(j.get_ref<std::string&>());
    return 0;
  }
  int operator()(const char* key, std::optional<std::string>& v) {
    json& j = at(key);
    if (j.is_null())
      v.reset();
    else if (j.is_string())
      v = std::move(j.get_ref<std::string&>());
    else
      wrong(key, "a string or null");
    return 0;
  }
  int operator()(const char* key, std::vector<turn_frame>& v) {
    json& j = at(key);
    if (!j.is_array())
      wrong(key, "an array");
    v.reserve(j.size());
    for (json& body : j)
      v.push_back(decode_body<turn_frame>(body));
    return 0;
  }
  int operator()(const char* key, std::vector<std::string>& v) {
    json& j = at(key);
    if (!j.is_array() || j.empty())
      wrong(key, "a non-empty array");
    v.reserve(j.size());
    for (json& one : j) {
      if (!one.is_string())
        wrong(key, "an array of strings");
      v.push_back(std::move(one.get_ref<std::string&>()));
    }
    return 0;
  }
  template <class T> int operator()(const char* key, std::vector<T>& items) {
    json& j = at(key);
    if (!j.is_array())
      wrong(key, "an array");
    items.reserve(j.size());
    for (json& one : j) {
      if (!one.is_object())
        wrong(key, "an array of objects");
      reader r{one, kind};
      fields(r, items.emplace_back());
    }
    return 0;
  }
  int operator()(const char* key, uint64_t& v) {
    const json& j = at(key);
    if (!j.is_number_unsigned())
      wrong(key, "a non-negative integer");
    v = j.get<uint64_t>();
    return 0;
  }
  int operator()(const char* key, int64_t& v) {
    const json& j = at(key);
    if (!j.is_number_integer())
      wrong(key, "an integer");
    v = j.get<int64_t>();
    return 0;
  }
  int operator()(const char* key, bool& v) {
    const json& j = at(key);
    if (!j.is_boolean())
      wrong(key, "a boolean");
    v = j.get<bool>();
    return 0;
  }
  int operator()(const char* key, double& v) {
    const json& j = at(key);
    if (!j.is_number() || !std::isfinite(j.get<double>()))
      wrong(key, "a finite number");
    v = j.get<double>();
    return 0;
  }
};

// The body as one part, or, past max_part_bytes, as several: each part's
// length has more_parts set but the last's.
std::string frame_parts(const std::string& text) {
  if (text.size() > max_frame_bytes)
    throw frame_error("frame of " + std::to_string(text.size()) + " bytes is over the limit");
  std::string out;
  out.reserve(text.size() + 4 * (text.size() / max_part_bytes + 1));
  size_t at = 0;
  do {
    size_t n = std::min<size_t>(max_part_bytes, text.size() - at);
    uint32_t head = static_cast<uint32_t>(n) | (at + n < text.size() ? more_parts : 0u);
    out.push_back(static_cast<char>(head >> 24));
    out.push_back(static_cast<char>(head >> 16));
    out.push_back(static_cast<char>(head >> 8));
    out.push_back(static_cast<char>(head));
    out.append(text, at, n);
    at += n;
  } while (at < text.size());
  return out;
}

template <class Variant> json body_of(const Variant& frame) {
  json body = json::object();
  std::visit(
    [&](const auto& x) {
      using T = std::decay_t<decltype(x)>;
      body["t"] = kind_name<T>();
      writer w{body};
      fields(w, const_cast<T&>(x)); // the writer only reads
    },
    frame);
  return body;
}

template <class Variant> std::string encode_any(const Variant& frame) {
  // Replacement, not an exception, for invalid UTF-8: the worker already
  // cleaned its text, so this only guards against a bug turning into a crash.
  return frame_parts(body_of(frame).dump(-1, ' ', false, json::error_handler_t::replace));
}

template <class Variant, size_t I> Variant decode_kind(json& body, const std::string& kind) {
  if constexpr (I == std::variant_size_v<Variant>) {
    throw frame_error("unknown frame kind: " + kind.substr(0, 40));
  } else {
    using T = std::variant_alternative_t<I, Variant>;
    if (kind == kind_name<T>()) {
      T x;
      reader r{body, kind_name<T>()};
      fields(r, x);
      return x;
    }
    return decode_kind<Variant, I + 1>(body, kind);
  }
}

// The bytes an erase from the front moved left behind are still resident:
// a 100 MB turn's result would hold its whole frame's pages (the history
// before it too) until the log has written it. Their whole pages go back to
// the system; should the string grow into them again, they read as zeros.
void release_slack(std::string& s) {
  constexpr size_t worth_it = size_t{1} << 20;
  if (s.capacity() - s.size() < worth_it)
    return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto start = reinterpret_cast<uintptr_t>(s.data());
  uintptr_t from = (start + s.size() + 1 + page - 1) & ~(page - 1); // past the terminating NUL
  uintptr_t to = (start + s.capacity()) & ~(page - 1);
  if (to > from)
    ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

// A body's raw fields (FRAMES.md) become string fields holding their JSON
// text, as a version 3 worker sent them: the structs are the same. With
// `owner` (the whole body, `tail` its end) the last field takes the body's
// buffer instead of a copy: the worker sends the longest last.
void take_raw_fields(json& body, std::string_view tail, std::string* owner) {
  auto raw = body.is_object() ? body.find("raw") : body.end();
  if (raw == body.end() || !raw->is_array())
    throw frame_error("frame with bytes after its object but no raw list");
  json names = std::move(*raw);
  body.erase("raw");
  size_t at = 0;
  for (const json& entry : names) {
    if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || entry[0] == "t" ||
        !entry[1].is_number_unsigned() || entry[1].get<uint64_t>() > tail.size() - at)
      throw frame_error("frame: raw is not a list of [field, byte count] within the frame");
    size_t n = entry[1].get<size_t>();
    if (!protocol::is_valid_utf8(tail.substr(at, n)))
      throw frame_error("frame: raw field " + entry[0].get<std::string>().substr(0, 40) + " is not UTF-8");
    bool last = &entry == &names.back();
    if (last && owner && at + n == tail.size()) {
      owner->erase(0, owner->size() - n); // `tail` points into it: nothing reads it after this
      release_slack(*owner);
      body[entry[0].get<std::string>()] = std::move(*owner);
      return;
    }
    body[entry[0].get<std::string>()] = std::string(tail.substr(at, n));
    at += n;
  }
  if (at != tail.size())
    throw frame_error("frame: bytes after its raw fields");
}

template <class Variant> Variant decode_any(std::string_view text, std::string* owner = nullptr) {
  size_t end = std::min(text.find('\n'), text.size()); // JSON text from json.dumps holds no newline
  json body = json::parse(text.begin(), text.begin() + end, nullptr, false);
  if (body.is_discarded())
    throw frame_error("frame body is not JSON");
  if (end < text.size())
    take_raw_fields(body, text.substr(end + 1), owner);
  return decode_body<Variant>(body);
}

template <class Variant> Variant decode_body(json& body) {
  if (!body.is_object())
    throw frame_error("frame body is not a JSON object");
  auto t = body.find("t");
  if (t == body.end() || !t->is_string())
    throw frame_error("frame without a kind");
  return decode_kind<Variant>(body, t->get<std::string>());
}

} // namespace

// Version 2 lacks `texts` and version 3 raw fields, which this daemon reads
// and never needs to send.
bool compatible_version(int64_t version) { return version >= 2 && version <= frames_version; }

std::string encode(const to_worker& frame) { return encode_any(frame); }
std::string encode(const from_worker& frame) { return encode_any(frame); }
to_worker decode_to_worker(std::string_view body) { return decode_any<to_worker>(body); }
from_worker decode_from_worker(std::string_view body) {
  if (auto quick = decode_stream_quickly(body))
    return std::move(*quick);
  return decode_any<from_worker>(body);
}
from_worker decode_from_worker_generally(std::string_view body) { return decode_any<from_worker>(body); }
from_worker decode_taking(std::string&& body) {
  if (auto quick = decode_stream_quickly(body))
    return std::move(*quick);
  std::string owned = std::move(body);
  return decode_any<from_worker>(owned, &owned);
}

} // namespace hb::bridge::worker
