"""Profiles a client names (issue 21, items 4 and 11), against the real
daemon on both agent hosts: every action that takes a profile refuses a
path ("/abs", "../..", "a/b", "..") as a ValueError before anything runs, a
profile directory that is a symlink out of <home>/profiles as a ValueError,
and a profile with no directory as a KeyError (the seed and Studio's bridge
ran it on the default profile's config and .env). Nothing is read, written
or created outside the hermes home, and no agent worker is started for a
refused name.

Run: cd tests/integration && /usr/bin/python3 run_module.py test_profiles
"""

from __future__ import annotations

import json
import shutil
import unittest
from pathlib import Path

from harness import Bridge

# Each action that takes a profile, with what else it needs. The session
# actions name a session the daemon does not know, so the profile named is
# the one they run in.
PROFILE_ACTIONS = [
    ("mcp_list", {}),
    ("mcp_server_add", {"name": "evil", "config": {"command": "evil-mcp"}}),
    ("mcp_server_update", {"name": "planted", "config": {"command": "evil-mcp"}}),
    ("mcp_server_remove", {"name": "planted"}),
    ("mcp_server_test", {"name": "planted"}),
    ("mcp_tools_list", {}),
    ("mcp_reload", {}),
    ("skills_reload", {}),
    ("command", {"session_id": "ghost", "command": "/goal take over"}),
    ("goal_evaluate", {"session_id": "ghost", "final_response": "x"}),
    ("goal_pause", {"session_id": "ghost"}),
    ("get_session_title", {"session_id": "ghost"}),
    ("context_estimate", {"session_id": "estimate", "messages": []}),
    ("chat", {"session_id": "talk", "message": "hi", "wait": True}),
]
# These only look at the daemon's own tables, but a path is no name there either.
NAME_ONLY_ACTIONS = [("destroy_profile", {}), ("worker_ping", {})]


class ProfileChecks(unittest.TestCase):
    maxDiff = None
    args = ["--agent-host", "worker"]

    def setUp(self) -> None:
        self.bridge = Bridge(args=self.args).start()
        self.addCleanup(self.bridge.stop)
        b = self.bridge
        # A directory outside the home with everything a profile has: a
        # profile that reached it would list, rewrite or load what is here.
        self.outside = b.dir / "outside"
        self.outside.mkdir()
        (self.outside / "config.yaml").write_text(json.dumps(
            {**json.loads((b.home / "config.yaml").read_text()),
             "mcp_servers": {"planted": {"command": "planted-mcp", "fake_tools": []}}}))
        (self.outside / ".env").write_text("STOLEN_SECRET=outside\n")
        self.profiles = b.home / "profiles"
        self.profiles.mkdir()
        (self.profiles / "link").symlink_to(self.outside, target_is_directory=True)
        work = self.profiles / "work"
        work.mkdir()
        (work / "config.yaml").write_text((b.home / "config.yaml").read_text())
        self.before = self.snapshot()

    def snapshot(self) -> dict[str, bytes | None]:
        """Every file under the test's directory but the daemon's own, with its content."""
        b = self.bridge
        # Its runtime directory too: a worker that starts late (a slow,
        # sanitized run) writes its record there between two snapshots.
        skip = {b.home / "hermes-bridge", b.stderr_path, b.agent_log, b.dir / "run" / "hermes-bridge"}
        files: dict[str, bytes | None] = {}
        for path in sorted(b.dir.rglob("*")):
            if any(path == s or s in path.parents for s in skip) or path.is_socket():
                continue
            files[str(path.relative_to(b.dir))] = path.read_bytes() if path.is_file() and not path.is_symlink() \
                else None
        return files

    def request(self, action: str, profile: str, fields: dict) -> dict:
        return self.bridge.request({"action": action, "profile": profile, **fields})

    def assert_refused(self, profile: str, actions: list, error_type: str, message: str) -> None:
        for action, fields in actions:
            with self.subTest(profile=profile, action=action):
                reply = self.request(action, profile, fields)
                self.assertEqual((reply.get("ok"), reply.get("error_type")), (False, error_type), reply)
                self.assertIn(message, reply.get("error", ""))

    def assert_nothing_happened(self) -> None:
        self.assertEqual(self.snapshot(), self.before, "files changed outside the daemon's own")
        self.assertEqual(self.bridge.request({"action": "list"})["sessions"], [])
        self.assert_workers_only_for({"default"})

    def assert_workers_only_for(self, profiles: set[str]) -> None:
        workers = self.bridge.request({"action": "health"})["agent"].get("workers", [])
        self.assertLessEqual({w["profile"] for w in workers}, profiles, workers)

    def test_a_profile_that_is_a_path_is_a_value_error_everywhere(self):
        for profile in (str(self.outside), str(self.bridge.dir / "x"), "../..", "../outside", "a/b", "..", "."):
            self.assert_refused(profile, PROFILE_ACTIONS + NAME_ONLY_ACTIONS, "ValueError", "plain name")
        self.assert_nothing_happened()
        self.assertFalse((self.bridge.dir / "x").exists())

    def test_a_profile_linked_out_of_the_profiles_is_a_value_error(self):
        self.assert_refused("link", PROFILE_ACTIONS, "ValueError", "resolves outside")
        self.assert_nothing_happened()

    def test_a_profile_that_does_not_exist_is_a_key_error_and_starts_nothing(self):
        self.assert_refused("ghost", PROFILE_ACTIONS, "KeyError", "unknown profile: ghost")
        self.assert_nothing_happened()
        self.assertFalse((self.profiles / "ghost").exists())
        # many made-up names: still no worker, no session for any of them
        for n in range(5):
            self.assertEqual(self.bridge.chat(f"s{n}", "hi", profile=f"made-up-{n}")["error_type"], "KeyError")
        self.assert_nothing_happened()

    def test_the_default_and_an_existing_profile_still_work(self):
        b = self.bridge
        for profile in ("", "default", "work"):
            with self.subTest(profile=profile):
                listed = self.request("mcp_list", profile, {})
                self.assertEqual((listed["ok"], listed["servers"]), (True, []))
                self.assertEqual(self.request("command", profile, {"session_id": "ghost", "command": "/goal"})
                                 ["message"], "No active goal. Set one with /goal <text>.")
                self.assertTrue(self.request("skills_reload", profile, {})["ok"])
        done = b.chat("w", "hi", profile="work", wait=True)
        self.assertEqual(done["status"], "complete", done)
        self.assertEqual(b.request({"action": "status", "session_id": "w"})["config"]["profile"], "work")
        self.assertEqual(self.request("get_session_title", "work", {"session_id": "w"})["ok"], True)
        self.assertEqual(self.request("destroy_profile", "work", {}), {"ok": True, "profile": "work",
                                                                       "destroyed": 1})
        self.assert_workers_only_for({"default", "work"})

    def test_a_profile_whose_directory_went_away_is_refused_for_a_new_agent(self):
        b = self.bridge
        gone = self.profiles / "gone"
        gone.mkdir()
        self.assertEqual(b.chat("g", "hi", profile="gone", wait=True)["status"], "complete")
        b.request({"action": "destroy", "session_id": "g"})
        shutil.rmtree(gone)  # its state.db with it
        reply = b.chat("g2", "hi", profile="gone", wait=True)
        self.assertEqual((reply["ok"], reply["error_type"]), (False, "KeyError"), reply)
        self.assertFalse(gone.exists())  # refused, not re-created


class ProfileChecksEmbedded(ProfileChecks):
    """The same on the embedded host (no workers: the list stays empty)."""
    args = ["--agent-host", "embedded"]


if __name__ == "__main__":
    unittest.main()
