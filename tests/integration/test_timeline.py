"""`hermes-bridge timeline`: a run the real daemon wrote (text, tool calls, a
gateway approval, a compression, a burst of deltas) drawn as one HTML page,
checked as text (self-contained, escaped, exit codes); in headless Chromium
in test_timeline_chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge, bridge_binary

CHROMIUM = Path("/usr/bin/chromium")
SCRIPT = "script:say hi;tool terminal ls -la;approve-gw rm -rf /;compress;stream 20 10;say done"
EVIL = "<script>alert(1)</script>"


def tool(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("HERMES_BRIDGE_DB", None)
    return subprocess.run([str(bridge_binary()), *args], capture_output=True, timeout=timeout, env=env)


class TimelineFixture(unittest.TestCase):
    """A daemon's log with the runs the pages are made of (no tests here)."""

    @classmethod
    def setUpClass(cls):
        cls.bridge = b = Bridge().start()
        cls.db = b.home / "hermes-bridge" / "events.db"
        cls.tmp = Path(tempfile.mkdtemp(prefix="hb-timeline-"))
        try:
            run = b.chat("t", SCRIPT)
            assert run["ok"], run
            cls.run_id = run["run_id"]
            asked = b.wait_event(cls.run_id, "approval.requested")
            answer = b.request({"action": "approval_respond", "approval_id": asked["approval_id"],
                                "choice": "once"})
            assert answer["resolved"], answer
            compress = b.wait_event(cls.run_id, "bridge.compression.requested")
            reply = b.request({"action": "compression_respond", "request_id": compress["request_id"],
                               "messages": [{"role": "user", "content": "summary"}]})
            assert reply.get("handled"), reply
            done = b.wait_done(cls.run_id)
            assert done["status"] == "complete", done
            evil = b.chat("e", f"script:tool terminal {EVIL};say <b>bold</b> & done", wait=True)
            assert evil["status"] == "complete", evil
            cls.evil_run = evil["run_id"]
        except BaseException:
            b.stop()
            raise
        b.request({"action": "shutdown"})
        b.proc.wait(15)

    @classmethod
    def tearDownClass(cls):
        cls.bridge.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def page(self, run_id: str) -> tuple[Path, str]:
        out = self.tmp / f"{run_id}.html"
        p = tool("timeline", run_id, "--db", str(self.db), "-o", str(out))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, b"")
        self.assertIn(b"wrote the timeline of run " + run_id.encode(), p.stderr)
        return out, out.read_text(encoding="utf-8")

    def browse(self, page: Path) -> tuple[str, str, float]:
        """The DOM after the page's scripts ran, Chromium's stderr, seconds taken."""
        if not CHROMIUM.exists():
            self.skipTest(f"{CHROMIUM} missing: install the Debian package `chromium` (scripts/setup does) "
                          "for the browser check")
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        t0 = time.monotonic()
        p = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
                            "--dump-dom", page.resolve().as_uri()],
                           capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        took = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace")[-3000:])
        return p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace"), took

    def assert_clean_console(self, stderr: str) -> None:
        # Console messages (errors, CSP refusals, uncaught exceptions) are logged
        # as `INFO:CONSOLE...`; the page itself logs nothing.
        bad = [line for line in stderr.splitlines()
               if "CONSOLE" in line or "Uncaught" in line or "console error" in line.lower()]
        self.assertEqual(bad, [])

    # -- the page as a file ----------------------------------------------------------


class Timeline(TimelineFixture):
    def test_header_and_lanes(self):
        _, html = self.page(self.run_id)
        self.assertTrue(html.startswith("<!DOCTYPE html>"))
        self.assertIn(f'<code id="run-id">{self.run_id}</code>', html)
        self.assertIn('<code id="session-id">t</code>', html)
        self.assertIn('<span id="status" class="status-complete">complete</span>', html)
        self.assertRegex(html, r'<span id="duration">[0-9.]+(ms|s)</span>')
        for lane in ("model streaming", "tool calls", "approvals", "compression", "deltas / s"):
            self.assertIn(f">{lane}</text>", html)
        # Two terminal calls (ls -la, then the approved rm -rf /), each a bar
        # with its duration, the approval with its answer, the compression.
        self.assertEqual(len(re.findall(r'<g class="bar k-tool o-ok"', html)), 2)
        self.assertEqual(len(re.findall(r">terminal \u00b7 [0-9.]+(ms|s)</text>", html)), 2)
        self.assertRegex(html, r">rm -rf / \u2192 once \u00b7 [0-9.]+(ms|s)</text>")
        self.assertRegex(html, r">compression [0-9]+ \u2192 1 messages \u00b7 [0-9.]+(ms|s)</text>")
        self.assertIn("args: {&quot;arg&quot;: &quot;ls -la&quot;}", html)
        # "hi", "choice=once", "compressed 1 system=None" (3), d0..d19, "done":
        # the last 24 stream without a pause, as one period.
        self.assertIn("26 deltas in 3 streaming periods, 2 tool calls, 1 approvals, 1 compressions", html)
        self.assertIn(">24 deltas \u00b7 ", html)
        self.assertGreater(html.count('<rect class="rate"'), 5)

    def test_self_contained(self):
        _, html = self.page(self.run_id)
        for ref in ("http://", "https://", "//cdn", "src=", "@import", "url("):
            self.assertNotIn(ref, html)
        self.assertIn("Content-Security-Policy", html)
        self.assertEqual(html.count("<script"), 1)
        self.assertEqual(html.count("<style"), 1)

    def test_log_text_is_escaped(self):
        _, html = self.page(self.evil_run)
        self.assertNotIn(EVIL, html)
        self.assertNotIn("<b>bold", html)
        self.assertIn("&lt;script&gt;alert(1)&lt;/script&gt;", html)
        self.assertIn("&lt;b&gt;bold&lt;/b&gt; &amp; done", html)
        self.assertEqual(html.count("<script"), 1)

    def test_stdout(self):
        p = tool("timeline", self.run_id, "--db", str(self.db), "-o", "-")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, b"")
        _, html = self.page(self.run_id)
        self.assertEqual(p.stdout.decode(), html)
        p = tool("timeline", self.run_id, "--hermes-home", str(self.bridge.home), "-o", "-")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.decode(), html)

    def test_exit_codes(self):
        p = tool("timeline", "0" * 32, "--db", str(self.db), "-o", str(self.tmp / "x.html"))
        self.assertEqual(p.returncode, 3)
        self.assertIn(b"unknown run", p.stderr)
        self.assertFalse((self.tmp / "x.html").exists())
        for bad in ([self.run_id], ["-o", "-"], [self.run_id, "-o"], [self.run_id, "-o", "-", "extra"],
                    [self.run_id, "-o", "-", "--bogus"]):
            with self.subTest(bad=bad):
                p = tool("timeline", *bad, "--db", str(self.db))
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertTrue(p.stderr.startswith(b"hermes-bridge timeline: "), p.stderr)
        p = tool("timeline", self.run_id, "--db", str(self.tmp / "nowhere.db"), "-o", "-")
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"no event log", p.stderr)
        p = tool("timeline", self.run_id, "--db", str(self.db), "-o", str(self.tmp / "no" / "dir.html"))
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(list((self.tmp).glob("**/*.partial-*")), [])

    def test_help(self):
        p = tool("timeline", "--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"Exit codes:", p.stdout)


if __name__ == "__main__":
    unittest.main()
