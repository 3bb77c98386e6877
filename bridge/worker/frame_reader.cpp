// Cutting the byte stream between the daemon and a worker into frame bodies
// (FRAMES.md, "Framing"): frame_reader in frames.hpp.
#include "bridge/worker/frames.hpp"

#include <string>
#include <utility>

namespace hb::bridge::worker {

void frame_reader::feed(const char* data, size_t size) {
  drop_taken();
  buffer_.append(data, size);
}

void frame_reader::drop_taken() {
  if (start_ > 0 && start_ == buffer_.size()) {
    // After a big frame the buffer would keep its size until the next read,
    // or for the worker's whole life (a 100 MB turn's outcome): let it go.
    if (buffer_.capacity() > (4u << 20))
      std::string().swap(buffer_);
    else
      buffer_.clear();
    start_ = 0;
  } else if (start_ > (1u << 20) && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_); // what was handed out goes, without moving every byte per frame
    start_ = 0;
  }
}

// One allocation of the frame's size; each part is let go once copied, so
// the frame and its parts together stay about the frame's size.
std::string frame_reader::joined_parts() {
  std::string frame;
  frame.reserve(parts_bytes_);
  for (auto& part : parts_) {
    frame += part;
    std::string().swap(part);
  }
  parts_.clear();
  parts_bytes_ = 0;
  return frame;
}

std::optional<std::string> frame_reader::next() {
  for (;;) {
    if (buffer_.size() - start_ < 4)
      return std::nullopt;
    const auto* p = reinterpret_cast<const unsigned char*>(buffer_.data() + start_);
    uint32_t head = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
    uint32_t n = head & ~more_parts;
    bool more = (head & more_parts) != 0;
    if (n > max_part_bytes)
      throw frame_error("frame part length " + std::to_string(n) + " is over the limit");
    if (more && n == 0)
      throw frame_error("an empty frame part");
    if (buffer_.size() - start_ - 4 < n) {
      // Grow towards the announced size, but never more than double what has
      // arrived: the length of a corrupt frame must not reserve memory, and
      // a real big part should not end with a buffer twice its size.
      size_t need = start_ + 4 + size_t{n};
      size_t step = std::min(need, buffer_.size() * 2 + (size_t{1} << 20));
      if (step > buffer_.capacity())
        buffer_.reserve(step);
      return std::nullopt;
    }
    if (parts_bytes_ + n > max_frame_bytes)
      throw frame_error("frame of more than " + std::to_string(max_frame_bytes) + " bytes");
    if (more || !parts_.empty()) { // a part of a big frame: kept until its last
      parts_.push_back(buffer_.substr(start_ + 4, n));
      parts_bytes_ += n;
      start_ += 4 + n;
      drop_taken();
      if (more)
        continue;
      return joined_parts();
    }
    if (start_ == 0 && buffer_.size() == 4 + size_t{n}) { // the whole buffer: hand it over, no copy
      std::string part = std::move(buffer_);
      part.erase(0, 4);
      buffer_ = std::string();
      return part;
    }
    std::string part = buffer_.substr(start_ + 4, n);
    start_ += 4 + n;
    return part;
  }
}

} // namespace hb::bridge::worker
