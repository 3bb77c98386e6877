#include "bridge/tmux/command_line.hpp"

#include "protocol/wire_error.hpp"

namespace hb::bridge {

std::vector<std::string> split_command_line(const std::string& line, const std::string& home) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  bool quoted_start = false; // the word began with a quote: no tilde expansion
  auto finish = [&] {
    if (!in_word)
      return;
    if (!quoted_start && !home.empty() && (word == "~" || word.rfind("~/", 0) == 0))
      word = home + word.substr(1);
    words.push_back(word);
    word.clear();
    in_word = quoted_start = false;
  };
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      finish();
      continue;
    }
    if (!in_word) {
      in_word = true;
      quoted_start = c == '\'' || c == '"';
    }
    if (c == '\\') {
      if (++i == line.size())
        throw protocol::value_error("command line ends with a backslash: " + line);
      if (line[i] != '\n') // backslash-newline joins lines
        word += line[i];
    } else if (c == '\'') {
      size_t end = line.find('\'', i + 1);
      if (end == std::string::npos)
        throw protocol::value_error("unterminated ' in command line: " + line);
      word += line.substr(i + 1, end - i - 1);
      i = end;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= line.size())
          throw protocol::value_error("unterminated \" in command line: " + line);
        char d = line[i];
        if (d == '"')
          break;
        if (d == '\\' && i + 1 < line.size() &&
            (line[i + 1] == '"' || line[i + 1] == '\\' || line[i + 1] == '$' || line[i + 1] == '`')) {
          word += line[++i];
        } else {
          word += d;
        }
      }
    } else {
      word += c;
    }
  }
  finish();
  return words;
}

} // namespace hb::bridge
