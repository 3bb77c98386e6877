"""The log tools (`runs`, `sessions`, `replay`, `export`, `import`) on logs
the real daemon wrote: listings and their filters, JSON shapes, replay bytes
and rendering and timing, export -> import -> a daemon answering with the
same bytes, and the stable exit codes."""

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

from harness import Bridge, bridge_binary
from log_rows import run_deltas

RUN_KEYS = ["run_id", "session_id", "status", "started_at", "ended_at", "duration_s", "deltas", "events",
            "tool_calls", "approvals", "error", "pruned_at"]
SESSION_KEYS = ["session_id", "profile", "model", "harness", "runs", "message_count", "created_at",
                "last_used_at", "state"]


def tool(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("HERMES_BRIDGE_DB", None)
    return subprocess.run([str(bridge_binary()), *args], capture_output=True, timeout=timeout, env=env)


def ndjson(out: bytes) -> list[dict]:
    return [json.loads(line) for line in out.decode().splitlines()]


def read_only(db: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True)


def log_dump(db: Path) -> list:
    """Every row of every table, to tell whether a log changed."""
    with read_only(db) as c:
        return [(t, sorted(c.execute(f"SELECT * FROM {t}").fetchall(), key=repr))
                for t in ("meta", "sessions", "runs", "deltas", "events")]


def raw_result(b: Bridge, run_id: str) -> bytes:
    return b.raw((json.dumps({"action": "get_result", "run_id": run_id}) + "\n").encode())


def logged_events(db, run_id: str) -> list[str]:
    """A run's events as storage/FORMAT.md lays them out: its rows of `events`,
    and in the seqs they leave free, its deltas as stream.delta events."""
    with read_only(db) as c:
        run_no = c.execute("SELECT run_no FROM runs WHERE run_id=?", (run_id,)).fetchone()[0]
        rows = dict(c.execute("SELECT seq, body FROM events WHERE run_no=?", (run_no,)))
        deltas = [text for _, _, text in run_deltas(c, run_no)]
    texts = iter(deltas)
    return [rows[seq] if seq in rows else json.dumps({"event": "stream.delta", "delta": next(texts)})
            for seq in range(len(rows) + len(deltas))]


class LogTools(unittest.TestCase):
    """One daemon writes the runs every test reads; it is stopped before the
    tests run (except for the one listing taken while it was serving)."""

    @classmethod
    def setUpClass(cls):
        cls.bridge = b = Bridge().start()
        cls.db = b.home / "hermes-bridge" / "events.db"
        cls.tmp = Path(tempfile.mkdtemp(prefix="hb-logtools-"))
        try:
            run = b.chat("s", "script:say hi there;tool terminal ls;approve-gw rm -rf /;say done")
            cls.approval_run = run["run_id"]
            asked = b.wait_event(cls.approval_run, "approval.requested")
            answer = b.request({"action": "approval_respond", "approval_id": asked["approval_id"],
                                "choice": "once"})
            assert answer["resolved"], answer
            b.wait_done(cls.approval_run)
            time.sleep(0.02)
            cls.stream_run = b.chat("t", "script:stream 20 20", wait=True)["run_id"]
            time.sleep(0.02)
            cls.echo_run = b.chat("s", "second turn", wait=True)["run_id"]
            time.sleep(0.02)
            failed = b.chat("x", "script:say oops;raise boom", wait=True)
            cls.error_run = failed["run_id"]
            assert failed["status"] == "error", failed
            assert b.request({"action": "destroy", "session_id": "x"})["destroyed"]
            cls.results = {r: raw_result(b, r) for r in
                           (cls.approval_run, cls.stream_run, cls.echo_run, cls.error_run)}
            # Read-only listing while the daemon is serving.
            cls.live_listing = tool("runs", "--db", str(cls.db), "--json")
        except BaseException:
            b.stop()
            raise
        b.request({"action": "shutdown"})
        b.proc.wait(15)

    @classmethod
    def tearDownClass(cls):
        cls.bridge.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def result(self, run_id: str) -> dict:
        return json.loads(self.results[run_id])

    def fresh_path(self, name: str) -> Path:
        d = Path(tempfile.mkdtemp(prefix=name + "-", dir=self.tmp))
        return d / "events.db"

    # -- runs ------------------------------------------------------------------
    def test_runs_while_the_daemon_serves(self):
        self.assertEqual(self.live_listing.returncode, 0, self.live_listing.stderr)
        ids = [r["run_id"] for r in ndjson(self.live_listing.stdout)]
        self.assertEqual(ids, [self.error_run, self.echo_run, self.stream_run, self.approval_run])

    def test_runs_table_newest_first(self):
        p = tool("runs", "--db", str(self.db))
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.decode().splitlines()
        self.assertEqual(lines[0].split(), ["RUN", "SESSION", "STATUS", "STARTED", "DURATION", "DELTAS",
                                            "EVENTS", "TOOLS", "APPROVALS"])
        self.assertEqual([line.split()[0] for line in lines[1:]],
                         [self.error_run, self.echo_run, self.stream_run, self.approval_run])
        row = lines[-1].split()
        self.assertEqual((row[1], row[2]), ("s", "complete"))
        res = self.result(self.approval_run)
        self.assertEqual(row[-4:], [str(len(res["deltas"])), str(len(res["events"])), "2", "1"])

    def test_runs_json_shape_and_counts(self):
        p = tool("runs", "--db", str(self.db), "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {r["run_id"]: r for r in ndjson(p.stdout)}
        for r in rows.values():
            self.assertEqual(list(r), RUN_KEYS)
        for run_id in self.results:
            res, row = self.result(run_id), rows[run_id]
            self.assertEqual((row["session_id"], row["status"], row["started_at"], row["ended_at"]),
                             (res["session_id"], res["status"], res["started_at"], res["ended_at"]))
            self.assertAlmostEqual(row["duration_s"], res["ended_at"] - res["started_at"])
            self.assertEqual((row["deltas"], row["events"]), (len(res["deltas"]), len(res["events"])))
            self.assertEqual(row["tool_calls"],
                             sum(e["event"] == "tool.started" for e in res["events"]))
            self.assertEqual(row["approvals"],
                             sum(e["event"] == "approval.requested" for e in res["events"]))
            self.assertEqual(row["error"], res["error"])
            self.assertIsNone(row["pruned_at"])
        self.assertEqual((rows[self.approval_run]["tool_calls"], rows[self.approval_run]["approvals"]), (2, 1))
        self.assertEqual(rows[self.stream_run]["deltas"], 20)
        self.assertEqual(rows[self.error_run]["status"], "error")

    def test_runs_filters(self):
        def ids(*args: str) -> list[str]:
            p = tool("runs", "--db", str(self.db), "--json", *args)
            self.assertEqual(p.returncode, 0, p.stderr)
            return [r["run_id"] for r in ndjson(p.stdout)]

        self.assertEqual(ids("--session", "s"), [self.echo_run, self.approval_run])
        self.assertEqual(ids("--status", "error"), [self.error_run])
        self.assertEqual(ids("--status", "complete", "--session", "t"), [self.stream_run])
        self.assertEqual(ids("--limit", "2"), [self.error_run, self.echo_run])
        self.assertEqual(len(ids("--limit", "0")), 4)
        started = {r: self.result(r)["started_at"] for r in self.results}
        # Unix seconds: inclusive bounds on started_at.
        self.assertEqual(ids("--since", repr(started[self.echo_run])), [self.error_run, self.echo_run])
        self.assertEqual(ids("--until", repr(started[self.stream_run])), [self.stream_run, self.approval_run])
        self.assertEqual(ids("--since", repr(started[self.stream_run]), "--until", repr(started[self.echo_run])),
                         [self.echo_run, self.stream_run])
        # ISO-8601, in UTC and with an offset.
        first = started[self.approval_run]
        iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(first - 60))
        self.assertEqual(len(ids("--since", iso + "Z")), 4)
        self.assertEqual(ids("--until", iso + "Z"), [])
        local_now = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(first + 3600))
        self.assertEqual(len(ids("--until", local_now)), 4)
        self.assertEqual(ids("--since", time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(first + 3600))), [])
        # An empty answer is fine; an unknown session is not.
        p = tool("runs", "--db", str(self.db), "--session", "nobody")
        self.assertEqual(p.returncode, 3)
        self.assertIn(b"unknown session: nobody", p.stderr)
        for bad in (["--since", "yesterday"], ["--limit", "many"], ["--limit"], ["--bogus"], ["extra"]):
            with self.subTest(bad=bad):
                p = tool("runs", "--db", str(self.db), *bad)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertTrue(p.stderr.startswith(b"hermes-bridge runs: "), p.stderr)

    # -- sessions ----------------------------------------------------------------
    def test_sessions(self):
        p = tool("sessions", "--db", str(self.db), "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = {r["session_id"]: r for r in ndjson(p.stdout)}
        self.assertEqual(set(rows), {"s", "t", "x"})
        for r in rows.values():
            self.assertEqual(list(r), SESSION_KEYS)
            self.assertEqual(r["harness"], "embedded")
            self.assertEqual(r["model"], "fake-model")
        self.assertEqual((rows["s"]["runs"], rows["t"]["runs"], rows["x"]["runs"]), (2, 1, 1))
        self.assertEqual((rows["s"]["state"], rows["x"]["state"]), ("dormant", "destroyed"))
        self.assertEqual(rows["s"]["message_count"], len(self.result(self.echo_run)["result"]["messages"]))
        table = tool("sessions", "--db", str(self.db))
        self.assertEqual(table.returncode, 0, table.stderr)
        lines = table.stdout.decode().splitlines()
        self.assertEqual(lines[0].split(), ["SESSION", "PROFILE", "MODEL", "HARNESS", "RUNS", "LAST", "USED",
                                            "STATE"])
        # Most recently used first.
        self.assertEqual([line.split()[0] for line in lines[1:]], ["x", "s", "t"])
        self.assertIn("destroyed", lines[1])

    def test_default_location_from_hermes_home(self):
        for args, env in ((["--hermes-home", str(self.bridge.home)], {}), ([], {"HERMES_HOME": str(self.bridge.home)})):
            with self.subTest(args=args):
                p = subprocess.run([str(bridge_binary()), "sessions", "--json", *args], capture_output=True,
                                   env={**os.environ, **env}, timeout=60)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(len(ndjson(p.stdout)), 3)

    # -- replay ----------------------------------------------------------------
    def test_replay_json_is_what_clients_received(self):
        for run_id in self.results:
            with self.subTest(run=run_id):
                p = tool("replay", run_id, "--db", str(self.db), "--json", "--instant")
                self.assertEqual(p.returncode, 0, p.stderr)
                lines = p.stdout.decode().splitlines()
                self.assertEqual([json.loads(line) for line in lines], self.result(run_id)["events"])
                self.assertEqual(lines, logged_events(self.db, run_id))
                # get_result splices the same bodies into its answer.
                self.assertIn(('"events": [' + ", ".join(lines) + "]").encode(), self.results[run_id])

    def test_replay_renders_tools_approvals_and_status(self):
        p = tool("replay", self.approval_run, "--db", str(self.db), "--instant")
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.decode()
        self.assertNotIn("\x1b[", out)  # not a terminal: no colour
        self.assertIn(f"== run {self.approval_run} (session s)", out)
        self.assertIn("hi there\n[tool terminal] call_1\n  arg: ls\n", out)
        self.assertIn("  ran terminal: ls\n", out)
        self.assertIn("[approval requested] rm -rf /\n", out)
        self.assertIn("[approval answered] once at ", out)
        self.assertIn("after it was asked", out)
        self.assertIn("done\n[title] Title: say hi there;tool terminal ls;approve-gw\n== complete after ", out)
        self.assertIn("[context] 69 tokens before any message, 2 tools\n", out)
        self.assertRegex(out.splitlines()[-1], r"^== complete after [0-9.]+s ==$")

        failed = tool("replay", self.error_run, "--db", str(self.db), "--instant", "--color", "always")
        out = failed.stdout.decode()
        self.assertIn("oops", out)
        self.assertIn("\x1b[1;31m== error after", out)
        self.assertIn("error: ", out)

    def test_replay_waits_out_the_original_timing_scaled_by_speed(self):
        # How --speed scales each pause is unit tested (replay_pause); here the
        # tool must really wait the pauses out: never sooner than the run
        # took, divided by the speed. (A lower bound only: how much longer a
        # loaded machine or ASan makes it is not the tool's doing.)
        with read_only(self.db) as c:
            started, ended = c.execute("SELECT started_at, ended_at FROM runs WHERE run_id=?",
                                       (self.stream_run,)).fetchone()
        span = ended - started
        self.assertGreater(span, 0.1)
        for args, least in (((), span), (("--speed", "4"), span / 4)):
            start = time.monotonic()
            p = tool("replay", self.stream_run, "--db", str(self.db), *args)
            elapsed = time.monotonic() - start
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("d0 d1 d2", p.stdout.decode())
            self.assertGreaterEqual(elapsed, least * 0.99, args)

    def test_replay_unknown_pruned_and_bad_usage(self):
        p = tool("replay", "0" * 32, "--db", str(self.db))
        self.assertEqual(p.returncode, 3)
        self.assertIn(b"unknown run", p.stderr)
        for bad in ([], ["--speed", "0"], ["--speed", "2", "--instant"], ["--color", "blue"]):
            with self.subTest(bad=bad):
                args = ([self.echo_run] if bad else []) + bad
                self.assertEqual(tool("replay", *args, "--db", str(self.db)).returncode, 2)

    def test_pruned_run(self):
        # 0.00002 days is about 1.7 s; the session's latest run is kept.
        with Bridge(args=["--retain-days", "0.00002", "--prune-interval", "0.2"]) as b:
            old = b.chat("p", "turn 1", wait=True)["run_id"]
            b.chat("p", "turn 2", wait=True)
            deadline = time.monotonic() + 20
            while b.request({"action": "get_result", "run_id": old}).get("error_type") != "RunPruned":
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.2)
            db = str(b.home / "hermes-bridge" / "events.db")
            p = tool("replay", old, "--db", db)
            self.assertEqual(p.returncode, 3)
            self.assertIn(b"was pruned", p.stderr)
            self.assertEqual(tool("export", old, "--db", db).returncode, 3)
            rows = {r["run_id"]: r for r in ndjson(tool("runs", "--db", db, "--json").stdout)}
            self.assertIsNotNone(rows[old]["pruned_at"])

    # -- export / import ---------------------------------------------------------
    def export(self, *args: str) -> Path:
        out = self.tmp / f"export-{time.monotonic_ns()}.jsonl"
        p = tool("export", *args, "--db", str(self.db), "-o", str(out))
        self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def test_export_file_format(self):
        lines = [json.loads(line) for line in self.export(self.approval_run).read_text().splitlines()]
        self.assertEqual((lines[0]["format"], lines[0]["version"]), ("hermes-bridge-export", 1))
        self.assertEqual([line["type"] for line in lines[1:3]], ["session", "run"])
        res = self.result(self.approval_run)
        deltas = [line for line in lines if line["type"] == "delta"]
        events = [line for line in lines if line["type"] == "event"]
        self.assertEqual([d["text"] for d in deltas], res["deltas"])
        self.assertEqual([d["seq"] for d in deltas], list(range(len(deltas))))
        self.assertEqual([json.loads(e["body"]) for e in events], res["events"])
        self.assertTrue(all(isinstance(e["at"], float) for e in events))
        self.assertEqual(lines[-1], {"type": "end", "sessions": 1, "runs": 1, "deltas": len(deltas),
                                     "events": len(events)})
        # stdout by default, the same bytes
        p = tool("export", self.approval_run, "--db", str(self.db))
        self.assertEqual(p.stdout.splitlines()[1:-1],
                         self.export(self.approval_run).read_bytes().splitlines()[1:-1])

    def test_export_import_then_the_daemon_answers_the_same_bytes(self):
        exported = self.export(self.approval_run)
        target = self.fresh_path("imported")
        p = tool("import", str(exported), "--db", str(target))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"imported 1 run(s)", p.stdout)
        replayed = tool("replay", self.approval_run, "--db", str(target), "--json", "--instant")
        original = tool("replay", self.approval_run, "--db", str(self.db), "--json", "--instant")
        self.assertEqual(replayed.stdout, original.stdout)
        with Bridge(args=["--db", str(target)]) as b:
            self.assertEqual(raw_result(b, self.approval_run), self.results[self.approval_run])
            history = b.request({"action": "get_history", "session_id": "s"})
            self.assertTrue(history["ok"], history)
            self.assertEqual(history["history"], self.result(self.echo_run)["result"]["messages"])

    def test_export_session_import_and_refuse_duplicates(self):
        session_file = self.export("--session", "s")
        single = self.export(self.approval_run)
        target = self.fresh_path("dup")
        self.assertEqual(tool("import", str(single), "--db", str(target)).returncode, 0)
        before = log_dump(target)
        # The same run again, alone or with a run the log lacks: refused, nothing written.
        for f in (single, session_file):
            with self.subTest(file=f.name):
                p = tool("import", str(f), "--db", str(target))
                self.assertEqual(p.returncode, 4, p.stderr)
                self.assertIn(self.approval_run.encode(), p.stderr)
                self.assertIn(b"nothing was imported", p.stderr)
                self.assertEqual(log_dump(target), before)
        # Into a fresh log, the whole session comes across.
        other = self.fresh_path("session")
        p = tool("import", str(session_file), "--db", str(other))
        self.assertEqual(p.returncode, 0, p.stderr)
        ids = [r["run_id"] for r in ndjson(tool("runs", "--db", str(other), "--json").stdout)]
        self.assertEqual(ids, [self.echo_run, self.approval_run])
        with Bridge(args=["--db", str(other)]) as b:
            for run_id in ids:
                self.assertEqual(raw_result(b, run_id), self.results[run_id])

    def test_import_damaged_file(self):
        good = self.export(self.stream_run).read_text().splitlines(keepends=True)
        cases = {"truncated": good[:-3], "garbage": ["hello\n"], "empty": [],
                 "edited": good[:4] + [good[4].replace('"seq": 1', '"seq": 7')] + good[5:]}
        for name, lines in cases.items():
            with self.subTest(case=name):
                f = self.tmp / f"damaged-{name}.jsonl"
                f.write_text("".join(lines))
                target = self.fresh_path("damaged")
                p = tool("import", str(f), "--db", str(target))
                self.assertEqual(p.returncode, 5, p.stderr)
                self.assertIn(b"damaged export file", p.stderr)
                self.assertFalse(target.exists())

    def test_import_refuses_a_profile_that_is_a_path(self):
        good = [json.loads(line) for line in self.export(self.stream_run).read_text().splitlines()]
        for profile in ("../../outside", "/etc", "a/b", ".."):
            with self.subTest(profile=profile):
                lines = [dict(line) for line in good]
                for line in lines:
                    if line["type"] == "session":
                        config = json.loads(line["config"]) if isinstance(line["config"], str) else line["config"]
                        config["profile"] = profile
                        line["config"] = json.dumps(config) if isinstance(line["config"], str) else config
                f = self.tmp / "profile-path.jsonl"
                f.write_text("".join(json.dumps(line) + "\n" for line in lines))
                target = self.fresh_path("profile")
                p = tool("import", str(f), "--db", str(target))
                self.assertEqual(p.returncode, 4, p.stderr)
                self.assertIn(b"ValueError: profile must be a plain name", p.stderr)
                self.assertFalse(target.exists())

    def test_unknown_run_or_session_exit_3(self):
        self.assertEqual(tool("export", "f" * 32, "--db", str(self.db)).returncode, 3)
        self.assertEqual(tool("export", "--session", "nobody", "--db", str(self.db)).returncode, 3)

    def test_missing_log_exit_2(self):
        empty_home = Path(tempfile.mkdtemp(prefix="home-", dir=self.tmp))
        for args in (["runs"], ["sessions"], ["replay", self.echo_run], ["export", self.echo_run]):
            with self.subTest(args=args):
                p = tool(*args, "--db", str(self.tmp / "nothing.db"))
                self.assertEqual(p.returncode, 2)
                self.assertIn(b"no event log at", p.stderr)
                p = tool(*args, "--hermes-home", str(empty_home))
                self.assertEqual(p.returncode, 2)
                self.assertIn(str(empty_home / "hermes-bridge" / "events.db").encode(), p.stderr)
        self.assertEqual(tool("import", str(self.tmp / "no-such-export.jsonl"), "--db",
                              str(self.tmp / "x.db")).returncode, 2)

    def test_help_documents_exit_codes(self):
        for command in ("runs", "sessions", "replay", "export", "import"):
            with self.subTest(command=command):
                p = tool(command, "--help")
                self.assertEqual(p.returncode, 0)
                self.assertIn(b"Exit codes: 0 ok", p.stdout)
                self.assertIn(b"4 refused", p.stdout)
                self.assertIn(b"5 damaged input file", p.stdout)


if __name__ == "__main__":
    unittest.main()
