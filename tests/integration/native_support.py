"""What the native-session test modules share: the fake TUI's path, a tmux
client for its private servers, and a fixture with one daemon per test whose
tmux servers are all killed afterwards."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import REPO, Bridge

FAKE_HERMES = REPO / "tests" / "fake_hermes" / "hermes"


def tmux(socket_path: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    return subprocess.run(["tmux", "-S", socket_path, *args], capture_output=True, text=True, env=env,
                           timeout=10)


class NativeFixture(unittest.TestCase):
    """One daemon per test; every tmux server it started is killed afterwards."""

    extra_env: dict[str, str] = {}

    def setUp(self) -> None:
        if shutil.which("tmux") is None:
            self.skipTest("tmux is not installed")
        self.tmp = Path(tempfile.mkdtemp(prefix="hb-native-"))
        self.native_dir = self.tmp / "native"
        self.workspace = self.tmp / "workspace"
        self.workspace.mkdir()
        self.state_db = self.tmp / "state.db"
        self.tui_log = self.tmp / "tui.log"
        self.bridges: list[Bridge] = []
        self.bridge = self.start_bridge()

    def start_bridge(self, args: list[str] | None = None, env: dict[str, str] | None = None,
                     hermes_bin: Path | str = FAKE_HERMES) -> Bridge:
        b = Bridge(args=["--hermes-bin", str(hermes_bin), "--native-dir", str(self.native_dir),
                         "--native-confirm-s", "3", "--db", str(self.tmp / "events.db")] + (args or []),
                   env={"HERMES_STATE_DB": str(self.state_db), "FAKE_HERMES_LOG": str(self.tui_log),
                        "FAKE_HERMES_STARTUP_S": "0.3", **self.extra_env, **(env or {})})
        self.bridges.append(b)
        return b.start()

    def tearDown(self) -> None:
        for b in self.bridges:
            b.stop()
        for sock in self.native_dir.glob("*/tmux.sock") if self.native_dir.exists() else []:
            tmux(str(sock), "kill-server")
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ------------------------------------------------------------------
    def chat(self, session_id: str, message: str, **fields) -> dict:
        fields.setdefault("harness", "native")
        fields.setdefault("workspace", str(self.workspace))
        out = self.bridge.chat(session_id, message, **fields)
        self.assertTrue(out["ok"], out)
        return out

    def turn(self, session_id: str, message: str, timeout: float = 30, **fields) -> dict:
        return self.bridge.wait_done(self.chat(session_id, message, **fields)["run_id"], timeout=timeout)

    def native_status(self, session_id: str) -> dict:
        out = self.bridge.request({"action": "status", "session_id": session_id})
        self.assertTrue(out["ok"], out)
        return out

    def user_rows(self) -> list[str]:
        try:
            with sqlite3.connect(self.state_db) as db:
                return [r[0] for r in db.execute("SELECT content FROM messages WHERE role='user' ORDER BY id")]
        except sqlite3.OperationalError:  # the TUI has not created its tables yet
            return []

    def tui_log_entries(self) -> list[dict]:
        if not self.tui_log.exists():
            return []
        return [json.loads(line) for line in self.tui_log.read_text().splitlines() if line.strip()]

    def wait_for(self, predicate, timeout: float = 15, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        self.fail(f"no {what} within {timeout}s")
