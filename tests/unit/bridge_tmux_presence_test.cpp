// Telling "no TUI there" from "tmux could not be asked" (issue 21 item 12),
// the pane's command line and the workspace's text (item 2).
#include "bridge/tmux/tmux_server.hpp"
#include "protocol/wire_error.hpp"

#include <catch2/catch.hpp>

using namespace hb::bridge;

TEST_CASE("tmux's answers that mean the session is gone", "[tmux_presence]") {
  CHECK(read_presence(0, false, "", true).seen == tmux_presence::running);
  CHECK(read_presence(1, false, "no server running on /x/tmux.sock\n", true).seen == tmux_presence::gone);
  CHECK(read_presence(1, false, "error connecting to /x/tmux.sock (Connection refused)", true).seen ==
        tmux_presence::gone);
  CHECK(read_presence(1, false, "error connecting to /x/tmux.sock (No such file or directory)", true).seen ==
        tmux_presence::gone);
  CHECK(read_presence(1, false, "can't find session: main", true).seen == tmux_presence::gone);
  CHECK(read_presence(1, false, "anything", false).seen == tmux_presence::gone); // no socket at all
}

TEST_CASE("tmux answers that say nothing about the TUI", "[tmux_presence]") {
  auto timeout = read_presence(-1, true, "", true);
  CHECK(timeout.seen == tmux_presence::unknown);
  CHECK(timeout.detail.find("did not answer") != std::string::npos);
  CHECK(read_presence(1, false, "error connecting to /x (Resource temporarily unavailable)", true).seen ==
        tmux_presence::unknown);
  CHECK(read_presence(1, false, "server exited unexpectedly", true).seen == tmux_presence::unknown);
  CHECK(read_presence(1, false, "", true).seen == tmux_presence::unknown);
}

TEST_CASE("the workspace reaches the pane through sh, never as a tmux format", "[tmux_presence]") {
  CHECK(pane_command("/w/#(touch x)", {"/bin/hermes", "--tui"}) ==
        "cd -- '/w/#(touch x)' && exec '/bin/hermes' '--tui'");
  CHECK(pane_command("/w/it's", {"h"}) == "cd -- '/w/it'\\''s' && exec 'h'");
  CHECK_NOTHROW(check_workspace_text("/w/#{pane_id}/ünïcode"));
  for (std::string bad : {"/w/a\nb", "/w/\x1b[2J", "/w/\x7f", "/w/\xC2\x9b" "c"})
    CHECK_THROWS_AS(check_workspace_text(bad), hb::protocol::wire_error);
}
