"""The worker process's Python side, driven the way the daemon drives it:
frames over a socket pair, with the fake agent. Stdlib only; run with any
Python 3.11+ (CTest uses /usr/bin/python3)."""

from __future__ import annotations

import io
import contextlib
import json
import os
import signal
import socket
import stat
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
import worker_threads  # noqa: E402
from worker_connection import Connection  # noqa: E402


class FakeTurn:
    """What Connection.send_for needs of worker_turn.Turn."""

    def __init__(self, turn_id: int) -> None:
        self.turn_id, self.seq, self.closed, self.held = turn_id, 0, False, False
        self.pending, self.queued = [], False


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

    def test_raw_fields_follow_the_object_unescaped_and_read_back_as_json_text(self):
        result = '{"final_response": "h\u00e9 \\"quoted\\"", "messages": [1, 2]}'
        data = frames.encode("turn_end", {"turn": 3, "seq": 9, "status": "complete", "result": frames.Raw(result),
                                          "error": None, "history": frames.raw("[1, 2]"), "message_count": 2})
        body = data[4:]
        head, _, tail = body.partition(b"\n")
        # The longest last (the daemon hands the frame's buffer to it), as the
        # adapter encoded them: no escaping.
        self.assertEqual(json.loads(head)["raw"], [["history", 6], ["result", len(result.encode())]])
        self.assertEqual(tail, b"[1, 2]" + result.encode())
        self.assertEqual(frames.read(io.BytesIO(data)),
                         {"t": "turn_end", "turn": 3, "seq": 9, "status": "complete", "result": result,
                          "error": None, "history": "[1, 2]", "message_count": 2})
        self.assertIsNone(frames.raw(None))

    def test_a_raw_field_over_the_part_size_goes_in_parts_without_copies(self):
        result = '"' + "y" * (frames.MAX_PART_BYTES + 100) + '"'
        chunks = frames.encode_items([(1, 4, "turn_end", {"status": "complete", "result": frames.Raw(result),
                                                          "error": None, "history": None, "message_count": 0})])
        self.assertTrue(any(isinstance(c, memoryview) for c in chunks))  # views of the raw bytes
        frame = frames.read(io.BytesIO(b"".join(chunks)))
        self.assertEqual((frame["t"], frame["seq"], len(frame["result"])), ("turn_end", 4, len(result)))

    def test_bad_raw_lists_are_errors(self):
        for head, tail in (({"t": "x"}, b"1"), ({"t": "x", "raw": [["a", 5]]}, b"1"),
                           ({"t": "x", "raw": [["a", 1]]}, b"12"), ({"t": "x", "raw": [["t", 1]]}, b"1"),
                           ({"t": "x", "raw": [["a", 1]]}, b"\xff")):
            body = json.dumps(head).encode() + b"\n" + tail
            with self.assertRaises(frames.FrameError):
                frames.read(io.BytesIO(struct.pack(">I", len(body)) + body))

    def test_a_turns_stream_is_spelled_as_the_daemons_fast_reader_expects(self):
        # bridge/worker/stream_decoder.cpp reads exactly this spelling without a
        # general JSON parse (FRAMES.md, "Spelling"); any other is read slowly.
        body = b"".join(frames.encode_items([(7, 1, "event", {"json": '{"event": "x"}'}),
                                             (7, 2, "texts", ["d0 ", "d1 "])]))[4:]
        self.assertEqual(body, b'{"t": "batch", "frames": [{"t": "event", "turn": 7, "seq": 1, '
                               b'"json": "{\\"event\\": \\"x\\"}"}, '
                               b'{"t": "texts", "turn": 7, "seq": 2, "texts": ["d0 ", "d1 "]}]}')

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
        self.theirs = theirs
        self.inbox = theirs.makefile("rb")
        self.addCleanup(self.inbox.close)


class ThreadNames(ConnectionCase):
    """The worker's threads carry their names in the kernel (what top -H, perf
    and scripts/bench-hosts show), not only in Python."""

    def test_a_thread_started_by_the_worker_has_its_name_cut_to_the_kernels_15_bytes(self):
        seen: list[str] = []
        worker_threads.start(lambda: seen.append(Path("/proc/thread-self/comm").read_text().strip()),
                             "hb-a-name-longer-than-fifteen").join(10)
        self.assertEqual(seen, ["hb-a-name-longe"])

    def test_the_frame_writer_is_named(self):
        names = [Path(f"/proc/self/task/{tid}/comm").read_text().strip() for tid in os.listdir("/proc/self/task")]
        self.assertIn("hb-frames", names)


class ReadingThread(ConnectionCase):
    """Connection: the thread that waits for the daemon's frames sleeps while
    the daemon reads what the worker sent."""

    def test_the_daemon_reading_the_workers_frames_does_not_wake_the_waiting_reader(self):
        started = threading.Event()
        tid: list[int] = []

        def read_one() -> None:
            tid.append(threading.get_native_id())
            started.set()
            self.conn.inbox.read(1)

        reader = threading.Thread(target=read_one, daemon=True)
        reader.start()
        started.wait(10)
        time.sleep(0.2)  # asleep in its wait

        def switches() -> int:
            with open(f"/proc/self/task/{tid[0]}/status") as f:
                return sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))

        before = switches()
        for _ in range(300):  # each read by the peer frees room on the worker's side
            self.conn.sock.sendall(b"x")
            self.theirs.recv(1)
        woken = switches() - before
        self.theirs.sendall(b"!")  # the frame it waits for
        reader.join(10)
        self.assertFalse(reader.is_alive())
        self.assertLess(woken, 30)  # in recv() it is woken about once per read: ~300


class Batching(ConnectionCase):
    """Connection: what piles up while its writer is busy goes as one frame."""

    def test_frames_queued_while_the_writer_waits_go_as_batches_in_order_with_their_seq(self):
        a, b = FakeTurn(1), FakeTurn(2)
        # Holding the lock keeps the writer from taking anything: all of it
        # is waiting when the writer gets to it.
        with self.conn.lock:
            self.conn.text_sender(a)("a1 ")
            self.conn.send_for(a, "event", json='{"event": "x"}')
            self.conn.text_sender(b)("b1 ")
            self.conn.text_sender(a)("a2 ")
            self.conn.send("reply", req=5, ok=True, value="", error_type="", error="")
            self.conn.text_sender(b)("b2 ")
            self.conn.send_for(b, "turn_end", status="complete", result="{}", error=None, history="[]",
                               message_count=0)
        first = frames.read(self.inbox)
        self.assertEqual(first["t"], "batch")
        self.assertEqual([(f["t"], f["turn"], f["seq"]) for f in first["frames"]],
                         [("texts", 1, 1), ("event", 1, 2), ("texts", 2, 1), ("texts", 1, 3)])
        self.assertEqual([f.get("texts") for f in first["frames"]], [["a1 "], None, ["b1 "], ["a2 "]])
        self.assertEqual(frames.read(self.inbox)["t"], "reply")  # not batched: it splits the run, in its place
        second = frames.read(self.inbox)
        self.assertEqual([(f["t"], f["turn"], f["seq"]) for f in second["frames"]],
                         [("texts", 2, 2), ("turn_end", 2, 3)])

    def test_a_turn_end_with_raw_fields_goes_as_itself_between_batches_in_order(self):
        a, b = FakeTurn(1), FakeTurn(2)
        with self.conn.lock:
            self.conn.text_sender(a)("a1 ")
            self.conn.text_sender(b)("b1 ")
            self.conn.send_for(a, "turn_end", status="complete", result=frames.raw('{"x": 1}'), error=None,
                               history=frames.raw("[]"), message_count=0)
            self.conn.text_sender(b)("b2 ")
            self.conn.send_event(b, '{"event": "y"}')
        first = frames.read(self.inbox)
        self.assertEqual([(f["t"], f["turn"], f["seq"]) for f in first["frames"]], [("texts", 1, 1), ("texts", 2, 1)])
        end = frames.read(self.inbox)
        self.assertEqual((end["t"], end["turn"], end["seq"], end["result"], end["history"]),
                         ("turn_end", 1, 2, '{"x": 1}', "[]"))
        third = frames.read(self.inbox)
        self.assertEqual([(f["t"], f["turn"], f["seq"]) for f in third["frames"]], [("texts", 2, 2), ("event", 2, 3)])

    def test_a_turns_texts_that_follow_each_other_go_as_one_texts_frame(self):
        # Another turn's frames between them do not split them: turns keep
        # their own order, not one among each other.
        a, b = FakeTurn(1), FakeTurn(2)
        with self.conn.lock:
            for i in range(5):
                self.conn.text_sender(a)(f"a{i} ")
            self.conn.text_sender(b)("b0 ")
            self.conn.text_sender(a)("a5 ")
            self.conn.send_event(a, '{"event": "x"}')
            self.conn.text_sender(a)("a6 ")
            self.conn.send_event(b, '{"event": "y"}')
        batch = frames.read(self.inbox)
        self.assertEqual([(f["t"], f["turn"], f["seq"], f.get("texts")) for f in batch["frames"]],
                         [("texts", 1, 1, ["a0 ", "a1 ", "a2 ", "a3 ", "a4 ", "a5 "]), ("event", 1, 7, None),
                          ("texts", 1, 8, ["a6 "]), ("texts", 2, 1, ["b0 "]), ("event", 2, 2, None)])
        self.assertEqual([(f["t"], f["seq"], f.get("text")) for f in frames.expand(batch)][:3],
                         [("text", 1, "a0 "), ("text", 2, "a1 "), ("text", 3, "a2 ")])

    def test_many_threads_streaming_at_once_each_keep_their_order(self):
        turns = [FakeTurn(i + 1) for i in range(16)]
        def stream(turn):
            for i in range(500):
                self.conn.text_sender(turn)(f"{i} ")
                if i % 100 == 0:
                    self.conn.send_event(turn, f'{{"event": "e{i}"}}')
            self.conn.end_turn(turn, status="complete", result="{}", error=None, history="[]", message_count=0)
        threads = [threading.Thread(target=stream, args=(t,)) for t in turns]
        for x in threads:
            x.start()
        got = {t.turn_id: [] for t in turns}
        ended = 0
        while ended < len(turns):
            for f in frames.expand(frames.read(self.inbox)):
                got[f["turn"]].append(f)
                ended += f["t"] == "turn_end"
        for x in threads:
            x.join()
        for frames_ in got.values():
            self.assertEqual([f["seq"] for f in frames_], list(range(1, len(frames_) + 1)))
            self.assertEqual([f["text"] for f in frames_ if f["t"] == "text"], [f"{i} " for i in range(500)])
            self.assertEqual([f["t"] for f in frames_].count("event"), 5)
            self.assertEqual(frames_[-1]["t"], "turn_end")

    def test_threads_sharing_a_turn_lose_nothing_and_each_keep_their_order(self):
        # Two threads put on one turn's pending list at once while the writer
        # keeps taking from it: every frame arrives once, seq without gaps.
        turn = FakeTurn(1)
        text = self.conn.text_sender(turn)

        def stream(name: str) -> None:
            for i in range(3000):
                text(f"{name}{i} ")
                if i % 500 == 0:
                    self.conn.send_event(turn, f'{{"event": "{name}{i}"}}')

        threads = [threading.Thread(target=stream, args=(name,)) for name in "xy"]
        for x in threads:
            x.start()
        for x in threads:
            x.join()
        self.conn.end_turn(turn, status="complete", result="{}", error=None, history="[]", message_count=0)
        got: list[dict] = []
        while not got or got[-1]["t"] != "turn_end":
            got += frames.expand(frames.read(self.inbox))
        self.assertEqual([f["seq"] for f in got], list(range(1, 6000 + 12 + 2)))
        for name in "xy":
            self.assertEqual([f["text"] for f in got if f["t"] == "text" and f["text"].startswith(name)],
                             [f"{name}{i} " for i in range(3000)])
            self.assertEqual([f["json"] for f in got if f["t"] == "event" and name in f["json"]],
                             [f'{{"event": "{name}{i}"}}' for i in range(0, 3000, 500)])

    def test_a_turn_with_too_much_pending_or_a_long_frame_goes_the_slow_way_in_order(self):
        # While the writer cannot take (the lock is held), a turn's pending
        # list stops at its bound: the next delta waits for the lock, as
        # does a long one at once; nothing is reordered.
        self.conn.PENDING_FRAMES = 3
        turn = FakeTurn(1)
        text = self.conn.text_sender(turn)
        done = threading.Event()
        with self.conn.lock:
            for i in range(3):
                text(f"{i} ")

            def more() -> None:
                text("3 ")  # over the bound: waits for the lock
                self.conn.send_event(turn, '{"event": "e"}')
                text("x" * 200)  # long: the slow way at once
                done.set()

            threading.Thread(target=more, daemon=True).start()
            self.assertFalse(done.wait(0.3))
            self.assertEqual(turn.pending, ["0 ", "1 ", "2 "])
        self.assertTrue(done.wait(5))
        self.conn.end_turn(turn, status="complete", result="{}", error=None, history="[]", message_count=0)
        got: list[dict] = []
        while not got or got[-1]["t"] != "turn_end":
            got += frames.expand(frames.read(self.inbox))
        self.assertEqual([(f["seq"], f.get("text", f.get("json"))) for f in got][:6],
                         [(1, "0 "), (2, "1 "), (3, "2 "), (4, "3 "), (5, '{"event": "e"}'), (6, "x" * 200)])

    def test_a_turns_own_frame_under_the_lock_comes_after_what_it_put_while_another_thread_announces(self):
        # Another of the turn's threads has marked it queued but not yet put
        # it on `incoming` (paused between the two): what this thread puts
        # goes on the turn's list unannounced, and its next frame under the
        # lock must still come after it.
        turn = FakeTurn(1)
        text = self.conn.text_sender(turn)
        with self.conn.lock:
            turn.queued = True
            text("earlier ")
            self.conn.send_event(turn, '{"event": "long", "text": "' + "x" * 200 + '"}')  # the lock's way
            self.conn.end_turn(turn, status="complete", result="{}", error=None, history="[]", message_count=0)
        got: list[dict] = []
        while not got or got[-1]["t"] != "turn_end":
            got += frames.expand(frames.read(self.inbox))
        self.assertEqual([(f["seq"], f["t"]) for f in got], [(1, "text"), (2, "event"), (3, "turn_end")])
        self.assertEqual(got[0]["text"], "earlier ")

    def test_an_idle_writer_sends_a_lone_frame_as_itself(self):
        self.conn.text_sender(FakeTurn(1))("alone ")
        self.assertEqual(frames.read(self.inbox), {"t": "texts", "turn": 1, "seq": 1, "texts": ["alone "]})
        self.conn.text_sender(FakeTurn(2))("next ")
        self.assertEqual(frames.read(self.inbox)["texts"], ["next "])

    def test_the_stream_callback_skips_none_and_sends_any_delta_as_valid_text(self):
        turn = FakeTurn(1)
        text = self.conn.text_sender(turn)
        with self.conn.lock:
            for delta in ("a ", None, 7, "bad\ud800 ", "\u00e9 "):
                text(delta)
        self.assertEqual(frames.read(self.inbox), {"t": "texts", "turn": 1, "seq": 1,
                                                   "texts": ["a ", "7", "bad\ufffd ", "\u00e9 "]})
        self.assertEqual(turn.seq, 4)

    def test_a_closed_turns_stream_callback_sends_nothing(self):
        a, b = FakeTurn(1), FakeTurn(2)
        self.conn.end_turn(a, status="complete", result="{}", error=None, history="[]", message_count=0)
        self.assertEqual(frames.read(self.inbox)["t"], "turn_end")
        for _ in range(100):
            self.conn.text_sender(a)("late ")  # a thread the turn left behind
        self.assertLessEqual(len(a.pending), 1)  # not kept, and the writer not woken for it
        self.assertFalse(a.queued)
        self.conn.text_sender(b)("b ")
        self.assertEqual(frames.read(self.inbox)["turn"], 2)


class Acknowledgements(ConnectionCase):
    """Connection keeps a turn's frames, once sent, until the daemon says its
    event log holds them (`committed`), and holds senders back past a bound."""

    def kept(self):
        with self.conn.lock:
            # Each kept entry as the seqs it holds (a `texts` entry holds several).
            return {turn: [seq for last, frame, _ in frames_ for seq in range(frame[1], last + 1)]
                    for turn, frames_ in self.conn.unacked.items()}

    def test_frames_are_kept_until_committed_and_only_a_turns_own(self):
        a, b = FakeTurn(1), FakeTurn(2)
        self.conn.text_sender(a)("a1")
        self.conn.send_event(a, "{}")  # ends a run of texts: a1 is an entry of its own
        with self.conn.lock:  # the writer waits: a3 and a4 join one `texts` entry
            self.conn.text_sender(a)("a3")
            self.conn.text_sender(a)("a4")
        self.conn.text_sender(b)("b1")
        self.conn.send("reply", req=1, ok=True, value="", error_type="", error="")  # not a turn's: not kept
        self.assertEqual(self.kept(), {1: [1, 2, 3, 4], 2: [1]})
        self.assertEqual(self.conn.unacked_frames, 5)
        self.conn.committed(1, 2)
        self.assertEqual(self.kept(), {1: [3, 4], 2: [1]})
        self.conn.committed(1, 3)  # half of the `texts`: it stays whole until all of it is in the log
        self.assertEqual(self.kept(), {1: [3, 4], 2: [1]})
        self.conn.committed(2, 1)
        self.conn.committed(1, 9)  # past its last: all of it goes
        self.conn.committed(5, 1)  # a turn it never had
        self.assertEqual(self.kept(), {})
        self.assertEqual((self.conn.unacked_frames, self.conn.unacked_bytes), (0, 0))

    def test_a_resume_inside_a_texts_entry_sends_only_what_comes_after(self):
        a = FakeTurn(1)
        self.conn.track(a)
        with self.conn.lock:
            for i in range(1, 6):
                self.conn.text_sender(a)(f"a{i}")
        self.assertEqual(frames.read(self.inbox), {"t": "texts", "turn": 1, "seq": 1, "texts": ["a1", "a2", "a3", "a4", "a5"]})
        with self.conn.lock:
            a.held = True  # as an attach leaves it: the new daemon's log holds up to seq 2
        self.conn.resume(1, 2)
        self.assertEqual(frames.read(self.inbox), {"t": "texts", "turn": 1, "seq": 3, "texts": ["a3", "a4", "a5"]})
        self.conn.text_sender(a)("a6")
        self.assertEqual(frames.expand(frames.read(self.inbox)), [{"t": "text", "turn": 1, "seq": 6, "text": "a6"}])
        self.assertEqual(self.kept(), {1: [1, 2, 3, 4, 5, 6]})  # kept whole until all of it is in the log
        self.conn.committed(1, 5)
        self.assertEqual(self.kept(), {1: [6]})

    def test_senders_wait_past_the_bound_until_an_acknowledgement_makes_room(self):
        self.conn.UNACKED_LIMIT = 1000
        turn = FakeTurn(1)
        self.conn.text_sender(turn)("x" * 2000)  # over the bound once sent and kept
        frames.read(self.inbox)
        sent = threading.Event()
        threading.Thread(target=lambda: (self.conn.text_sender(turn)("next"), sent.set()), daemon=True).start()
        self.assertFalse(sent.wait(0.3))  # held back: nothing acknowledged
        self.conn.committed(1, 1)
        self.assertTrue(sent.wait(5))
        self.assertEqual(frames.read(self.inbox)["texts"], ["next"])


ARENA_PROBE = r"""
import ctypes, os, sys, tempfile, threading
sys.path.insert(0, sys.argv[1])
if sys.argv[2] == "tuned":
    import worker_warmup
    worker_warmup.tune_malloc()
kept, start = [], threading.Barrier(8)
def turn():  # as a turn thread does: allocates while the others do
    start.wait()
    kept.extend(bytearray(4096) for _ in range(200))
threads = [threading.Thread(target=turn) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
handle, path = tempfile.mkstemp()
os.close(handle)
fp = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(fp))
libc.fclose(ctypes.c_void_p(fp))
print(open(path).read().count("<heap nr="))
os.unlink(path)
"""


class MallocArenas(unittest.TestCase):
    """glibc's arenas in a process whose threads allocate at once, as a
    worker's turn threads do (worker_warmup.tune_malloc)."""

    def heaps(self, mode: str, **env: str) -> int:
        environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
        environ.update(env)
        out = subprocess.run([sys.executable, "-B", "-c", ARENA_PROBE, str(REPO / "bridge" / "python"), mode],
                             capture_output=True, text=True, env=environ, timeout=60, check=True)
        return int(out.stdout.strip())

    def test_a_worker_keeps_one_arena_where_threads_would_each_get_one(self):
        self.assertGreater(self.heaps("plain"), 1)  # what the worker avoids
        self.assertEqual(self.heaps("tuned"), 1)

    def test_a_users_own_malloc_arena_max_wins(self):
        self.assertGreater(self.heaps("tuned", MALLOC_ARENA_MAX="4"), 1)


FREEZE_PROBE = """
import gc, json, sys
sys.path.insert(0, sys.argv[1])
import worker_main, worker_warmup
worker = worker_main.Worker(None, "", {})
seen = {}
worker.building = 1
seen["building"] = [worker_warmup.freeze_imports(worker), gc.get_freeze_count()]
worker.building, worker.sessions = 0, {1: object()}
seen["a session"] = [worker_warmup.freeze_imports(worker), gc.get_freeze_count()]
worker.sessions = {}
seen["none"] = [worker_warmup.freeze_imports(worker), gc.get_freeze_count()]
print(json.dumps(seen))
"""


class FrozenImports(unittest.TestCase):
    """worker_warmup.freeze_imports, in a process of its own (gc.freeze is process-wide)."""

    def test_the_warm_up_imports_are_frozen_only_while_no_session_exists_or_is_being_built(self):
        out = subprocess.run([sys.executable, "-B", "-c", FREEZE_PROBE, str(REPO / "bridge" / "python")],
                             capture_output=True, text=True, timeout=60, check=True)
        seen = json.loads(out.stdout)
        self.assertEqual(seen["building"], [False, 0])
        self.assertEqual(seen["a session"], [False, 0])
        self.assertTrue(seen["none"][0])
        self.assertGreater(seen["none"][1], 1000)  # the modules imported so far


class WorkerCase(unittest.TestCase):
    """worker_main.py as the daemon starts it: fd 3 is its end of the pair."""

    EXTRA_ENV: dict = {}  # test name -> environment ({tmp}: the test's directory)

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
             "--agent-root", str(REPO / "tests" / "fake_agent"), "--hermes-home", str(home), "--profile", "default",
             *self.worker_args()],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env)
        theirs.close()
        self.sock.settimeout(20)
        self.pending: list = []
        self.warm_seen, self.batches = False, 0

    def worker_args(self) -> list:
        return []

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
            else:
                if f["t"] == "batch":
                    self.assertGreater(len(f["frames"]), 1)
                if len(frames.expand(f)) > 1:
                    self.batches += 1
                self.pending.extend(frames.expand(f))
        return self.pending.pop(0)

    def until_warm(self):
        """Frames that come before `warm` stay pending for read()."""
        while not self.warm_seen:
            f = frames.read(self.inbox)
            if f["t"] == "warm":
                self.warm_seen = True
            else:
                self.pending.extend(frames.expand(f))

    def until(self, kind):
        seen = []
        while True:
            f = self.read()
            seen.append(f)
            if f["t"] == kind:
                return f, seen


class WorkerProcess(WorkerCase):
    EXTRA_ENV = {"test_a_flood_of_requests_runs_on_a_bounded_number_of_threads": {"FAKE_AGENT_INIT_DELAY_MS": "400"},
                 "test_warm_means_a_first_agents_one_time_costs_are_paid": {"FAKE_AGENT_LOG": "{tmp}/events.jsonl"}}

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

    def test_a_turn_frame_clears_a_stale_interrupt_then_steers_and_a_later_interrupt_counts(self):
        self.read()
        self.send("create_session", req=1, handle=1, session_id="s", profile="default", model="", provider="")
        self.assertTrue(self.read()["ok"])

        def turn(turn_id, **fields):
            self.send("start_turn", turn=turn_id, handle=1, request=json.dumps({"message": "script:steer-wait 300"}),
                      **fields)
            end, seen = self.until("turn_end")
            return end["status"], "".join(f["text"] for f in seen if f["t"] == "text")

        def stale_interrupt(req):
            self.send("interrupt_turn", req=req, handle=1, message=json.dumps("stop"))
            self.assertTrue(self.read()["ok"])

        stale_interrupt(2)
        self.assertEqual(turn(1, steer="go left", clear_interrupt=True), ("complete", "steered=go left "))
        stale_interrupt(3)  # a frame of version 4 clears nothing: the daemon called prepare_turn first
        self.assertEqual(turn(2)[0], "interrupted")
        # An interrupt read after the turn's frame is the client's, not stale.
        self.sock.sendall(frames.encode("start_turn", {"turn": 3, "handle": 1, "request": json.dumps(
            {"message": "script:steer-wait 3000"}), "clear_interrupt": True})
            + frames.encode("interrupt_turn", {"req": 4, "handle": 1, "message": json.dumps("stop")}))
        end, _ = self.until("turn_end")
        self.assertEqual(end["status"], "interrupted")

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


def wait_until(condition, what, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        time.sleep(0.02)


class ReattachingWorker(WorkerCase):
    """A worker started with --rendezvous: it outlives its daemon, and a
    daemon that comes later attaches to its own socket and takes over."""

    EXTRA_ENV = {name: {"FAKE_AGENT_LOG": "{tmp}/events.jsonl"} for name in (
        "test_a_daemon_that_attaches_gets_exactly_the_frames_its_log_lacks",
        "test_a_dropped_turn_is_interrupted_and_nothing_more_of_it_arrives",
        "test_a_drained_worker_finishes_its_turn_unseen_then_exits")}
    ORPHAN_TIMEOUT = {"test_an_orphan_nobody_attaches_to_exits_after_its_timeout": "0.5"}

    def worker_args(self):
        self.dir = Path(self.tmp.name) / "workers"
        self.dir.mkdir(mode=0o700)
        return ["--rendezvous", str(self.dir), "--orphan-timeout", self.ORPHAN_TIMEOUT.get(self._testMethodName, "30"),
                "--daemon-key", "/the/daemons/events.db"]

    def tearDown(self):
        if self.proc.poll() is None:  # left attached: its daemon says goodbye; else it would wait for one
            with contextlib.suppress(OSError):
                self.send("shutdown")
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        super().tearDown()

    def path(self, suffix):
        return self.dir / f"worker-{self.proc.pid}{suffix}"

    def record(self):
        return json.loads(self.path(".json").read_text())

    def events(self):
        return [json.loads(line) for line in Path(self.tmp.name, "events.jsonl").read_text().splitlines()]

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(sock.close)
        sock.settimeout(20)
        sock.connect(str(self.path(".sock")))
        inbox = sock.makefile("rb")
        self.addCleanup(inbox.close)
        return sock, inbox

    def attach(self, secret=None, version=frames.FRAMES_VERSION):
        """A later daemon's connection: its socket, its stream and the worker's answer."""
        sock, inbox = self.connect()
        sock.sendall(frames.encode("attach", {"secret": self.record()["secret"] if secret is None else secret,
                                              "version": version}))
        return sock, inbox, frames.read(inbox)

    def take_over(self, sock, inbox):
        self.sock, self.inbox, self.pending = sock, inbox, []

    def go_away(self):
        """The daemon dies. The worker is an orphan once its output goes to its log."""
        self.inbox.close()
        self.sock.close()
        wait_until(lambda: self.path(".log").exists(), "the worker noticed its daemon was gone")

    def start(self, message):
        self.ready = self.read()
        self.assertEqual(self.ready["t"], "ready")
        self.send("create_session", req=1, handle=1, session_id="s1", profile="default", model="", provider="")
        self.assertTrue(self.read()["ok"])
        self.until_warm()  # its `warm` is late on a loaded machine; an attach must not race it
        self.send("start_turn", turn=1, handle=1, run="run-1", request=json.dumps({"message": message}))

    def rest(self):
        """Every frame until the worker closes the connection."""
        seen = list(self.pending)
        while (f := frames.read(self.inbox)) is not None:
            seen.append(f)
        return seen

    def test_its_record_and_socket_are_private_and_gone_once_it_exits(self):
        ready = self.read()
        self.assertEqual((ready["t"], ready["version"]), ("ready", frames.FRAMES_VERSION))
        record = self.record()  # written before `ready`
        self.assertEqual(set(record), {"pid", "profile", "socket", "secret", "version", "started_at", "daemon",
                                       "modules"})
        self.assertEqual((record["pid"], record["profile"], record["socket"], record["version"], record["daemon"]),
                         (self.proc.pid, "default", str(self.path(".sock")), frames.FRAMES_VERSION, "/the/daemons/events.db"))
        self.assertEqual(Path(record["modules"]), REPO / "bridge" / "python")  # where its modules came from
        self.assertRegex(record["secret"], "^[0-9a-f]{64}$")
        self.assertLess(abs(time.time() - record["started_at"]), 60)
        for suffix, is_kind in ((".json", stat.S_ISREG), (".sock", stat.S_ISSOCK)):
            mode = os.stat(self.path(suffix)).st_mode
            self.assertTrue(is_kind(mode), suffix)
            self.assertEqual(stat.S_IMODE(mode), 0o600, suffix)
        self.assertEqual(sorted(os.listdir(self.dir)), [self.path(".json").name, self.path(".sock").name])
        self.send("shutdown")
        self.assertEqual(self.proc.wait(10), 0)
        self.assertEqual(os.listdir(self.dir), [])

    def test_a_sigterm_takes_its_files_with_it(self):
        self.read()
        self.assertTrue(self.path(".json").exists())
        self.proc.terminate()
        self.assertEqual(self.proc.wait(10), -signal.SIGTERM)  # it still dies of the signal
        self.assertEqual(os.listdir(self.dir), [])

    def test_an_attach_is_refused_for_a_wrong_secret_or_version_or_while_its_daemon_is_there(self):
        self.read()
        for secret, version, why in (("0" * 64, frames.FRAMES_VERSION, "secret"), (None, 2, "version"),
                                     (None, frames.FRAMES_VERSION, "attached")):
            _, inbox, answer = self.attach(secret, version)
            self.assertEqual(answer["t"], "attach_refused")
            self.assertIn(why, answer["reason"])
            self.assertIsNone(frames.read(inbox))  # and it hangs up
        sock, inbox = self.connect()
        sock.sendall(frames.encode("heartbeat", {"beat": 1}))  # not an attach: no answer at all
        self.assertIsNone(frames.read(inbox))
        self.send("heartbeat", beat=9)  # its daemon is still served
        self.assertEqual(self.until("heartbeat_reply")[0]["beat"], 9)

    def test_a_daemon_that_attaches_gets_exactly_the_frames_its_log_lacks(self):
        self.start("script:stream 120 20")
        seen = []
        while sum(f["t"] == "text" for f in seen) < 6:
            seen.append(self.read())
        self.assertEqual([f["seq"] for f in seen], list(range(1, len(seen) + 1)))
        # The dead daemon's log holds more than its last `committed` told the worker.
        committed = len(seen)
        self.send("committed", turn=1, seq=committed - 3)
        self.go_away()
        delivered = sum(f["t"] == "text" for f in seen)
        wait_until(lambda: sum(e.get("name") == "stream_callback" for e in self.events()) > delivered + 5,
                   "the turn streamed on while nobody listened")
        sock, inbox, attached = self.attach()
        self.assertEqual(attached["t"], "attached", attached)
        self.assertEqual({k: attached[k] for k in self.ready if k != "t"}, {k: v for k, v in self.ready.items() if k != "t"})
        self.assertEqual((attached["pid"], attached["warm"], attached["req"]), (self.proc.pid, True, 1))
        self.assertEqual(attached["sessions"], [{"handle": 1, "session_id": "s1"}])
        (turn,) = attached["turns"]
        self.assertEqual((turn["turn"], turn["handle"], turn["run"], turn["ended"]), (1, 1, "run-1", False))
        self.assertGreater(turn["seq"], seen[-1]["seq"])  # written while it was an orphan
        self.assertEqual(attached["asks"], [])
        self.take_over(sock, inbox)
        self.send("heartbeat", beat=3)
        reply, before = self.until("heartbeat_reply")
        self.assertEqual(before, [reply])  # the turn is held until the daemon says where its log stands
        self.assertGreaterEqual(reply["unacknowledged"], turn["seq"] - committed)
        self.send("resume", turn=1, after=committed)
        end, resumed = self.until("turn_end")
        self.assertEqual([(f["turn"], f["seq"]) for f in resumed],
                         [(1, seq) for seq in range(committed + 1, committed + 1 + len(resumed))])
        texts = [f["text"] for f in seen[:committed] + resumed if f["t"] == "text"]
        self.assertEqual(texts, [f"d{i} " for i in range(120)])  # none missing, none twice
        self.assertEqual(end["status"], "complete")
        self.assertIsNone(self.proc.poll())

    def test_of_two_daemons_racing_to_attach_exactly_one_gets_in(self):
        self.read()
        self.go_away()
        start = threading.Barrier(2)
        answers = [None, None]

        def race(i):
            start.wait()
            answers[i] = self.attach()
        racers = [threading.Thread(target=race, args=(i,)) for i in range(2)]
        for racer in racers:
            racer.start()
        for racer in racers:
            racer.join(20)
        self.assertEqual(sorted(a[2]["t"] for a in answers), ["attach_refused", "attached"])
        winner = next(a for a in answers if a[2]["t"] == "attached")
        loser = next(a for a in answers if a[2]["t"] == "attach_refused")
        self.assertIn("attached", loser[2]["reason"])
        self.assertIsNone(frames.read(loser[1]))
        self.take_over(winner[0], winner[1])
        self.send("heartbeat", beat=4)
        self.assertEqual(self.until("heartbeat_reply")[0]["beat"], 4)

    def test_a_dropped_turn_is_interrupted_and_nothing_more_of_it_arrives(self):
        self.start("script:stream 1000 20")
        self.until("text")
        self.go_away()
        sock, inbox, attached = self.attach()
        self.assertEqual([t["turn"] for t in attached["turns"]], [1])
        self.take_over(sock, inbox)
        self.send("drop_turn", turn=1)
        self.send("heartbeat", beat=1)
        reply, before = self.until("heartbeat_reply")
        self.assertEqual((before, reply["unacknowledged"]), ([reply], 0))  # its kept frames let go
        wait_until(lambda: any(e["op"] == "run_end" and e["interrupted"] for e in self.events()),
                   "the dropped turn was interrupted")
        self.send("shutdown")
        self.assertEqual([f for f in self.rest() if f["t"] != "heartbeat_reply"], [])  # not even its turn_end
        self.assertEqual(self.proc.wait(10), 0)

    def drain(self, secret=None):
        """What a daemon of another frame version sends instead of `attach`."""
        sock, inbox = self.connect()
        sock.sendall(frames.encode("drain", {"secret": self.record()["secret"] if secret is None else secret}))
        return frames.read(inbox)

    def test_a_drained_worker_finishes_its_turn_unseen_then_exits(self):
        self.start("script:stream 40 50;approve-cli rm -rf /tmp/x;say after")
        self.until("text")
        self.go_away()
        self.assertEqual(self.drain("0" * 64)["t"], "attach_refused")  # not without its secret
        self.assertEqual(self.drain(), {"t": "drained", "version": frames.FRAMES_VERSION, "turns": 1})
        _, _, refused = self.attach()  # no daemon takes it over any more
        self.assertEqual(refused["t"], "attach_refused")
        # Once its turn is done; its question, which nobody can answer, did
        # not wait its 120 s.
        self.assertEqual(self.proc.wait(20), 0)
        ends = [e for e in self.events() if e["op"] == "run_end"]
        self.assertEqual([e["interrupted"] for e in ends], [False])  # not cut: it ran to its end
        self.assertEqual(os.listdir(self.dir), [self.path(".log").name])

    def test_a_worker_with_a_daemon_is_not_drained(self):
        self.read()
        self.assertEqual(self.drain()["t"], "attach_refused")
        self.send("heartbeat", beat=2)
        self.assertEqual(self.until("heartbeat_reply")[0]["beat"], 2)

    def test_an_orphan_nobody_attaches_to_exits_after_its_timeout(self):
        self.start("script:stream 1000 20")
        self.until("text")
        self.inbox.close()
        self.sock.close()
        gone = time.monotonic()
        self.assertEqual(self.proc.wait(10), 0)
        self.assertGreater(time.monotonic() - gone, 0.5)  # it waited for a daemon ...
        self.assertLess(time.monotonic() - gone, 3)  # ... then interrupted its turn and went
        self.assertFalse(self.path(".json").exists())
        self.assertFalse(self.path(".sock").exists())
        self.assertEqual(stat.S_IMODE(os.stat(self.path(".log")).st_mode), 0o600)

    def test_a_question_asked_before_its_daemon_died_is_answered_by_the_next_one(self):
        self.start("script:say before;clarify Which one?|a,b;print printed-after-its-daemon-died")
        ask, _ = self.until("ask")
        self.send("committed", turn=1, seq=ask["seq"])
        self.go_away()
        sock, inbox, attached = self.attach()
        (waiting,) = attached["asks"]
        fields = ("turn", "ask", "seq", "kind", "request", "timeout_s")
        self.assertEqual({k: waiting[k] for k in fields}, {k: ask[k] for k in fields})
        self.assertGreater(waiting["waited_s"], 0)
        self.assertEqual(attached["turns"][0]["seq"], ask["seq"])  # its thread still waits
        self.take_over(sock, inbox)
        self.send("resume", turn=1, after=ask["seq"])
        self.send("answer", turn=1, ask=ask["ask"], text="b")
        end, after = self.until("turn_end")
        self.assertEqual([f["seq"] for f in after], list(range(ask["seq"] + 1, ask["seq"] + 1 + len(after))))
        self.assertIn("clarified=b ", "".join(f["text"] for f in after if f["t"] == "text"))
        self.assertEqual(end["status"], "complete")
        self.send("shutdown")
        self.assertEqual(self.proc.wait(10), 0)
        self.assertIn("printed-after-its-daemon-died", self.path(".log").read_text())  # not on its old stdout
        self.assertEqual(self.proc.stdout.read(), b"")


if __name__ == "__main__":
    unittest.main()
