// The frames a streaming turn mostly sends, `texts` and `event`, alone or
// in a `batch`, decoded straight into their structs. A general JSON parse
// built a document node and a string for every delta before they were
// moved out: the largest share of the daemon's CPU per streamed delta. A
// turn's first `event` rides in the same batch as its first texts, so a
// batch with events takes this way too (before it did not, and the general
// parse of such batches was most of the daemon's decoding in W3). This
// reads only the exact text the worker's encoder writes (json.dumps with
// its default separators, keys in the order worker_frames.py gives them);
// anything else, however valid, is left to the general decoder, which also
// words the errors. So what this accepts decodes to what the general
// decoder makes of it.
#include "bridge/worker/stream_decoder.hpp"

#include "protocol/json_text.hpp"

#include <charconv>

namespace hb::bridge::worker {

namespace {

class cursor {
public:
  explicit cursor(std::string_view text) : text_(text) {}

  bool done() const { return at_ == text_.size(); }

  bool literal(std::string_view expected) {
    if (text_.compare(at_, expected.size(), expected) != 0)
      return false;
    at_ += expected.size();
    return true;
  }

  // A non-negative integer as json.dumps writes one: no sign, no leading
  // zero, and short enough for uint64_t.
  bool unsigned_number(uint64_t& out) {
    size_t end = at_;
    while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9')
      ++end;
    size_t digits = end - at_;
    if (digits == 0 || digits > 19 || (digits > 1 && text_[at_] == '0'))
      return false;
    std::from_chars(text_.data() + at_, text_.data() + end, out); // 19 digits always fit
    at_ = end;
    return true;
  }

  // A string literal whose escapes are the short ones; a \u escape (a
  // control character, a lone surrogate) or a raw control character is left
  // to the general decoder. The contents must be UTF-8, as the general
  // decoder requires.
  bool string(std::string& out) {
    if (!literal("\""))
      return false;
    out.clear();
    for (;;) {
      size_t plain = at_;
      while (plain < text_.size()) {
        auto c = static_cast<unsigned char>(text_[plain]);
        if (c == '"' || c == '\\' || c < 0x20)
          break;
        ++plain;
      }
      out.append(text_.data() + at_, plain - at_);
      at_ = plain;
      if (at_ >= text_.size() || static_cast<unsigned char>(text_[at_]) < 0x20)
        return false;
      if (text_[at_] == '"') {
        ++at_;
        return protocol::is_valid_utf8(out);
      }
      if (at_ + 1 >= text_.size())
        return false;
      char unescaped;
      switch (text_[at_ + 1]) {
        case '"': unescaped = '"'; break;
        case '\\': unescaped = '\\'; break;
        case '/': unescaped = '/'; break;
        case 'b': unescaped = '\b'; break;
        case 'f': unescaped = '\f'; break;
        case 'n': unescaped = '\n'; break;
        case 'r': unescaped = '\r'; break;
        case 't': unescaped = '\t'; break;
        default: return false;
      }
      out += unescaped;
      at_ += 2;
    }
  }

private:
  std::string_view text_;
  size_t at_ = 0;
};

// `, "turn": N, "seq": N` after a frame's kind.
bool numbered(cursor& in, uint64_t& turn, uint64_t& seq) {
  return in.literal(R"(, "turn": )") && in.unsigned_number(turn) && in.literal(R"(, "seq": )") &&
         in.unsigned_number(seq);
}

// {"t": "texts", "turn": N, "seq": N, "texts": ["...", ...]} with at least one text.
bool texts_frame(cursor& in, texts& out) {
  if (!numbered(in, out.turn, out.seq) || !in.literal(R"(, "texts": [)"))
    return false;
  do {
    if (!in.string(out.texts.emplace_back()))
      return false;
  } while (in.literal(", "));
  return in.literal("]}");
}

// {"t": "event", "turn": N, "seq": N, "json": "..."}
bool event_frame(cursor& in, event& out) {
  return numbered(in, out.turn, out.seq) && in.literal(R"(, "json": )") && in.string(out.json) && in.literal("}");
}

bool stream_frame(cursor& in, turn_frame& out) {
  if (in.literal(R"({"t": "texts")"))
    return texts_frame(in, out.emplace<texts>());
  if (in.literal(R"({"t": "event")"))
    return event_frame(in, out.emplace<event>());
  return false;
}

} // namespace

std::optional<from_worker> decode_stream_quickly(std::string_view body) {
  cursor in(body);
  bool batched = in.literal(R"({"t": "batch", "frames": [)");
  batch all;
  do {
    if (!stream_frame(in, all.frames.emplace_back()))
      return std::nullopt;
  } while (batched && in.literal(", "));
  if ((batched && !in.literal("]}")) || !in.done())
    return std::nullopt;
  if (batched)
    return from_worker{std::move(all)};
  return std::visit([](auto& frame) { return from_worker{std::move(frame)}; }, all.frames.front());
}

} // namespace hb::bridge::worker
