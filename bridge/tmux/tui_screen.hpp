// What the hermes TUI's screen says about its state, read off a pane
// capture: the input area at the bottom (between the last two rules) tells
// whether a turn runs and what the draft holds; the status bar above it
// ticks every second and must not count as a change. Pure text rules, no
// tmux: unit-tested on their own.
#pragma once

#include <string>

namespace hb::bridge {

struct tui_screen {
  bool input_found = false; // the input area was recognised (rules and the ❯ prompt)
  // A turn runs: the prompt shows a state icon before ❯ (⚕ agent running,
  // or one of `asking`'s) or the running turn's placeholder.
  bool busy = false;
  bool approval = false;    // ⚠ before the prompt
  // The turn waits for an answer in a panel or prompt (⚠ approval, ? or ✎
  // clarify, 🔐 sudo, 🔑 secret): what is typed now answers it.
  bool asking = false;
  bool typing_answer = false; // ✎: a clarify answer is typed at the prompt
  std::string draft;        // the input's text, prompt and placeholder removed (tabs as ^I)
  int draft_lines = 0;      // rows the draft takes (0 when empty)
};

tui_screen read_tui_screen(const std::string& pane);

// The pane as "has it settled?" compares it: without the status bar (the
// line right above the input area) and with countdowns such as "(57s)" or
// a running tool's "(  4.5s · ↓ 5 tok)" reduced to "(s)".
std::string settle_view(const std::string& pane);

// A message Hermes shows collapsed as `[Pasted text #N: M lines → FILE]`
// when it arrives as one paste: 5 or more line breaks, or 2,000 or more
// characters (code points).
bool collapses_as_paste(const std::string& text);

// The text of the placeholder's start, for finding it in the draft.
constexpr const char* pasted_text_marker = "[Pasted text #";

} // namespace hb::bridge
