#include "bridge/tmux/pane_text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <string_view>

namespace hb::bridge {

std::vector<std::string> pane_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string line;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\r' || c == '\n') {
      lines.push_back(line);
      line.clear();
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n')
        ++i;
    } else {
      line += c;
    }
  }
  lines.push_back(line);
  return lines;
}

std::string strip_space(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
    ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
    --e;
  return s.substr(b, e - b);
}

std::string without_whitespace(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
  return out;
}

std::string ascii_lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

namespace {

size_t code_points(const std::string& s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string first_code_points(const std::string& s, size_t n) {
  size_t seen = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && seen++ == n)
      return s.substr(0, i);
  }
  return s;
}


// Box-drawing borders and selection marks around a panel line.
std::string unboxed(const std::string& line) {
  static const char* marks[] = {"│", "┃", "║", "❯", "›", ">", "|"};
  std::string s = strip_space(line);
  for (bool again = true; again;) {
    again = false;
    for (const char* m : marks) {
      std::string mark(m);
      if (s.compare(0, mark.size(), mark) == 0) {
        s = strip_space(s.substr(mark.size()));
        again = true;
      }
      if (s.size() >= mark.size() && s.compare(s.size() - mark.size(), mark.size(), mark) == 0) {
        s = strip_space(s.substr(0, s.size() - mark.size()));
        again = true;
      }
    }
  }
  return s;
}

// The choice a panel row offers, or empty for a row that is none.
std::string choice_for_label(const std::string& label) {
  std::string l = ascii_lower(label);
  if (l == "allow once")
    return "once";
  if (l == "allow for this session")
    return "session";
  if (l == "add to permanent allowlist")
    return "always";
  if (l == "deny")
    return "deny";
  if (l == "show full command")
    return "view";
  return {};
}

std::string cap(std::string s, size_t bytes) {
  if (s.size() <= bytes)
    return s;
  s.resize(bytes);
  while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80)
    s.pop_back(); // never end inside a UTF-8 sequence
  if (!s.empty() && (static_cast<unsigned char>(s.back()) & 0x80))
    s.pop_back();
  return s;
}

std::string rstripped(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.pop_back();
  return s;
}

// The box's text width, from its top border above the title (0: no box).
size_t box_text_width(const std::vector<std::string>& lines, size_t title) {
  for (size_t i = title + 1; i-- > 0 && i + 3 > title;) {
    if (lines[i].find("╭") == std::string::npos)
      continue;
    size_t bars = 0;
    for (size_t at = lines[i].find("─"); at != std::string::npos; at = lines[i].find("─", at + 1))
      ++bars;
    return bars >= 2 ? bars - 2 : 0;
  }
  return 0;
}

// Undoes the panel's wrapping: a row filled to the box's width was cut in a
// word; a shorter one ended at a blank that the padding swallowed.
std::string join_command_rows(const std::vector<std::string>& rows, size_t width) {
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string row = rstripped(rows[i]);
    if (i == 0) {
      out = strip_space(row);
      continue;
    }
    std::string prev = rstripped(rows[i - 1]);
    // Hermes wraps with textwrap: inside a word at the width, and after a
    // hyphen between letters (break_on_hyphens) anywhere.
    bool hyphen = prev.size() >= 2 && prev.back() == '-' && std::isalnum(static_cast<unsigned char>(prev[prev.size() - 2]));
    bool cut = width > 0 && (code_points(prev) >= width || hyphen);
    bool leading_blank = !row.empty() && row.front() == ' ';
    out += (cut || leading_blank || width == 0 ? "" : " ");
    out += width == 0 ? strip_space(row) : row;
  }
  return strip_space(out);
}

std::optional<approval_prompt> parse_panel(const std::vector<std::string>& lines, size_t title) {
  static const std::regex choice_re(
    R"((\d)\.\s*(Allow once|Allow for this session|Add to permanent allowlist|Deny|Show full command))",
    std::regex::icase);
  approval_prompt prompt;
  size_t width = box_text_width(lines, title);
  std::vector<std::string> command_rows;
  std::string description;
  bool in_choices = false, after_choices = false;
  for (size_t i = title + 1; i < lines.size(); ++i) {
    std::smatch m;
    std::string part = unboxed(lines[i]);
    std::string choice;
    std::string key;
    if (std::regex_search(lines[i], m, choice_re)) {
      choice = choice_for_label(m[2].str());
      key = m[1].str();
    } else {
      choice = choice_for_label(part); // an older build's row: the label alone
    }
    bool border = part.find("──") != std::string::npos || part.find("━━") != std::string::npos;
    if (!choice.empty() && !after_choices) {
      in_choices = true;
      if (lines[i].find("❯") != std::string::npos)
        prompt.selected = static_cast<int>(prompt.options.size());
      prompt.options.push_back({choice, key});
    } else if (!in_choices) {
      if (part.find("(choose Show full command)") != std::string::npos)
        prompt.truncated = true;
      else if (!part.empty() && !border)
        command_rows.push_back(width ? box_row(lines[i]) : part);
    } else if (border || lines[i].find("╰") != std::string::npos) {
      break; // the panel ended
    } else if (part.empty()) {
      after_choices = true;
    } else if (after_choices && lines[i].find("│") != std::string::npos) {
      description += (description.empty() ? "" : " ") + part; // below the choices, in the box
    } else {
      break;
    }
  }
  auto has = [&](const char* choice) {
    return std::any_of(prompt.options.begin(), prompt.options.end(),
                       [&](const auto& o) { return o.choice == choice; });
  };
  if (!has("once") || !has("deny"))
    return std::nullopt;
  prompt.command = cap(join_command_rows(command_rows, width), 1024);
  prompt.description = cap(description, 1024);
  return prompt;
}

std::optional<approval_prompt> parse_legacy(const std::vector<std::string>& lines, size_t at) {
  static const std::regex letters_re(R"(choice \[([a-z/]+)\]:)", std::regex::icase);
  std::smatch m;
  std::string line = lines[at];
  if (!std::regex_search(line, m, letters_re))
    return std::nullopt;
  approval_prompt prompt;
  prompt.legacy = true;
  for (size_t j = at; j-- > 0;) {
    std::string header = "dangerous command:";
    auto found = ascii_lower(lines[j]).find(header);
    if (found == std::string::npos)
      continue;
    // The header names the danger; the command is on the next line.
    prompt.description = cap(strip_space(lines[j].substr(found + header.size())), 1024);
    for (size_t k = j + 1; k < at; ++k) {
      if (!strip_space(lines[k]).empty()) {
        prompt.command = cap(strip_space(lines[k]), 1024);
        break;
      }
    }
    break;
  }
  for (char c : ascii_lower(m[1].str())) {
    if (c == 'o')
      prompt.options.push_back({"once", "o"});
    else if (c == 's')
      prompt.options.push_back({"session", "s"});
    else if (c == 'a')
      prompt.options.push_back({"always", "a"});
    else if (c == 'd')
      prompt.options.push_back({"deny", "d"});
  }
  // Pending while nothing is typed after it: an answer is echoed there.
  std::string rest = strip_space(line);
  bool pending = !rest.empty() && rest.back() == ':';
  return pending ? std::optional<approval_prompt>(prompt) : std::nullopt;
}

} // namespace

// Between a box's "│ " and " │", padding included: the command's rows are
// joined from these.
std::string box_row(const std::string& line) {
  static const std::string bar = "│";
  size_t open = line.find(bar);
  size_t close = line.rfind(bar);
  if (open == std::string::npos || close == open)
    return unboxed(line);
  std::string inner = line.substr(open + bar.size(), close - open - bar.size());
  if (!inner.empty() && inner.front() == ' ')
    inner.erase(0, 1);
  if (!inner.empty() && inner.back() == ' ')
    inner.pop_back();
  return inner;
}

std::string paste_payload(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 1);
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\r') {
      out += '\r';
      if (i + 1 < text.size() && text[i + 1] == '\n')
        ++i;
    } else if (c == '\n') {
      out += '\r';
    } else if (c == '\t' || c >= 0x20) {
      out += static_cast<char>(c);
    } // other control bytes are dropped
  }
  return out;
}

bool enter_continues_line(const std::string& text) {
  std::string_view rest(text);
  if (rest.size() >= 2 && rest.substr(rest.size() - 2) == "\r\n")
    rest.remove_suffix(2);
  else if (!rest.empty() && (rest.back() == '\n' || rest.back() == '\r'))
    rest.remove_suffix(1);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t'))
    rest.remove_suffix(1);
  return !rest.empty() && rest.back() == '\\';
}

std::string commit_needle(const std::string& text) {
  std::string fallback;
  std::string chosen;
  for (const auto& line : pane_lines(text)) {
    std::string s = strip_space(line);
    if (!s.empty())
      fallback = s;
    if (code_points(s) >= 4)
      chosen = s;
  }
  std::string needle;
  for (char c : first_code_points(chosen.empty() ? fallback : chosen, 24))
    needle += c == '\t' ? std::string("^I") : std::string(1, c);
  return needle;
}

std::string normalized_message(const std::string& text) {
  std::string out;
  auto lines = pane_lines(text);
  for (size_t i = 0; i < lines.size(); ++i)
    out += (i ? "\n" : "") + lines[i];
  return strip_space(out);
}

std::vector<std::string> approval_prompt::keys_for(const std::string& choice) const {
  auto find = [&](const std::string& c) {
    for (size_t i = 0; i < options.size(); ++i)
      if (options[i].choice == c)
        return static_cast<int>(i);
    return -1;
  };
  int at = choice == "view" ? -1 : find(choice);
  if (at < 0)
    at = find("deny");
  if (at < 0)
    return {};
  const auto& o = options[static_cast<size_t>(at)];
  if (legacy)
    return {o.key, "Enter"};
  if (!o.key.empty())
    return {o.key};
  std::vector<std::string> keys(static_cast<size_t>(std::abs(at - selected)), at > selected ? "Down" : "Up");
  keys.push_back("Enter");
  return keys;
}

std::vector<std::string> approval_prompt::view_keys() const {
  for (size_t i = 0; i < options.size(); ++i) {
    if (options[i].choice != "view")
      continue;
    if (!options[i].key.empty())
      return {options[i].key};
    int at = static_cast<int>(i);
    std::vector<std::string> keys(static_cast<size_t>(std::abs(at - selected)), at > selected ? "Down" : "Up");
    keys.push_back("Enter");
    return keys;
  }
  return {};
}

std::vector<std::string> approval_prompt::choices() const {
  std::vector<std::string> out;
  for (const auto& o : options)
    if (o.choice != "view")
      out.push_back(o.choice);
  return out;
}

std::optional<approval_prompt> parse_approval_prompt(const std::string& pane) {
  auto lines = pane_lines(pane);
  // The newest prompt is the one that waits: search from the bottom.
  for (size_t i = lines.size(); i-- > 0;) {
    std::string l = ascii_lower(lines[i]);
    if (l.find("choice [o/") != std::string::npos)
      return parse_legacy(lines, i);
    // The panel's title; a row that merely mentions it (a description, the
    // transcript) parses as no panel, and the search goes on upwards.
    if (lines[i].find("Dangerous Command") != std::string::npos &&
        l.find("dangerous command:") == std::string::npos)
      if (auto panel = parse_panel(lines, i))
        return panel;
  }
  return std::nullopt;
}

} // namespace hb::bridge
