"""Malformed requests, one table: each gets {"ok": false, ...} saying what
is wrong (or the seed's lenient answer where Python's coercion accepts it),
and the very next client is served."""

from __future__ import annotations

import contextlib
import json
import socket
import time
import unittest

from differential_support import OUR_PING_KEYS, STUDIO_PING_KEYS
from harness import Bridge, sanitized_build

# (name, raw request bytes, expected error_type or None for ok, text the error must contain)
TABLE = [
    ("invalid JSON", b'{"action": "ping"\n', "JSONDecodeError", "not valid JSON"),
    ("trailing garbage", b'{"action": "ping"} x\n', "JSONDecodeError", "not valid JSON"),
    ("a list", b'[{"action": "ping"}]\n', "ValueError", "request must be a JSON object, got list"),
    ("a string", b'"ping"\n', "ValueError", "request must be a JSON object, got str"),
    ("a number", b"42\n", "ValueError", "request must be a JSON object, got int"),
    ("null", b"null\n", "ValueError", "request must be a JSON object, got NoneType"),
    ("empty line", b"\n", "RuntimeError", "empty request"),
    ("blank line", b"   \t \n", "RuntimeError", "empty request"),
    ("invalid UTF-8", b'{"action": "ping", "x": "\xc3\x28"}\n', "UnicodeDecodeError", "invalid continuation byte"),
    ("truncated UTF-8", b'{"action": "ping", "x": "\xe2\x82"}\n', "UnicodeDecodeError", "can't decode byte 0xe2"),
    ("NaN literal", b'{"action": "get_output", "run_id": "r", "cursor": NaN}\n', "JSONDecodeError", ""),
    ("missing action", b'{"session_id": "s"}\n', "ValueError", "action is required"),
    ("action of the wrong type", b'{"action": ["ping"]}\n', "ValueError", "unknown action: ['ping']"),
    ("action false", b'{"action": false}\n', "ValueError", "action is required"),
    ("cursor a dict", b'{"action": "get_output", "run_id": "r", "cursor": {"a": 1}}\n', "TypeError",
     "int() argument must be a string"),
    ("cursor text", b'{"action": "get_output", "run_id": "r", "cursor": "ten"}\n', "ValueError",
     "invalid literal for int() with base 10: 'ten'"),
    ("event_cursor a list", b'{"action": "get_output", "run_id": "r", "event_cursor": [1]}\n', "TypeError", "not 'list'"),
    ("wait_ms text", b'{"action": "get_output", "run_id": "r", "wait_ms": "soon"}\n', "ValueError", "'soon'"),
    ("number beyond a double", b'{"action": "get_output", "run_id": "r", "cursor": 1e400}\n', "JSONDecodeError",
     "number overflow"),
    ("huge float cursor", b'{"action": "get_output", "run_id": "r", "cursor": 1e300}\n', "KeyError", "unknown run: r"),
    ("huge integer", b'{"action": "get_output", "run_id": "r", "cursor": 123456789012345678901234567890}\n',
     "KeyError", "unknown run: r"),
    ("negative cursors", b'{"action": "get_output", "run_id": "r", "cursor": -5, "event_cursor": -1}\n',
     "KeyError", "unknown run: r"),
    ("run_id a dict", b'{"action": "get_result", "run_id": {"a": 1}}\n', "KeyError", "unknown run: {'a': 1}"),
    ("session_id a number", b'{"action": "get_history", "session_id": 7}\n', "KeyError", "unknown session: 7"),
    ("chat timeout a list", b'{"action": "chat", "session_id": "bad1", "message": "x", "wait": true, "timeout": [1]}\n',
     "TypeError", "float() argument"),
    ("chat history not a list", b'{"action": "chat", "session_id": "bad2", "message": "x", "conversation_history": "hi"}\n',
     "ValueError", "conversation_history must be a list"),
    ("chat message a number", b'{"action": "chat", "session_id": "bad3", "message": 5}\n',
     "ValueError", "message must be a string or a list of content blocks"),
    ("chat harness unknown", b'{"action": "chat", "session_id": "bad4", "message": "x", "harness": "tmux"}\n',
     "ValueError", "harness must be 'embedded' or 'native', not 'tmux'"),
    ("chat harness a list", b'{"action": "chat", "session_id": "bad5", "message": "x", "harness": ["native"]}\n',
     "ValueError", "harness must be 'embedded' or 'native'"),
    ("chat workspace not a directory", b'{"action": "chat", "session_id": "bad6", "message": "x", '
     b'"workspace": "/etc/hostname"}\n', "ValueError", "workspace is not a directory: /etc/hostname"),
    ("chat workspace missing", b'{"action": "chat", "session_id": "bad7", "message": "x", "harness": "native", '
     b'"workspace": "/nonexistent/hb-workspace"}\n', "ValueError", "workspace is not a directory: /nonexistent/hb-workspace"),
    ("steer without text", b'{"action": "steer", "session_id": "s", "text": ""}\n', "ValueError", "text is required"),
    ("approval id missing", b'{"action": "approval_respond", "choice": "once"}\n', "ValueError", "approval_id is required"),
    ("messages not a list", b'{"action": "compression_respond", "request_id": "x", "messages": "m"}\n',
     "ValueError", "messages must be a list"),
    ("subscribe to nothing", b'{"action": "subscribe"}\n', "ValueError", "subscribe needs a run_id or a session_id"),
    ("unknown action", b'{"action": "rm -rf"}\n', "ValueError", "unknown action: rm -rf"),
]

LENIENT = [
    # Python's coercions accept these; so does the seed, so we answer the same way.
    ("choice not a string", b'{"action": "approval_respond", "approval_id": "nope", "choice": 5}\n',
     {"ok": True, "approval_id": "nope", "resolved": False, "choice": "deny"}),
    ("lone surrogate", b'{"action": "destroy", "session_id": "a\\ud800b"}\n',
     {"ok": True, "session_id": "a\ufffdb", "destroyed": False}),
]


# A request line without its newline, then EOF (sendall(...);
# shutdown(SHUT_WR); recv()): answered like the seed answers it, the last
# bytes being the request. (name, bytes sent before EOF, the answers; "time"
# is left out of pongs)
HALF_CLOSED = [
    ("ping", b'{"action": "ping"}',
     [{"ok": True, "pong": True, "agent_root": None}]),
    ("nothing at all", b"",
     [{"ok": False, "error": "empty request", "error_type": "RuntimeError"}]),
    ("only blanks", b" \t ",
     [{"ok": False, "error": "empty request", "error_type": "RuntimeError"}]),
    ("half a request", b'{"action": "pi',
     [{"ok": False, "error": "request is not valid JSON (byte 15): parse error at line 1, column 15: syntax "
                             "error while parsing value - invalid string: missing closing quote; last read: '\"pi'",
       "error_type": "JSONDecodeError"}]),
    ("unknown action", b'{"action": "rm -rf"}',
     [{"ok": False, "error": "unknown action: rm -rf", "error_type": "ValueError"}]),
    ("keepalive requests, the last one without newline",
     b'{"action": "ping", "keepalive": true, "id": 1}\n{"action": "destroy", "session_id": "nobody", "id": 2}',
     [{"ok": True, "id": 1, "pong": True, "agent_root": None},
      {"ok": True, "id": 2, "session_id": "nobody", "destroyed": False}]),
    ("keepalive requests, then EOF after the newline",
     b'{"action": "ping", "keepalive": true, "id": "a"}\n{"action": "destroy", "session_id": "x", "id": "b"}\n',
     [{"ok": True, "id": "a", "pong": True, "agent_root": None},
      {"ok": True, "id": "b", "session_id": "x", "destroyed": False}]),
]


def answers(raw: bytes, agent_root: str) -> list[dict]:
    out = []
    for line in raw.decode().splitlines():
        answer = json.loads(line)
        if answer.get("pong"):
            answer.pop("time")
            for key in STUDIO_PING_KEYS + OUR_PING_KEYS:  # checked in test_studio_protocol, test_worker_host
                answer.pop(key)
            answer["agent_root"] = None if answer["agent_root"] == agent_root else answer["agent_root"]
        out.append(answer)
    return out


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.bridge = Bridge(args=["--max-line-bytes", "100000", "--read-timeout-ms", "500"]).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.bridge.stop()

    def assert_still_serving(self) -> None:
        self.assertTrue(self.bridge.request({"action": "ping"})["pong"])

    def test_table(self):
        for name, raw, error_type, text in TABLE:
            with self.subTest(name):
                reply = self.bridge.raw_json(raw)
                self.assertEqual(reply["ok"], False, reply)
                self.assertEqual(reply["error_type"], error_type, reply)
                self.assertIn(text, reply["error"])
                self.assert_still_serving()

    def test_lenient_rows(self):
        for name, raw, expected in LENIENT:
            with self.subTest(name):
                self.assertEqual(self.bridge.raw_json(raw), expected)
                self.assert_still_serving()

    def test_a_line_over_the_limit(self):
        reply = self.bridge.raw_json(b'{"action": "ping", "pad": "' + b"y" * 200_000 + b'"}\n')
        self.assertEqual(reply["error_type"], "ValueError")
        self.assertIn("exceeds 100000 bytes", reply["error"])
        self.assert_still_serving()

    def test_half_a_line_then_silence(self):
        with self.bridge.connect() as sock:
            sock.sendall(b'{"action": "pi')
            reply = json.loads(sock.recv(65536))
        self.assertIn("no complete request line", reply["error"])
        self.assert_still_serving()

    def test_a_line_without_newline_then_eof(self):
        agent_root = self.bridge.request({"action": "ping"})["agent_root"]
        for name, raw, expected in HALF_CLOSED:
            with self.subTest(name):
                self.assertEqual(answers(self.bridge.half_close(raw), agent_root), expected)
                self.assert_still_serving()

    def test_every_row_ended_by_eof_instead_of_newline(self):
        # Exactly the answer the same line gets with its newline.
        for name, raw, *_ in TABLE + LENIENT:
            with self.subTest(name):
                with_newline = self.bridge.raw_json(raw)
                without = self.bridge.half_close(raw[:-1])
                self.assertEqual(json.loads(without), with_newline)
                self.assert_still_serving()

    def test_a_slow_answer_still_reaches_a_client_that_sent_eof(self):
        # get_output is answered by a log reader, after the daemon has seen
        # the EOF: the answer must not be lost on the way.
        run = self.bridge.chat("eof-reader", "script:stream 20000 0", wait=True, timeout=60)
        request = json.dumps({"action": "get_output", "run_id": run["run_id"], "event_cursor": 10**9})
        expected = self.bridge.request(json.loads(request))
        for ending in (b"", b"\n"):
            with self.subTest(newline=bool(ending)):
                self.assertEqual(json.loads(self.bridge.half_close(request.encode() + ending)), expected)
        pipelined = b"".join(json.dumps({"action": "get_output", "run_id": run["run_id"],
                                         "event_cursor": 10**9, "keepalive": True, "id": i}).encode() + b"\n"
                             for i in range(5))
        got = [json.loads(line) for line in self.bridge.half_close(pipelined).splitlines()]
        self.assertEqual([g.pop("id") for g in got], list(range(5)))
        self.assertEqual(got, [expected] * 5)
        self.assert_still_serving()

    def test_bytes_after_a_one_shot_request_end_in_a_clean_close(self):
        # The daemon answers the first line and ignores the rest. Closing a
        # socket the client's bytes still wait in would reset the connection:
        # the client would read its answer, then an error instead of the end
        # (on TCP the answer itself could be lost). A client still writing
        # when the daemon is done (100 KB arrive in pieces) is told so by its
        # write (EPIPE); what it reads is still its answer and a clean end.
        for extra in (4 << 10, 100 << 10):
            with self.subTest(extra=extra), self.bridge.connect() as sock:
                with contextlib.suppress(BrokenPipeError):
                    sock.sendall(b'{"action": "ping"}\n' + b"x" * extra)
                chunks = []
                while chunk := sock.recv(65536):
                    chunks.append(chunk)
                self.assertTrue(json.loads(b"".join(chunks))["pong"])
        self.assert_still_serving()

    def test_connections_that_end_with_eof_leave_no_descriptor_behind(self):
        def settled(baseline: int) -> int:
            deadline = time.monotonic() + 10
            while (count := self.bridge.open_fds()) > baseline and time.monotonic() < deadline:
                time.sleep(0.05)
            return count

        self.assert_still_serving()
        baseline = settled(self.bridge.open_fds())
        for i in range(2000):
            reply = self.bridge.half_close(b'{"action": "ping"}' if i % 2 else b'{"action": "ping"}\n')
            self.assertTrue(json.loads(reply)["pong"])
        for _ in range(200):  # and some that leave without reading
            sock = self.bridge.connect()
            sock.sendall(b'{"action": "ping"}')
            sock.close()
        # (<=: a descriptor of the daemon's own, e.g. a log file, may have
        # been open only while the baseline was counted)
        self.assertLessEqual(settled(baseline), baseline)
        self.assert_still_serving()


class AnswersForClientsThatLeft(unittest.TestCase):
    def test_an_answer_never_reaches_the_next_client_on_the_same_descriptor(self):
        # A client that resets its connection while its answer is being read
        # from the log frees its descriptor at once, and the kernel gives the
        # number to the next client. Its answer, still on the way, must not
        # be taken for the answer of whoever holds that number now.
        with Bridge(transport="tcp") as b:
            runs = {name: b.chat(name, f"script:stream {n} 0", wait=True, timeout=60)["run_id"]
                    for name, n in (("left", 30000), ("other", 20000), ("small", 3))}

            def ask(sock, run):
                sock.sendall(json.dumps({"action": "get_output", "run_id": run}).encode() + b"\n")

            for _ in range(20):
                leaving = b.connect()
                ask(leaving, runs["left"])  # the first log reader works on it
                leaving.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                leaving.close()  # RST
                with b.connect() as other, b.connect() as small:
                    ask(other, runs["other"])  # the second reader
                    ask(small, runs["small"])  # queued behind the one that left
                    for sock, name in ((other, "other"), (small, "small")):
                        chunks = []
                        while chunk := sock.recv(1 << 20):
                            chunks.append(chunk)
                        self.assertEqual(json.loads(b"".join(chunks))["run_id"], runs[name])
            self.assertTrue(b.request({"action": "ping"})["pong"])


class ClientsThatDoNotRead(unittest.TestCase):
    def test_a_client_that_never_reads_its_answers_is_cut_off(self):
        limit = 4 << 20
        with Bridge(args=["--client-buffer-bytes", str(limit)]) as b:
            run = b.chat("big", "script:stream 20000 0", wait=True, timeout=60)["run_id"]
            one = len(json.dumps(b.request({"action": "get_output", "run_id": run, "event_cursor": 10**9})))
            count = 400  # about 200 MB of answers, were they all kept
            peak_before = b.status_kb("VmHWM") / 1024
            request = json.dumps({"action": "get_output", "run_id": run, "event_cursor": 10**9,
                                  "keepalive": True}).encode() + b"\n"
            with b.connect() as greedy:
                greedy.sendall(request * count)
                self.assertTrue(b.request({"action": "ping"})["pong"])  # others are served meanwhile
                self.assertTrue(b.log_has("event=connection.cut_off"), b.stderr()[-2000:])
                self.assertIn("(--client-buffer-bytes)", b.stderr())
                received = 0
                try:
                    while chunk := greedy.recv(1 << 20):
                        received += len(chunk)
                except ConnectionResetError:
                    pass
            self.assertLess(received, count * one // 4)
            self.assertTrue(b.request({"action": "ping"})["pong"])
            if not sanitized_build():
                # What waits for the client is bounded by the limit (what the
                # daemon has not handed to the socket yet) plus what the
                # socket's own buffer was given before the cut: a few times
                # 4 MiB, against 200 MB were every answer kept.
                grown = b.status_kb("VmHWM") / 1024 - peak_before
                self.assertLess(grown, 48, f"peak memory grew by {grown:.0f} MB")


if __name__ == "__main__":
    unittest.main()
