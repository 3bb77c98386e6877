#include "bridge/tmux/tui_screen.hpp"

#include <algorithm>
#include <cctype>
#include <regex>
#include <vector>

namespace hb::bridge {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      out.push_back(line);
      line.clear();
    } else if (c != '\r') {
      line += c;
    }
  }
  out.push_back(line);
  return out;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

std::string rtrim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  return s;
}

// A full-width rule of the input area: nothing but "─" (U+2500), at least 20.
bool is_rule(const std::string& line) {
  std::string s = rtrim(line);
  static const std::string bar = "─";
  if (s.size() < 20 * bar.size() || s.size() % bar.size() != 0)
    return false;
  for (size_t i = 0; i < s.size(); i += bar.size())
    if (s.compare(i, bar.size(), bar) != 0)
      return false;
  return true;
}

// The last two rules, the lower one below the upper with the prompt
// right after the upper one. npos when the screen has no input area.
std::pair<size_t, size_t> input_rules(const std::vector<std::string>& lines) {
  size_t lower = std::string::npos;
  for (size_t i = lines.size(); i-- > 0;) {
    if (!is_rule(lines[i]))
      continue;
    if (lower == std::string::npos) {
      lower = i;
      continue;
    }
    if (i + 1 < lower && lines[i + 1].find("❯") != std::string::npos)
      return {i, lower};
    lower = i; // a rule without the prompt below it: look further up
  }
  return {std::string::npos, std::string::npos};
}

constexpr const char* running_placeholder = "msg=interrupt";

} // namespace

tui_screen read_tui_screen(const std::string& pane) {
  tui_screen screen;
  auto lines = lines_of(pane);
  auto [upper, lower] = input_rules(lines);
  if (upper == std::string::npos)
    return screen;
  screen.input_found = true;
  const std::string& first = lines[upper + 1];
  static const std::string arrow = "❯";
  size_t at = first.find(arrow);
  std::string before = trim(first.substr(0, at));
  // Icons the TUI puts before ❯ for its states; a profile name ("coder ❯")
  // is text, not a state. All but ⚕ mean the turn waits for an answer:
  // ⚠ an approval, ? a clarify question (✎ its free-text answer), 🔐 🔑 a
  // sudo password or a secret.
  for (const char* icon : {"⚕", "⚠", "?", "✎", "🔐", "🔑"}) {
    std::string i(icon);
    if (before.size() >= i.size() && before.compare(before.size() - i.size(), i.size(), i) == 0) {
      screen.busy = true;
      screen.approval = i == "⚠";
      screen.asking = i != "⚕";
      screen.typing_answer = i == "✎";
    }
  }
  std::string rest = first.substr(at + arrow.size());
  if (!rest.empty() && rest[0] == ' ')
    rest.erase(0, 1);
  rest = rtrim(rest);
  if (rest.rfind(running_placeholder, 0) == 0) {
    screen.busy = true;
    rest.clear();
  }
  std::vector<std::string> draft{rest};
  for (size_t i = upper + 2; i < lower; ++i)
    draft.push_back(rtrim(lines[i]));
  while (!draft.empty() && draft.back().empty() && draft.size() > 1)
    draft.pop_back();
  for (size_t i = 0; i < draft.size(); ++i)
    screen.draft += (i ? "\n" : "") + draft[i];
  screen.draft_lines = screen.draft.empty() ? 0 : static_cast<int>(draft.size());
  return screen;
}

std::string settle_view(const std::string& pane) {
  auto lines = lines_of(pane);
  auto [upper, lower] = input_rules(lines);
  if (upper != std::string::npos) {
    size_t status = upper;
    while (status-- > 0 && trim(lines[status]).empty()) {
    }
    if (status < upper)
      lines.erase(lines.begin() + static_cast<long>(status));
  }
  // "(57s)" (an approval's countdown), and hermes 0.20's live tool line
  // "(  4.5s · ↓ 5 tok)", whose clock ticks every tenth of a second: a pane
  // that changes only there has settled.
  static const std::regex countdown(R"(\(\s*\d+(\.\d+)?s\b[^)]*\))");
  std::string out;
  for (const auto& line : lines)
    out += std::regex_replace(line, countdown, "(s)") + "\n";
  return out;
}

bool collapses_as_paste(const std::string& text) {
  size_t breaks = 0, points = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80)
      ++points;
    if (c == '\n' || (c == '\r' && !(i + 1 < text.size() && text[i + 1] == '\n')))
      ++breaks;
  }
  return breaks >= 5 || points >= 2000;
}

} // namespace hb::bridge
