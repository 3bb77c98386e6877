"""The worker process's Python side, driven the way the daemon drives it:
frames over a socket pair, with the fake agent. Stdlib only; run with any
Python 3.11+ (CTest uses /usr/bin/python3)."""

from __future__ import annotations

import io
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bridge" / "python"))

import worker_frames as frames  # noqa: E402
from worker_connection import Connection  # noqa: E402


class FakeTurn:
    """What Connection.send_for needs of worker_main.Turn."""

    def __init__(self, turn_id: int) -> None:
        self.turn_id, self.seq, self.closed = turn_id, 0, False


class FrameCodec(unittest.TestCase):
    def test_round_trip(self):
        data = frames.encode("text", {"turn": 1, "seq": 2, "text": "h\u00e9 \u20ac"})
        self.assertEqual(struct.unpack(">I", data[:4])[0], len(data) - 4)
        self.assertEqual(frames.read(io.BytesIO(data)), {"t": "text", "turn": 1, "seq": 2, "text": "h\u00e9 \u20ac"})

    def test_clean_end_is_none_and_a_cut_is_an_error(self):
        self.assertIsNone(frames.read(io.BytesIO(b"")))
        data = frames.encode("reply", {"req": 1, "ok": True, "value": "", "error_type": "", "error": ""})
        for cut in range(1, len(data)):
            with self.assertRaises(frames.FrameError):
                frames.read(io.BytesIO(data[:cut]))

    def test_garbage_is_an_error(self):
        for body in (b"{", b"[]", b'"x"', b"{}", b'{"t": 3}', b"\xff\xfe"):
            with self.assertRaises(frames.FrameError):
                frames.read(io.BytesIO(struct.pack(">I", len(body)) + body))
        with self.assertRaises(frames.FrameError):
            frames.read(io.BytesIO(struct.pack(">I", frames.MAX_PART_BYTES + 1)))

    def test_a_frame_over_the_part_size_goes_in_parts_and_arrives_whole(self):
        text = "x" * (frames.MAX_PART_BYTES * 2 + 17)
        data = frames.encode("text", {"turn": 1, "seq": 1, "text": text})
        (first,) = struct.unpack(">I", data[:4])
        self.assertTrue(first & frames.MORE_PARTS)
        self.assertEqual(first & ~frames.MORE_PARTS, frames.MAX_PART_BYTES)
        stream = io.BytesIO(data + frames.encode("text", {"turn": 1, "seq": 2, "text": "next"}))
        self.assertEqual(frames.read(stream)["text"], text)
        self.assertEqual(frames.read(stream)["text"], "next")
        with self.assertRaises(frames.FrameError):  # an announced part that never comes
            frames.read(io.BytesIO(data[:frames.MAX_PART_BYTES + 4]))

    def test_a_lone_surrogate_never_breaks_encoding(self):
        data = frames.encode("text", {"turn": 1, "seq": 1, "text": "bad\ud800"})
        self.assertEqual(frames.read(io.BytesIO(data))["text"], "bad?")


class ConnectionCase(unittest.TestCase):
    """A Connection on one end of a socket pair; the test reads the other."""

    def setUp(self):
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        self.addCleanup(theirs.close)
        theirs.settimeout(10)
        self.conn = Connection(ours)
        self.inbox = theirs.makefile("rb")
        self.addCleanup(self.inbox.close)


class Batching(ConnectionCase):
    """Connection: what piles up while its writer is busy goes as one frame."""

    def test_frames_queued_while_the_writer_waits_go_as_batches_in_order_with_their_seq(self):
        a, b = FakeTurn(1), FakeTurn(2)
        # Holding the lock keeps the writer from taking anything: all of it
        # is waiting when the writer gets to it.
        with self.conn.lock:
            self.conn.send_text(a, "a1 ")
            self.conn.send_for(a, "event", json='{"event": "x"}')
            self.conn.send_text(b, "b1 ")
            self.conn.send_text(a, "a2 ")
            self.conn.send("reply", req=5, ok=True, value="", error_type="", error="")
            self.conn.send_text(b, "b2 ")
            self.conn.send_for(b, "turn_end", status="complete", result="{}", error=None, history="[]",
                               message_count=0)
        first = frames.read(self.inbox)
        self.assertEqual(first["t"], "batch")
        self.assertEqual([(f["t"], f["turn"], f["seq"]) for f in first["frames"]],
                         [("text", 1, 1), ("event", 1, 2), ("text", 2, 1), ("text", 1, 3)])
        self.assertEqual([f.get("text") for f in first["frames"]], ["a1 ", None, "b1 ", "a2 "])
        self.assertEqual(frames.read(self.inbox)["t"], "reply")  # not batched: it splits the run, in its place
        second = frames.read(self.inbox)
        self.assertEqual([(f["t"], f["turn"], f["seq"]) for f in second["frames"]],
                         [("text", 2, 2), ("turn_end", 2, 3)])

    def test_an_idle_writer_sends_a_lone_frame_as_itself(self):
        self.conn.send_text(FakeTurn(1), "alone ")
        self.assertEqual(frames.read(self.inbox), {"t": "text", "turn": 1, "seq": 1, "text": "alone "})
        self.conn.send_text(FakeTurn(2), "next ")
        self.assertEqual(frames.read(self.inbox)["text"], "next ")


class Acknowledgements(ConnectionCase):
    """Connection keeps a turn's frames, once sent, until the daemon says its
    event log holds them (`committed`), and holds senders back past a bound."""

    def kept(self):
        with self.conn.lock:
            return {turn: [seq for seq, _, _ in frames_] for turn, frames_ in self.conn.unacked.items()}

    def test_frames_are_kept_until_committed_and_only_a_turns_own(self):
        a, b = FakeTurn(1), FakeTurn(2)
        for text in ("a1", "a2", "a3"):
            self.conn.send_text(a, text)
        self.conn.send_text(b, "b1")
        self.conn.send("reply", req=1, ok=True, value="", error_type="", error="")  # not a turn's: not kept
        self.assertEqual(self.kept(), {1: [1, 2, 3], 2: [1]})
        self.conn.committed(1, 2)
        self.assertEqual(self.kept(), {1: [3], 2: [1]})
        self.conn.committed(2, 1)
        self.conn.committed(1, 9)  # past its last: all of it goes
        self.conn.committed(5, 1)  # a turn it never had
        self.assertEqual(self.kept(), {})
        self.assertEqual((self.conn.unacked_frames, self.conn.unacked_bytes), (0, 0))

    def test_senders_wait_past_the_bound_until_an_acknowledgement_makes_room(self):
        self.conn.UNACKED_LIMIT = 1000
        turn = FakeTurn(1)
        self.conn.send_text(turn, "x" * 2000)  # over the bound once sent and kept
        frames.read(self.inbox)
        sent = threading.Event()
        threading.Thread(target=lambda: (self.conn.send_text(turn, "next"), sent.set()), daemon=True).start()
        self.assertFalse(sent.wait(0.3))  # held back: nothing acknowledged
        self.conn.committed(1, 1)
        self.assertTrue(sent.wait(5))
        self.assertEqual(frames.read(self.inbox)["text"], "next")


class WorkerProcess(unittest.TestCase):
    """worker_main.py as the daemon starts it: fd 3 is its end of the pair."""

    EXTRA_ENV = {"test_a_flood_of_requests_runs_on_a_bounded_number_of_threads": {"FAKE_AGENT_INIT_DELAY_MS": "400"},
                 "test_warm_means_a_first_agents_one_time_costs_are_paid": {"FAKE_AGENT_LOG": "{tmp}/events.jsonl"}}

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        home = Path(self.tmp.name) / "home"
        home.mkdir()
        (home / "config.yaml").write_text(json.dumps({"model": {"default": "m", "provider": "fake"},
                                                      "platform_toolsets": {"cli": ["web", "terminal"]}}))
        ours, theirs = socket.socketpair()
        self.sock = ours
        self.inbox = ours.makefile("rb")
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.pop("FAKE_AGENT_LOG", None)
        env.update({k: v.format(tmp=self.tmp.name) for k, v in self.EXTRA_ENV.get(self._testMethodName, {}).items()})
        self.proc = subprocess.Popen(
            [sys.executable, "-B", str(REPO / "bridge" / "python" / "worker_main.py"), "--fd", str(theirs.fileno()),
             "--agent-root", str(REPO / "tests" / "fake_agent"), "--hermes-home", str(home), "--profile", "default"],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env)
        theirs.close()
        self.sock.settimeout(20)
        self.pending: list = []
        self.warm_seen, self.batches = False, 0

    def tearDown(self):
        self.inbox.close()  # the socket's fd stays open while its file object is
        self.sock.close()
        self.proc.wait(10)
        self.proc.stdout.close()
        self.tmp.cleanup()

    def send(self, kind, **fields):
        self.sock.sendall(frames.encode(kind, fields))

    def read(self):
        """The next frame, a batch's frames one by one; `warm` noted, not returned."""
        while not self.pending:
            f = frames.read(self.inbox)
            if f["t"] == "warm":
                self.warm_seen = True
            elif f["t"] == "batch":
                self.assertGreater(len(f["frames"]), 1)
                self.batches += 1
                self.pending.extend(f["frames"])
            else:
                self.pending.append(f)
        return self.pending.pop(0)

    def until(self, kind):
        seen = []
        while True:
            f = self.read()
            seen.append(f)
            if f["t"] == kind:
                return f, seen

    def test_a_turn_streams_asks_and_ends_in_order(self):
        ready = self.read()
        self.assertEqual(ready["t"], "ready")
        self.assertEqual(ready["error"], "")
        self.assertEqual(ready["pid"], self.proc.pid)
        self.assertEqual(frames.read(self.inbox), {"t": "warm"})  # run_agent imported: ready for sessions
        self.send("create_session", req=1, handle=7, session_id="s", profile="default", model="", provider="")
        created = self.read()
        self.assertEqual((created["t"], created["req"], created["ok"]), ("reply", 1, True), created)
        self.assertEqual(json.loads(created["value"])["profile"], "default")
        self.send("start_turn", turn=3, handle=7, request=json.dumps({"message": "script:say hi there;approve-cli ls"}))
        ask, before = self.until("ask")
        self.assertEqual(ask["kind"], "approval")
        self.assertEqual(json.loads(ask["request"])["command"], "ls")
        self.send("answer", turn=3, ask=ask["ask"], text="once")
        end, after = self.until("turn_end")
        frames_of_turn = before + after
        self.assertEqual([f["seq"] for f in frames_of_turn], list(range(1, len(frames_of_turn) + 1)))
        text = "".join(f["text"] for f in frames_of_turn if f["t"] == "text")
        self.assertEqual(text, "hi therechoice=once ")
        self.assertEqual(end["status"], "complete")
        self.assertEqual(end["message_count"], len(json.loads(end["history"])))

    def test_warm_means_a_first_agents_one_time_costs_are_paid(self):
        log = Path(self.tmp.name, "events.jsonl")
        self.assertEqual(self.read()["t"], "ready")
        self.assertEqual(frames.read(self.inbox), {"t": "warm"})
        warm_up = [json.loads(line) for line in log.read_text().splitlines()]
        # Before any session: the tool checks for the profile's toolsets, and the environment probe.
        self.assertEqual([(e["op"], e.get("first")) for e in warm_up], [("tool_checks", True), ("env_probe", None)])
        self.assertEqual(warm_up[0]["pid"], self.proc.pid)
        self.assertEqual(sorted(warm_up[0]["enabled_toolsets"]), ["terminal", "web"])
        self.send("create_session", req=1, handle=1, session_id="s", profile="default", model="", provider="")
        self.assertTrue(self.read()["ok"])
        self.send("start_turn", turn=1, handle=1, request=json.dumps({"message": "script:say hi"}))
        self.until("turn_end")
        events = [json.loads(line) for line in log.read_text().splitlines()][len(warm_up):]
        checks = [e for e in events if e["op"] == "tool_checks"]
        init = next(e for e in events if e["op"] == "init")
        # The session's agent found them paid: the same toolsets, not its process's first check, no second probe.
        self.assertEqual([(c["first"], c["enabled_toolsets"]) for c in checks], [(False, warm_up[0]["enabled_toolsets"])])
        self.assertEqual(init["kwargs"].count("enabled_toolsets"), 1)
        self.assertNotIn("env_probe", [e["op"] for e in events])

    def test_a_fast_stream_arrives_whole_and_in_order_however_it_is_batched(self):
        self.read()
        self.send("create_session", req=1, handle=1, session_id="s", profile="default", model="", provider="")
        self.assertTrue(self.read()["ok"])
        self.send("start_turn", turn=1, handle=1, request=json.dumps({"message": "script:stream 3000 0"}))
        end, seen = self.until("turn_end")
        self.assertEqual([f["seq"] for f in seen], list(range(1, len(seen) + 1)))
        self.assertEqual([f["text"] for f in seen if f["t"] == "text"], [f"d{i} " for i in range(3000)])

    def test_an_unknown_handle_is_a_python_error_and_the_worker_goes_on(self):
        self.read()
        self.send("steer_turn", req=1, handle=99, text="x")
        r = self.read()
        self.assertEqual((r["ok"], r["error_type"]), (False, "KeyError"))
        self.send("profile_call", req=2, profile="default", op="skills", args="{}")
        r = self.read()
        self.assertEqual((r["ok"], r["error_type"], r["error"]),
                         (False, "ValueError", "unknown profile operation: skills"))
        self.send("profile_call", req=3, profile="default", op="command",
                  args=json.dumps({"session_id": "s", "command": "/goal"}))
        self.assertEqual(json.loads(self.read()["value"])["action"], "goal_status")

    def test_it_interrupts_and_exits_when_the_daemon_goes(self):
        self.read()
        self.send("create_session", req=1, handle=1, session_id="s", profile="default", model="", provider="")
        self.read()
        self.send("start_turn", turn=1, handle=1, request=json.dumps({"message": "script:stream 1000 20"}))
        self.until("text")  # the turn streams (after its bridge.context.ready event)
        started = time.monotonic()
        self.inbox.close()
        self.sock.shutdown(socket.SHUT_RDWR)
        self.assertEqual(self.proc.wait(10), 0)
        self.assertLess(time.monotonic() - started, 4)
        self.assertEqual(self.proc.stdout.read(), b"")  # the worker's own stdout stays empty here

    def test_a_heartbeat_is_answered_while_a_turn_holds_its_thread(self):
        self.read()
        self.send("create_session", req=1, handle=1, session_id="s", profile="default", model="", provider="")
        self.assertTrue(self.read()["ok"])
        self.send("start_turn", turn=1, handle=1, request=json.dumps({"message": "script:hang 4000"}))
        started = time.monotonic()
        self.send("heartbeat", beat=5)
        reply, _ = self.until("heartbeat_reply")
        self.assertEqual(reply["beat"], 5)
        self.assertLess(time.monotonic() - started, 2)  # not after the turn's 4 s

    def test_a_flood_of_requests_runs_on_a_bounded_number_of_threads(self):
        self.read()
        # Each agent takes 400 ms to build: a thread per request would have
        # a hundred of them alive at once.
        for req in range(1, 101):
            self.send("create_session", req=req, handle=req, session_id=f"s{req}", profile="default", model="",
                      provider="")
        most, answered = 0, 0
        self.sock.settimeout(60)
        while answered < 100:
            f = self.read()
            answered += f["t"] == "reply"
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
            most = max(most, int(status.split("Threads:")[1].split()[0]))
        self.assertLessEqual(most, 24, "threads in the worker while a hundred requests were in flight")


if __name__ == "__main__":
    unittest.main()
