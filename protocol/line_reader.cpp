#include "protocol/line_reader.hpp"

#include <algorithm>

namespace hb::protocol {

bool line_reader::feed(std::string_view bytes) {
  if (overflowed_)
    return false;
  buf_.append(bytes);
  // Only the part of the buffer that holds no newline yet counts against the cap.
  size_t nl = buf_.find('\n', scanned_);
  if (nl == std::string::npos && buf_.size() - start_ > max_) {
    overflowed_ = true;
    buf_.clear();
    start_ = scanned_ = 0;
    return false;
  }
  return true;
}

std::optional<std::string> line_reader::next_line() {
  size_t nl = buf_.find('\n', scanned_);
  if (nl == std::string::npos) {
    scanned_ = buf_.size();
    return std::nullopt;
  }
  if (nl - start_ > max_) {
    overflowed_ = true;
    buf_.clear();
    start_ = scanned_ = 0;
    return std::nullopt;
  }
  std::string line = buf_.substr(start_, nl - start_);
  start_ = scanned_ = nl + 1;
  if (start_ == buf_.size()) {
    buf_.clear();
    start_ = scanned_ = 0;
  }
  return line;
}

std::string_view line_reader::tail(size_t n) const {
  std::string_view held(buf_);
  held.remove_prefix(start_);
  return held.substr(held.size() - std::min(n, held.size()));
}

std::string line_reader::take_rest() {
  std::string rest = buf_.substr(start_);
  buf_.clear();
  start_ = scanned_ = 0;
  return rest;
}

} // namespace hb::protocol
