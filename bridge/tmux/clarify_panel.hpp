// The clarify tool's panel ("Hermes needs your input") as the hermes TUI
// draws it, the question as the agent asked it (its tool call in state.db),
// and the keys that give a client's answer. Pure text rules, no tmux:
// unit-tested on their own.
//
// What the daemon may rely on, in 0.18.2 and 0.20.3 alike: digits act on the
// rows (1-9, then 0 for the tenth) whatever the layout shows; the last row is
// "Other (type your answer)"; picking it, or an open-ended question, turns the
// prompt into `✎ ❯` and the answer is typed and sent with Enter. What it may
// not rely on: the layout. 0.18.2 (and 0.20.3 for multi-select) shows only
// the highlighted row, 0.20.3 labels the first choice "(Recommended)".
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hb::bridge {

struct clarify_panel {
  std::string question;     // as shown: wrapped rows joined, any truncation marker dropped
  bool multi_select = false; // rows have check boxes: digits toggle them, Enter confirms
  bool typing = false;       // the prompt is `✎ ❯`: what is typed, then Enter, answers
  int countdown_s = -1;      // the hint line's "(118s)"; -1 when it shows none (no limit)
};

// nullopt when no clarify panel shows, or the prompt below it is neither
// `? ❯` nor `✎ ❯` (the panel is on its way out).
std::optional<clarify_panel> parse_clarify_panel(const std::string& pane);

// The clarify tool call as the agent made it (an assistant row's
// tool_calls, OpenAI format), its choices cleaned as hermes cleans them
// (dict choices by their label, blanks dropped, at most four).
struct clarify_call {
  std::string question;
  std::vector<std::string> choices; // empty: open-ended
  bool multi_select = false;
};

// The last clarify call in `tool_calls_json`; nullopt for none (or bad JSON).
std::optional<clarify_call> clarify_call_in(const std::string& tool_calls_json);

// Whether the call is the one the panel shows (the panel may wrap or cut
// the question; whitespace is not compared).
bool panel_shows(const clarify_panel& panel, const clarify_call& call);

// How to give `answer`: tmux keys one at a time, then (when `typed` is not
// empty) wait for `✎ ❯`, type `typed` literally and press Enter. A choice is
// its digit; anything else picks "Other" and is typed. Multi-select: the
// answer's comma-separated parts, each choice's digit toggled, the rest
// typed after "Other"; Enter confirms. An empty answer gives nothing (the
// TUI's own deadline decides).
struct clarify_keys {
  std::vector<std::string> keys;
  std::string typed; // one line: line breaks and tabs as spaces, control bytes dropped
};
clarify_keys keys_for_answer(const clarify_panel& panel, const clarify_call& call, const std::string& answer);

} // namespace hb::bridge
