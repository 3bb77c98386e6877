#include "app/tool_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <utility>

namespace hb::app {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    seconds = 0;
  char buf[48];
  if (std::llround(seconds * 100) < 1000) {
    std::snprintf(buf, sizeof buf, "%.2fs", seconds);
    return buf;
  }
  if (std::llround(seconds * 10) < 600) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
    return buf;
  }
  auto whole = static_cast<long long>(std::llround(seconds));
  if (whole < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", whole / 60, whole % 60);
  else if (whole < 86400)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", whole / 3600, whole % 3600 / 60);
  else
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", whole / 86400, whole % 86400 / 3600);
  return buf;
}

namespace {

// Reads exactly n digits at text[pos...]; advances pos.
bool digits(std::string_view text, size_t& pos, size_t n, int& out) {
  if (pos + n > text.size())
    return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = text[pos + i];
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  pos += n;
  return true;
}

std::optional<double> plain_number(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  bool dot = false, digit = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9')
      digit = true;
    else if (c == '.' && !dot)
      dot = true;
    else if (!(c == '-' && i == 0))
      return std::nullopt;
  }
  if (!digit)
    return std::nullopt;
  return std::strtod(std::string(text).c_str(), nullptr);
}

} // namespace

std::optional<double> parse_time(std::string_view text) {
  while (!text.empty() && text.front() == ' ')
    text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ')
    text.remove_suffix(1);
  if (auto n = plain_number(text))
    return n;

  size_t pos = 0;
  std::tm tm{};
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  double fraction = 0;
  if (!digits(text, pos, 4, year) || pos >= text.size() || text[pos++] != '-' ||
      !digits(text, pos, 2, month) || pos >= text.size() || text[pos++] != '-' ||
      !digits(text, pos, 2, day))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > 31)
    return std::nullopt;
  if (pos < text.size() && (text[pos] == 'T' || text[pos] == 't' || text[pos] == ' ')) {
    ++pos;
    if (!digits(text, pos, 2, hour) || pos >= text.size() || text[pos++] != ':' ||
        !digits(text, pos, 2, minute))
      return std::nullopt;
    if (pos < text.size() && text[pos] == ':') {
      ++pos;
      if (!digits(text, pos, 2, second))
        return std::nullopt;
      if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
        size_t start = ++pos;
        double scale = 0.1;
        while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
          fraction += (text[pos] - '0') * scale;
          scale /= 10;
          ++pos;
        }
        if (pos == start)
          return std::nullopt;
      }
    }
    if (hour > 23 || minute > 59 || second > 60)
      return std::nullopt;
  }
  bool has_zone = false;
  long offset = 0; // seconds east of UTC
  if (pos < text.size()) {
    char z = text[pos];
    if ((z == 'Z' || z == 'z') && pos + 1 == text.size()) {
      has_zone = true;
      ++pos;
    } else if (z == '+' || z == '-') {
      ++pos;
      int oh = 0, om = 0;
      if (!digits(text, pos, 2, oh))
        return std::nullopt;
      if (pos < text.size() && text[pos] == ':')
        ++pos;
      if (pos < text.size() && !digits(text, pos, 2, om))
        return std::nullopt;
      if (oh > 23 || om > 59)
        return std::nullopt;
      has_zone = true;
      offset = (z == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
    }
  }
  if (pos != text.size())
    return std::nullopt;

  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  std::time_t t;
  if (has_zone) {
    t = ::timegm(&tm);
    t -= offset;
  } else {
    tm.tm_isdst = -1;
    t = std::mktime(&tm);
  }
  if (tm.tm_mday != day) // normalised away: 2024-02-31 and the like
    return std::nullopt;
  return static_cast<double>(t) + fraction;
}

std::string format_local_time(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(std::floor(unix_seconds));
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string format_local_clock(double unix_seconds) {
  double whole = std::floor(unix_seconds);
  std::time_t t = static_cast<std::time_t>(whole);
  int ms = std::clamp(static_cast<int>((unix_seconds - whole) * 1000), 0, 999);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%s.%03d", buf, ms);
  return out;
}

size_t display_width(std::string_view utf8) {
  size_t n = 0;
  for (unsigned char c : utf8)
    if ((c & 0xC0) != 0x80)
      ++n;
  return n;
}

std::string render_table(const std::vector<std::string>& headers,
                         const std::vector<std::vector<std::string>>& given_rows,
                         const std::vector<bool>& right) {
  // Session ids, profiles and models are whatever a client sent.
  std::vector<std::vector<std::string>> rows = given_rows;
  for (auto& row : rows)
    for (auto& cell : row)
      cell = visible_text(cell);
  std::vector<size_t> width(headers.size());
  for (size_t c = 0; c < headers.size(); ++c)
    width[c] = display_width(headers[c]);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], display_width(row[c]));
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : std::string();
      size_t pad = width[c] - display_width(cell);
      bool last = c + 1 == width.size();
      if (c > 0)
        text += "  ";
      if (c < right.size() && right[c])
        text += std::string(pad, ' ') + cell;
      else
        text += cell + (last ? "" : std::string(pad, ' '));
    }
    out += text + "\n";
  };
  line(headers);
  for (const auto& row : rows)
    line(row);
  return out;
}

std::string clip_text(const std::string& text, size_t max_lines, size_t max_bytes) {
  size_t lines = 0, cut = text.size();
  for (size_t i = 0; i < text.size(); ++i) {
    if (i >= max_bytes) {
      cut = i;
      break;
    }
    if (text[i] == '\n' && ++lines >= max_lines) {
      cut = i;
      break;
    }
  }
  if (cut >= text.size())
    return text;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut; // never split a character
  size_t rest_lines = 0;
  for (size_t i = cut; i < text.size(); ++i)
    rest_lines += text[i] == '\n';
  std::string out = text.substr(0, cut);
  out += "\n... (" + std::to_string(text.size() - cut) + " more bytes";
  if (rest_lines > 0)
    out += ", " + std::to_string(rest_lines) + " more lines";
  out += ")";
  return out;
}

namespace {

// The code point of the UTF-8 sequence at text[pos] and its length, or a
// length of 0 when the bytes there are not UTF-8 (overlong, a surrogate,
// beyond U+10FFFF, cut short).
std::pair<char32_t, size_t> decode_utf8(std::string_view text, size_t pos) {
  auto byte = [&](size_t i) { return pos + i < text.size() ? static_cast<unsigned char>(text[pos + i]) : 0u; };
  unsigned lead = byte(0);
  size_t len = lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3 : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
  if (len == 0)
    return {0, 0};
  // The second byte's range rules out overlong forms, surrogates and > U+10FFFF.
  unsigned low = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
  unsigned high = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
  if (byte(1) < low || byte(1) > high)
    return {0, 0};
  char32_t cp = lead & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t i = 1; i < len; ++i) {
    if ((byte(i) & 0xC0) != 0x80)
      return {0, 0};
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  return {cp, len};
}

bool hidden_format(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

} // namespace

std::string visible_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  char buf[12];
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      bool kept = c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7F) ||
                  (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n');
      if (kept) {
        out += static_cast<char>(c);
      } else {
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        out += buf;
      }
      ++i;
      continue;
    }
    auto [cp, len] = decode_utf8(text, i);
    if (len == 0) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
      ++i;
    } else if (hidden_format(cp)) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
      i += len;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string shell_quoted(std::string_view text) {
  std::string out = "'";
  for (char c : visible_text(text)) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

} // namespace hb::app
