// Where `export -o` and `timeline -o` write: exports and timelines carry
// transcripts, so the file is owner-only (0600) whatever the umask. It is
// made next to its target under a temporary name (O_CREAT|O_EXCL|O_NOFOLLOW,
// so nothing planted there is followed or reused) and renamed into place
// once complete: a failure never leaves half a file under the name asked
// for, and a file already there is replaced by a 0600 one.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace hb::app {

class private_output {
public:
  // "-" or empty: stdout. Throws tool_error(exit_usage) when the file
  // cannot be created.
  explicit private_output(const std::string& path);
  ~private_output(); // removes the temporary file unless finish() moved it
  private_output(const private_output&) = delete;
  private_output& operator=(const private_output&) = delete;

  void write(std::string_view bytes);
  void line(std::string_view text) {
    write(text);
    write("\n");
  }
  // Flushes and moves the file into place; throws tool_error(exit_failure)
  // when anything written did not reach it.
  void finish();

private:
  std::string path_, tmp_;
  std::FILE* file_ = nullptr;
  bool done_ = false;
};

} // namespace hb::app
