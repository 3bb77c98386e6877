// The daemon-worker frames: every kind survives the round trip, and a
// stream cut anywhere or filled with garbage is refused, never misread.
#include "bridge/worker/frames.hpp"
#include "bridge/worker/stream_decoder.hpp"
#include "protocol/json_text.hpp"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <random>

using namespace hb::bridge::worker;

namespace {

std::string body_of(const std::string& frame) { return frame.substr(4); }

std::vector<from_worker> sample_from_worker() {
  ready who{42, frames_version, "/r/venv/bin/python3", "3.14.0", "/r", "0.21.0", ""};
  attached full{who, true, 17, {{4, "s1"}, {5, "s\"2"}}, {{7, 4, "run-1", 130, false}, {8, 5, "run-2", 3, true}},
                {{7, 3, 120, "approval", R"({"command": "ls"})", 60, 12.5}}};
  return {who,
          full,
          attached{who, false, 0, {}, {}, {}},
          attach_refused{"another hermes-bridge is attached"},
          reply{7, true, "{\"a\": 1}", "", ""},
          reply{8, false, "", "KeyError", "no agent 3"},
          text{1, 1, "h\xc3\xa9llo \xe2\x82\xac\n\"quoted\"\t\\"},
          texts{1, 6, {"a", "", "\xe2\x82\xac \"q\""}},
          event{1, 2, R"({"event": "tool.started", "args": {}})"},
          ask{1, 3, 9, "approval", R"({"command": "rm -rf /"})", 60.5},
          notify{1, 4, "{}", 3},
          turn_end{1, 5, "complete", std::string("{}"), std::nullopt, std::string("[]"), 0},
          turn_end{2, 1, "error", std::nullopt, std::string("boom"), std::nullopt, 0},
          heartbeat_reply{12, 3},
          warm{},
          batch{{text{3, 1, "a"}, texts{4, 3, {"x", "y"}}, event{3, 2, "{}"}, text{4, 1, "b"}, ask{3, 3, 2, "clarify", "{}", 1},
                 notify{4, 2, "{}", 5}, turn_end{3, 4, "complete", std::string("{}"), std::nullopt, std::nullopt, 2}}}};
}

std::vector<to_worker> sample_to_worker() {
  return {create_session{1, 2, "s1", "work", "m", "p"}, prepare_turn{3, 2}, start_turn{4, 2, "run-9", R"({"message": "hi"})", "go right", true},
          interrupt_turn{5, 2, "\"stop\""}, steer_turn{6, 2, "go left"}, release_session{2},
          resolve_gateway{7, "s1", "once", "req-1", "tok-1"}, session_call{8, 2, "title", "{}"}, profile_call{9, "work", "mcp", "{}"},
          answer{4, 1, "deny"}, committed{4, 10}, shutdown{}, heartbeat{12},
          attach{std::string(64, 'a'), frames_version}, resume{7, 130}, drop_turn{8}};
}

} // namespace

TEST_CASE("worker frames: every kind round-trips, both ways", "[worker]") {
  for (const auto& f : sample_from_worker()) {
    std::string wire = encode(f);
    uint32_t n = (uint32_t(uint8_t(wire[0])) << 24) | (uint32_t(uint8_t(wire[1])) << 16) |
                 (uint32_t(uint8_t(wire[2])) << 8) | uint32_t(uint8_t(wire[3]));
    REQUIRE(n == wire.size() - 4);
    auto back = decode_from_worker(body_of(wire));
    REQUIRE(back.index() == f.index());
    REQUIRE(encode(back) == wire);
  }
  for (const auto& f : sample_to_worker()) {
    std::string wire = encode(f);
    auto back = decode_to_worker(body_of(wire));
    REQUIRE(back.index() == f.index());
    REQUIRE(encode(back) == wire);
  }
  auto t = std::get<text>(decode_from_worker(body_of(encode(from_worker{text{1, 1, "a\xe2\x82\xac"}}))));
  REQUIRE(t.text == "a\xe2\x82\xac");
  auto e = std::get<turn_end>(decode_from_worker(body_of(encode(from_worker{sample_from_worker()[12]}))));
  REQUIRE(!e.result);
  REQUIRE(e.error == std::string("boom"));
}

TEST_CASE("worker frames: what a worker holds reaches a re-attaching daemon whole", "[worker]") {
  auto sent = std::get<attached>(sample_from_worker()[1]);
  auto got = std::get<attached>(decode_from_worker(body_of(encode(from_worker{sent}))));
  REQUIRE(got.who.pid == 42);
  REQUIRE(got.who.version == frames_version);
  REQUIRE(got.who.agent_version == "0.21.0");
  REQUIRE(got.warm);
  REQUIRE(got.req == 17);
  REQUIRE(got.sessions.size() == 2);
  REQUIRE(got.sessions[1].session_id == "s\"2");
  REQUIRE(got.turns.size() == 2);
  REQUIRE(got.turns[0].run == "run-1");
  REQUIRE(got.turns[0].seq == 130);
  REQUIRE(!got.turns[0].ended);
  REQUIRE(got.turns[1].ended);
  REQUIRE(got.asks.size() == 1);
  REQUIRE(got.asks[0].kind == "approval");
  REQUIRE(got.asks[0].waited_s == 12.5);
  // Each held item is checked like a frame: a missing or mistyped field is a corrupt stream.
  for (const char* bad : {R"({"t": "attached", "pid": 1, "version": 2, "python": "", "python_version": "", "agent_root": "",
                             "agent_version": "", "error": "", "warm": true, "req": 0, "sessions": [{"handle": 1}],
                             "turns": [], "asks": []})",
                          R"({"t": "attached", "pid": 1, "version": 2, "python": "", "python_version": "", "agent_root": "",
                             "agent_version": "", "error": "", "warm": true, "req": 0, "sessions": [], "turns": [3],
                             "asks": []})",
                          R"({"t": "attached", "pid": 1, "version": 2, "python": "", "python_version": "", "agent_root": "",
                             "agent_version": "", "error": "", "warm": true, "req": 0, "sessions": [], "turns": []})",
                          R"({"t": "resume", "turn": 1})", R"({"t": "attach", "secret": 5, "version": 2})"}) {
    bool worker_side = std::string(bad).find("attached") != std::string::npos;
    if (worker_side)
      REQUIRE_THROWS_AS(decode_from_worker(bad), frame_error);
    else
      REQUIRE_THROWS_AS(decode_to_worker(bad), frame_error);
  }
  REQUIRE(compatible_version(frames_version));
  REQUIRE(!compatible_version(1));
}

TEST_CASE("worker frames: a batch keeps its frames' order, kinds and seq", "[worker]") {
  batch sent;
  for (uint64_t i = 1; i <= 50; ++i) {
    if (i % 7 == 0)
      sent.frames.push_back(event{i % 2, i, "{\"n\": " + std::to_string(i) + "}"});
    else if (i % 5 == 0)
      sent.frames.push_back(texts{i % 2, i, {"t" + std::to_string(i), "u"}});
    else
      sent.frames.push_back(text{i % 2, i, "d" + std::to_string(i) + " "});
  }
  sent.frames.push_back(turn_end{1, 51, "complete", std::nullopt, std::nullopt, std::nullopt, 0});
  auto back = std::get<batch>(decode_from_worker(body_of(encode(from_worker{sent}))));
  REQUIRE(back.frames.size() == sent.frames.size());
  for (size_t i = 0; i < sent.frames.size(); ++i) {
    REQUIRE(back.frames[i].index() == sent.frames[i].index());
    std::visit([&](const auto& got) {
      using T = std::decay_t<decltype(got)>;
      const auto& want = std::get<T>(sent.frames[i]);
      REQUIRE(got.turn == want.turn);
      REQUIRE(got.seq == want.seq);
      if constexpr (std::is_same_v<T, text>)
        REQUIRE(got.text == want.text);
      if constexpr (std::is_same_v<T, texts>)
        REQUIRE(got.texts == want.texts);
      if constexpr (std::is_same_v<T, event>)
        REQUIRE(got.json == want.json);
    }, back.frames[i]);
  }
  // Only a turn's frames go in a batch: not a reply, a ready, or another batch.
  for (const char* bad : {R"({"t": "batch"})", R"({"t": "batch", "frames": {}})", R"({"t": "batch", "frames": [1]})",
                          R"({"t": "batch", "frames": [{"t": "heartbeat_reply", "beat": 1, "unacknowledged": 0}]})",
                          R"({"t": "batch", "frames": [{"t": "batch", "frames": []}]})",
                          R"({"t": "batch", "frames": [{"t": "text", "turn": 1, "seq": 1}]})"})
    REQUIRE_THROWS_AS(decode_from_worker(bad), frame_error);
}

TEST_CASE("worker frames: the reader cuts a stream at frame boundaries, however it arrives", "[worker]") {
  std::string stream;
  for (const auto& f : sample_from_worker())
    stream += encode(f);
  for (size_t chunk : {size_t(1), size_t(3), size_t(7), size_t(64), stream.size()}) {
    frame_reader r;
    size_t frames = 0;
    for (size_t i = 0; i < stream.size(); i += chunk) {
      r.feed(stream.data() + i, std::min(chunk, stream.size() - i));
      while (auto body = r.next()) {
        REQUIRE(decode_from_worker(*body).index() == sample_from_worker()[frames].index());
        ++frames;
      }
    }
    REQUIRE(frames == sample_from_worker().size());
    REQUIRE(r.buffered() == 0);
  }
}

TEST_CASE("worker frames: a truncated frame is never handed out", "[worker]") {
  std::string wire = encode(from_worker{sample_from_worker()[5]});
  for (size_t cut = 0; cut < wire.size(); ++cut) {
    frame_reader r;
    r.feed(wire.data(), cut);
    REQUIRE(!r.next());
  }
  // A body cut short and relabelled with its shorter length is not a frame either.
  for (size_t cut = 0; cut + 4 < wire.size(); ++cut)
    REQUIRE_THROWS_AS(decode_from_worker(wire.substr(4, cut)), frame_error);
}

TEST_CASE("worker frames: garbage, wrong kinds and wrong types are refused", "[worker]") {
  for (const char* bad : {"", "{", "[]", "42", "null", "\"text\"", "{}", R"({"t": 5})", R"({"t": "nope"})",
                          R"({"t": "text", "turn": 1, "seq": 1})", R"({"t": "text", "turn": -1, "seq": 1, "text": ""})",
                          R"({"t": "text", "turn": 1.5, "seq": 1, "text": ""})",
                          R"({"t": "text", "turn": 1, "seq": 1, "text": 3})",
                          R"({"t": "texts", "turn": 1, "seq": 1, "texts": []})",
                          R"({"t": "texts", "turn": 1, "seq": 1, "texts": "a"})",
                          R"({"t": "texts", "turn": 1, "seq": 1, "texts": ["a", 2]})",
                          R"({"t": "texts", "turn": 1, "seq": 1})",
                          R"({"t": "reply", "req": 1, "ok": "yes", "value": "", "error_type": "", "error": ""})",
                          R"({"t": "ask", "turn": 1, "seq": 1, "ask": 1, "kind": "approval", "request": "", "timeout_s": "x"})",
                          R"({"t": "turn_end", "turn": 1, "seq": 1, "status": "complete", "result": 1, "error": null, "history": null, "message_count": 0})",
                          R"({"t": "create_session", "req": 1})", "\xff\xfe"})
    REQUIRE_THROWS_AS(decode_from_worker(bad), frame_error);
  // A daemon-bound kind is not a worker-bound one.
  REQUIRE_THROWS_AS(decode_to_worker(body_of(encode(from_worker{text{1, 1, "x"}}))), frame_error);
  frame_reader r;
  const char huge[4] = {'\x7f', '\xff', '\xff', '\xff'};
  r.feed(huge, 4);
  REQUIRE_THROWS_AS(r.next(), frame_error);
}

TEST_CASE("worker frames: random bytes never crash the reader or decoder", "[worker]") {
  std::mt19937 rng(14);
  std::string valid = encode(from_worker{sample_from_worker()[7]});
  int decoded = 0, refused = 0;
  for (int round = 0; round < 2000; ++round) {
    std::string bytes = valid;
    // Flip a few bytes of a valid frame (the length too, sometimes).
    for (int k = 0; k < 1 + round % 4; ++k)
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    frame_reader r;
    r.feed(bytes.data(), bytes.size());
    try {
      while (auto body = r.next()) {
        (void)decode_from_worker(*body);
        ++decoded;
      }
    } catch (const frame_error&) {
      ++refused;
    }
    // Whatever the bytes, the reader holds no more than it was given.
    REQUIRE(r.buffered() <= bytes.size());
  }
  // Damage is told apart from frames that survive it: both happen.
  CHECK(decoded > 0);
  CHECK(refused > 0);
}

TEST_CASE("worker frames: a frame over the part size goes in parts and arrives whole", "[worker]") {
  std::string big(size_t{max_part_bytes} * 2 + 5, 'x');
  std::string wire = encode(from_worker{text{1, 1, big}}) + encode(from_worker{text{1, 2, "next"}});
  uint32_t first = (uint32_t(uint8_t(wire[0])) << 24) | (uint32_t(uint8_t(wire[1])) << 16) |
                   (uint32_t(uint8_t(wire[2])) << 8) | uint32_t(uint8_t(wire[3]));
  REQUIRE((first & more_parts) != 0);
  REQUIRE((first & ~more_parts) == max_part_bytes);
  frame_reader r;
  std::vector<std::string> bodies;
  for (size_t at = 0; at < wire.size(); at += 1 << 20) { // as a socket hands it over
    r.feed(wire.data() + at, std::min<size_t>(1 << 20, wire.size() - at));
    while (auto body = r.next())
      bodies.push_back(std::move(*body));
  }
  REQUIRE(bodies.size() == 2);
  CHECK(std::get<text>(decode_from_worker(bodies[0])).text == big);
  CHECK(std::get<text>(decode_from_worker(bodies[1])).text == "next");
  CHECK(r.buffered() == 0);
}

TEST_CASE("worker frames: one part may not announce more than the part size", "[worker]") {
  frame_reader r;
  uint32_t n = max_part_bytes + 1;
  const char head[4] = {char(n >> 24), char(n >> 16), char(n >> 8), char(n)};
  r.feed(head, 4);
  REQUIRE_THROWS_AS(r.next(), frame_error);
  frame_reader empty_part;
  const char more_but_empty[4] = {'\x80', 0, 0, 0};
  empty_part.feed(more_but_empty, 4);
  REQUIRE_THROWS_AS(empty_part.next(), frame_error);
}

// Version 4: a worker sends a turn's result and history raw, after the
// frame's object; the daemon reads them as the JSON texts a version 3
// worker sent as strings.
TEST_CASE("worker frames: raw fields after the object decode as their JSON text", "[worker]") {
  std::string result = R"({"final_response": "h\u00e9 \"q\"", "messages": [1, 2]})";
  std::string body = R"({"t": "turn_end", "turn": 3, "seq": 9, "status": "complete", "error": null, )"
                     R"("message_count": 2, "raw": [["result", )" +
                     std::to_string(result.size()) + R"(], ["history", 6]]})" + "\n" + result + "[1, 2]";
  auto end = std::get<turn_end>(decode_from_worker(body));
  // Taking the body's buffer for the last field reads the same.
  auto taken = std::get<turn_end>(decode_taking(std::string(body)));
  CHECK(taken.result == end.result);
  CHECK(taken.history == end.history);
  CHECK(taken.message_count == end.message_count);
  CHECK(end.turn == 3);
  CHECK(end.seq == 9);
  CHECK(end.result == result);
  CHECK(end.history == std::string("[1, 2]"));
  CHECK(!end.error);
  CHECK(end.message_count == 2);
  // What it encodes again is a plain version 3 frame (the daemon never sends raw fields).
  auto again = std::get<turn_end>(decode_from_worker(body_of(encode(from_worker{end}))));
  CHECK(again.result == result);
  CHECK(again.history == std::string("[1, 2]"));
}

// The last raw field takes the frame's buffer: the bytes before it (the
// history, here 8 MB) are moved out of its way, and the pages they leave
// behind must not stay resident while the result waits to be written.
TEST_CASE("worker frames: a big last raw field does not keep the frame's other bytes", "[worker]") {
  const std::string history = "[\"" + std::string(8u << 20, 'h') + "\"]";
  const std::string result = "{\"r\": \"" + std::string(8u << 20, 'r') + "\"}";
  std::string body = R"({"t": "turn_end", "turn": 1, "seq": 2, "status": "complete", "error": null, )"
                     R"("message_count": 1, "raw": [["history", )" +
                     std::to_string(history.size()) + R"(], ["result", )" + std::to_string(result.size()) +
                     "]]}\n" + history + result;
  auto end = std::get<turn_end>(decode_taking(std::move(body)));
  REQUIRE(end.result == result);
  REQUIRE(end.history == history);
  std::string& taken = *end.result;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto start = reinterpret_cast<uintptr_t>(taken.data());
  uintptr_t from = (start + taken.size() + 1 + page - 1) & ~(page - 1);
  uintptr_t to = (start + taken.capacity()) & ~(page - 1);
  REQUIRE(to - from >= (4u << 20)); // the history's place, at least half of it in whole pages
  std::vector<unsigned char> resident((to - from) / page);
  REQUIRE(::mincore(reinterpret_cast<void*>(from), to - from, resident.data()) == 0);
  CHECK(std::count_if(resident.begin(), resident.end(), [](unsigned char c) { return c & 1; }) == 0);
  // The string is whole and can still grow into that space.
  taken.append(1u << 20, 'z');
  CHECK(taken.compare(0, result.size(), result) == 0);
  CHECK(taken.find_first_not_of('z', result.size()) == std::string::npos);
}

TEST_CASE("worker frames: raw fields that do not add up are refused", "[worker]") {
  const std::string head = R"({"t": "turn_end", "turn": 1, "seq": 1, "status": "complete", "error": null, )"
                           R"("history": null, "message_count": 0)";
  for (const std::string& bad : {head + "}\n{}",                                      // bytes but no raw list
                                head + R"(, "raw": [["result", 5]]})" + "\n{}",        // past the end
                                head + R"(, "raw": [["result", 1]]})" + "\n{}",        // bytes left over
                                head + R"(, "raw": [["t", 2]]})" + "\n{}",             // the kind itself
                                head + R"(, "raw": [["result"]]})" + "\n{}",           // not a pair
                                head + R"(, "raw": [["result", 3]]})" + "\n\"\xff\""}) // not UTF-8
    REQUIRE_THROWS_AS(decode_from_worker(bad), frame_error);
}

namespace {

// A streaming turn's frames as the worker's json.dumps writes them (the
// daemon's own encoder leaves out the spaces): texts, and now and then an
// event (a turn's first one rides in a batch with its first texts).
struct streamed {
  std::string body;
  from_worker frame;
};

streamed random_stream_body(std::mt19937& rng) {
  static const std::vector<std::string> pieces = {
    "a", "word ", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\"", "\\", "/", "\n", "\t", "\r", "\b", "\f",
    "\x7f", std::string(40, 'x')};
  static const std::vector<std::string> rare = {"\x01", "\x1f"}; // json.dumps writes \u0001, \u001f
  auto text = [&] {
    std::string s;
    for (size_t k = 0, m = rng() % 6; k < m; ++k)
      s += rng() % 100 == 0 ? rare[rng() % rare.size()] : pieces[rng() % pieces.size()];
    return s;
  };
  auto one = [&]() -> turn_frame {
    uint64_t turn = rng() % 3 == 0 ? uint64_t{rng()} << 31 : rng() % 100, seq = rng() % 1000;
    if (rng() % 5 == 0)
      return event{turn, seq, R"({"event": ")" + text() + R"("})"};
    texts t{turn, seq, {}};
    for (size_t i = 0, n = 1 + rng() % 5; i < n; ++i)
      t.texts.push_back(text());
    return t;
  };
  auto as_json = [](const turn_frame& f) {
    if (auto* e = std::get_if<event>(&f))
      return hb::protocol::json{{"t", "event"}, {"turn", e->turn}, {"seq", e->seq}, {"json", e->json}};
    const auto& t = std::get<texts>(f);
    return hb::protocol::json{{"t", "texts"}, {"turn", t.turn}, {"seq", t.seq}, {"texts", t.texts}};
  };
  if (rng() % 4 == 0) {
    turn_frame f = one();
    return {hb::protocol::dumps(as_json(f)), std::visit([](auto& x) { return from_worker{x}; }, f)};
  }
  batch b;
  auto frames = hb::protocol::json::array();
  for (size_t i = 0, n = 1 + rng() % 4; i < n; ++i) {
    turn_frame f = one();
    frames.push_back(as_json(f));
    b.frames.push_back(f);
  }
  return {hb::protocol::dumps(hb::protocol::json{{"t", "batch"}, {"frames", frames}}), b};
}

} // namespace

TEST_CASE("worker frames: streamed texts and events take the fast way and decode as the general decoder does", "[worker]") {
  std::mt19937 rng(23);
  int quick = 0, general = 0;
  for (int round = 0; round < 5000; ++round) {
    auto [body, frame] = random_stream_body(rng);
    auto fast = decode_stream_quickly(body);
    // The general decoder is the oracle; the frame the body was made from too.
    REQUIRE(encode(decode_from_worker_generally(body)) == encode(frame));
    REQUIRE(encode(decode_from_worker(body)) == encode(frame));
    if (!fast) {
      // Only a control character escaped as \u00XX is left to the general way.
      REQUIRE(body.find("\\u00") != std::string::npos);
      ++general;
      continue;
    }
    ++quick;
    REQUIRE(encode(*fast) == encode(frame));
  }
  CHECK(quick > 3000);
  CHECK(general > 0);
  // A turn's start as the worker sends it (test_worker_python holds the
  // worker to this spelling): its first event and texts in one batch.
  auto start = decode_stream_quickly(R"({"t": "batch", "frames": [{"t": "event", "turn": 7, "seq": 1, )"
                                     R"("json": "{\"event\": \"x\"}"}, )"
                                     R"({"t": "texts", "turn": 7, "seq": 2, "texts": ["d0 ", "d1 "]}]})");
  REQUIRE(start);
  const auto& frames = std::get<batch>(*start).frames;
  REQUIRE(frames.size() == 2);
  CHECK(std::get<event>(frames[0]).json == R"({"event": "x"})");
  CHECK(std::get<texts>(frames[1]).texts == std::vector<std::string>{"d0 ", "d1 "});
}

TEST_CASE("worker frames: a damaged stream body decodes on the fast way only as the general decoder would", "[worker]") {
  std::mt19937 rng(29);
  int refused_quickly = 0, accepted = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string body = random_stream_body(rng).body;
    for (int k = 0, n = 1 + round % 3; k < n; ++k) {
      size_t at = rng() % (body.size() + 1);
      switch (rng() % 3) {
        case 0: if (at < body.size()) body[at] = "0123456789 ,:[]{}\"\\\x80\xc3t-u"[rng() % 20]; break;
        case 1: body.insert(at, 1, " 0\"\\,]}\n\xff"[rng() % 9]); break;
        default: if (at < body.size()) body.erase(at, 1);
      }
    }
    auto fast = decode_stream_quickly(body);
    if (!fast) {
      ++refused_quickly;
      continue; // the general decoder takes it from here, as it always did
    }
    ++accepted;
    // Whatever the fast way accepts, the general decoder accepts as the same frame.
    from_worker expected;
    REQUIRE_NOTHROW(expected = decode_from_worker_generally(body));
    REQUIRE(encode(*fast) == encode(expected));
  }
  CHECK(accepted > 100); // damage that leaves a valid frame (a digit for a digit, an escape's letter)
  CHECK(refused_quickly > 10000);
}
