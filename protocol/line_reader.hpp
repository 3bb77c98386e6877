// NDJSON framing for one connection: bytes in, complete lines out, with a
// hard cap so a client cannot make the daemon buffer without bound.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace hb::protocol {

class line_reader {
public:
  explicit line_reader(size_t max_line_bytes) : max_(max_line_bytes) {}

  // Adds received bytes. Returns false once the buffered line exceeds the cap.
  bool feed(std::string_view bytes);
  // The next complete line (without its '\n'), if one has arrived.
  std::optional<std::string> next_line();
  // At EOF: whatever was sent without a final newline.
  std::string take_rest();

  // The cap may change between feeds (raised once a client has shown its
  // token); it applies from the next feed on.
  void set_max_line_bytes(size_t max_line_bytes) { max_ = max_line_bytes; }
  // The last `n` (or fewer) bytes buffered and not yet taken as lines.
  std::string_view tail(size_t n) const;

  bool overflowed() const { return overflowed_; }
  size_t buffered() const { return buf_.size() - start_; }
  size_t max_line_bytes() const { return max_; }

private:
  std::string buf_;
  size_t start_ = 0;
  size_t scanned_ = 0;
  size_t max_;
  bool overflowed_ = false;
};

} // namespace hb::protocol
