// Pure text rules of driving the TUI through its pane: what a paste carries,
// how to see that it arrived, and how to read a Dangerous Command prompt.
// No tmux, no I/O: unit-tested on their own.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hb::bridge {

// Shared by the pane readers: a capture's lines (CR, LF or CRLF), a line
// without surrounding whitespace, text without any whitespace (for finding
// what wrapping may have split), ASCII lower case, and a box row's text
// between "│ " and " │" (padding kept; a row without both bars loses its
// marks instead).
std::vector<std::string> pane_lines(const std::string& text);
std::string strip_space(const std::string& s);
std::string without_whitespace(const std::string& s);
std::string ascii_lower(std::string s);
std::string box_row(const std::string& line);

// The bytes of a bracketed paste of `text`: every line break (CRLF, CR, LF)
// becomes CR, tabs stay, other control bytes go (a stray ESC would end the
// bracketed paste early and the rest would be typed as keys).
std::string paste_payload(const std::string& text);

// What must be visible in the draft before Enter is sent: the first 24
// characters (code points) of the last line with at least 4 characters
// after stripping, else of the last non-blank line, with each tab as the
// TUI draws it (^I). Empty for blank text. (A message that collapses as a
// paste shows the placeholder instead: see tui_screen.hpp.)
std::string commit_needle(const std::string& text);

// Whether hermes 0.20 takes Enter after this draft (the paste of `text`,
// cursor at its end) as a line break instead of a submit: a trailing
// backslash, then only spaces or tabs (and at most one line break).
bool enter_continues_line(const std::string& text);

// The text Hermes stores for a submitted message, for comparing with a
// state.db row: CRLF/CR as LF, surrounding whitespace stripped.
std::string normalized_message(const std::string& text);

// A Dangerous Command prompt as the pane shows it: hermes 0.18.2's panel (a
// box: title row, blank, the command wrapped, blank, numbered choices, blank,
// the description), an older build's panel without digits, or the legacy
// line prompt of tools/approval.py's input() fallback.
struct approval_prompt {
  struct option {
    std::string choice; // once, session, always, deny; "view" for "Show full command"
    std::string key;    // the digit, or the legacy letter; empty on a panel without digits
  };
  bool legacy = false;    // `Choice [o/s/a/D]:` line prompt: the key needs Enter
  bool truncated = false; // the panel shows part of the command until "view" is picked
  int selected = 0;       // the row marked with ❯ (panels without digits are navigated)
  std::string command;    // the command as shown, wrapping undone, <= 1024 bytes
  std::string description; // Hermes' reason for asking, when shown
  std::vector<option> options;

  // The tmux keys that answer `choice` (deny's when that choice is not
  // offered; "view" only when asked for by name through view_keys): the
  // digit; the letter then Enter; or arrows to the row then Enter on a
  // panel without digits.
  std::vector<std::string> keys_for(const std::string& choice) const;
  std::vector<std::string> view_keys() const; // picks "Show full command"; empty if not offered
  std::vector<std::string> choices() const;   // what a client may answer ("view" is not)
};

// Requires the title and "Allow once" and "Deny" rows (the legacy prompt:
// its `Choice [o/...]:` line, unanswered); nullopt when no prompt shows.
std::optional<approval_prompt> parse_approval_prompt(const std::string& pane);

} // namespace hb::bridge
