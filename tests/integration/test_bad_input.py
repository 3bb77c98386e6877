"""Malformed requests, one table: each gets {"ok": false, ...} saying what
is wrong (or the seed's lenient answer where Python's coercion accepts it),
and the very next client is served."""

from __future__ import annotations

import json
import socket
import unittest

from harness import Bridge

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
        # The request cannot be answered (the connection is gone); the daemon
        # must simply go on serving.
        with self.bridge.connect() as sock:
            sock.sendall(b'{"action": "ping"}')
            sock.shutdown(socket.SHUT_WR)
            sock.recv(65536)
        self.assert_still_serving()


if __name__ == "__main__":
    unittest.main()
