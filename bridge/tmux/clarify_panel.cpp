#include "bridge/tmux/clarify_panel.hpp"

#include "bridge/tmux/pane_text.hpp"
#include "bridge/tmux/tui_screen.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <regex>

namespace hb::bridge {

namespace {

constexpr const char* title = "Hermes needs your input";
constexpr const char* open_ended_hint = "Type your answer in the prompt below, then press Enter.";
constexpr const char* truncation_marker = "… (question truncated)";
constexpr const char* recommended = "(recommended)";
constexpr size_t max_choices = 4; // hermes' clarify tool keeps the first four

// A choice as hermes compares it: stripped, "(Recommended)" dropped, any case.
std::string comparable(const std::string& text) {
  std::string s = ascii_lower(strip_space(text));
  std::string tag = recommended;
  if (s.size() >= tag.size() && s.compare(s.size() - tag.size(), tag.size(), tag) == 0)
    s = strip_space(s.substr(0, s.size() - tag.size()));
  return s;
}

// The key that acts on row `index` (0-based): 1-9, then 0 for the tenth.
std::string digit_for(size_t index) {
  return index < 9 ? std::to_string(index + 1) : "0";
}

// hermes' own flattening of a choice the model sent as an object.
std::string choice_text(const nlohmann::json& c) {
  if (c.is_string())
    return strip_space(c.get<std::string>());
  if (c.is_object()) {
    for (const char* key : {"label", "description", "text", "title"}) {
      auto it = c.find(key);
      if (it != c.end() && it->is_string() && !strip_space(it->get<std::string>()).empty())
        return strip_space(it->get<std::string>());
    }
    return {};
  }
  if (c.is_number() || c.is_boolean())
    return c.dump();
  return {};
}

std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (c == '\n' || c == '\r' || c == '\t')
      out += ' ';
    else if (u >= 0x20 && u != 0x7F)
      out += c;
  }
  return strip_space(out);
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> parts;
  std::string part;
  for (char c : text + ",") {
    if (c != ',') {
      part += c;
      continue;
    }
    if (!strip_space(part).empty())
      parts.push_back(strip_space(part));
    part.clear();
  }
  return parts;
}

} // namespace

std::optional<clarify_panel> parse_clarify_panel(const std::string& pane) {
  tui_screen screen = read_tui_screen(pane);
  bool choosing = screen.asking && !screen.approval && !screen.typing_answer;
  if (!screen.input_found || !(choosing || screen.typing_answer))
    return std::nullopt;
  auto lines = pane_lines(pane);
  size_t top = lines.size();
  for (size_t i = lines.size(); i-- > 0;)
    if (lines[i].find("╭") != std::string::npos && lines[i].find(title) != std::string::npos) {
      top = i;
      break;
    }
  if (top == lines.size())
    return std::nullopt;
  static const std::regex choice_row(R"(^(?:❯ |  )(\[[ x]\] )?[0-9 ]\. )");
  static const std::regex countdown(R"((?:to confirm|press Enter)\s+\((\d+)s\))");
  clarify_panel panel;
  panel.typing = screen.typing_answer;
  std::string question;
  bool in_choices = false;
  size_t i = top + 1;
  for (; i < lines.size() && lines[i].find("╰") == std::string::npos; ++i) {
    std::string row = box_row(lines[i]);
    std::smatch m;
    if (std::regex_search(row, m, choice_row)) {
      in_choices = true;
      panel.multi_select = panel.multi_select || m[1].matched;
    } else if (!in_choices && !strip_space(row).empty()) {
      question += (question.empty() ? "" : " ") + strip_space(row);
    }
  }
  for (; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_search(lines[i], m, countdown)) {
      panel.countdown_s = std::stoi(m[1].str());
      break;
    }
  }
  for (const char* marker : {open_ended_hint, truncation_marker}) {
    std::string cut = marker;
    auto at = question.rfind(cut);
    if (at != std::string::npos && at + cut.size() == question.size())
      question = strip_space(question.substr(0, at));
  }
  panel.question = question;
  return panel;
}

std::optional<clarify_call> clarify_call_in(const std::string& tool_calls_json) {
  auto calls = nlohmann::json::parse(tool_calls_json, nullptr, false);
  if (!calls.is_array())
    return std::nullopt;
  std::optional<clarify_call> found;
  for (const auto& call : calls) {
    if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
      continue;
    const auto& function = call["function"];
    if (function.value("name", std::string()) != "clarify")
      continue;
    nlohmann::json args = function.contains("arguments") ? function["arguments"] : nlohmann::json::object();
    if (args.is_string())
      args = nlohmann::json::parse(args.get<std::string>(), nullptr, false);
    if (!args.is_object())
      continue;
    clarify_call parsed;
    if (args.contains("question"))
      parsed.question = args["question"].is_string() ? args["question"].get<std::string>() : args["question"].dump();
    if (args.contains("choices") && args["choices"].is_array())
      for (const auto& c : args["choices"]) {
        std::string text = choice_text(c);
        if (!text.empty() && parsed.choices.size() < max_choices)
          parsed.choices.push_back(text);
      }
    parsed.multi_select = args.value("multi_select", false) && !parsed.choices.empty();
    found = std::move(parsed);
  }
  return found;
}

bool panel_shows(const clarify_panel& panel, const clarify_call& call) {
  std::string shown = without_whitespace(panel.question);
  std::string asked = without_whitespace(call.question);
  if (shown.empty())
    return true; // a panel too short for its question shows only the choices
  return asked.compare(0, shown.size(), shown) == 0;
}

clarify_keys keys_for_answer(const clarify_panel& panel, const clarify_call& call, const std::string& answer) {
  clarify_keys out;
  std::string text = one_line(answer);
  if (text.empty())
    return out;
  if (panel.typing) { // open-ended, or "Other" already picked
    out.typed = text;
    return out;
  }
  auto index_of = [&](const std::string& part) -> std::optional<size_t> {
    for (size_t i = 0; i < call.choices.size(); ++i)
      if (comparable(call.choices[i]) == comparable(part))
        return i;
    return std::nullopt;
  };
  if (call.choices.empty()) {
    // Choices show but are not known (no tool call found): walk down to
    // "Other", the last row, whatever the layout shows.
    out.keys.assign(max_choices + 1, "Down");
    if (panel.multi_select)
      out.keys.push_back("Space");
    out.keys.push_back("Enter");
    out.typed = text;
    return out;
  }
  std::string other = digit_for(call.choices.size());
  if (!panel.multi_select) {
    if (auto i = index_of(text)) {
      out.keys.push_back(digit_for(*i));
    } else {
      out.keys.push_back(other);
      out.typed = text;
    }
    return out;
  }
  std::vector<bool> checked(call.choices.size(), false);
  std::string rest;
  for (const auto& part : split_commas(text)) {
    if (auto i = index_of(part))
      checked[*i] = true;
    else
      rest += (rest.empty() ? "" : ", ") + part;
  }
  for (size_t i = 0; i < checked.size(); ++i)
    if (checked[i])
      out.keys.push_back(digit_for(i));
  if (!rest.empty())
    out.keys.push_back(other);
  out.keys.push_back("Enter");
  out.typed = rest;
  return out;
}

} // namespace hb::bridge
