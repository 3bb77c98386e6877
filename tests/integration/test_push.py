"""Push instead of poll: long-poll, subscriptions (run and session),
keepalive connections, slow subscribers. Everything here is opt-in; the
seed's one-request connections are covered by the other tests."""

from __future__ import annotations

import json
import random
import selectors
import socket
import time
import unittest

from harness import Bridge, wait_for


_pending: dict[int, bytes] = {}  # bytes read past the last line handed out, per socket


def read_stream(sock: socket.socket, limit: int | None = None) -> list[dict]:
    """NDJSON lines until the daemon closes (or `limit` lines)."""
    buf, lines = _pending.pop(sock.fileno(), b""), []
    while limit is None or len(lines) < limit:
        while b"\n" in buf and (limit is None or len(lines) < limit):
            line, buf = buf.split(b"\n", 1)
            lines.append(json.loads(line))
        if limit is not None and len(lines) >= limit:
            break
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    _pending[sock.fileno()] = buf
    return lines


def subscribe(bridge: Bridge, **fields) -> socket.socket:
    for attempt in range(100):
        try:
            sock = bridge.connect()
            break
        except BlockingIOError:  # the listen backlog is full for a moment
            time.sleep(0.01)
    _pending.pop(sock.fileno(), None)
    sock.sendall((json.dumps({"action": "subscribe", **fields}) + "\n").encode())
    return sock


class LongPoll(unittest.TestCase):
    def test_returns_on_news_and_at_wait_ms_when_nothing_happens(self):
        with Bridge() as b:
            run = b.chat("lp", "script:stream 3 600;sleep 4000;say end")["run_id"]
            first = b.request({"action": "get_output", "run_id": run, "wait_ms": 100})
            cursors = {"cursor": first["cursor"], "event_cursor": first["event_cursor"]}
            started = time.monotonic()
            news = b.request({"action": "get_output", "run_id": run, "wait_ms": 10_000, **cursors})
            waited = time.monotonic() - started
            self.assertRegex(news["delta"], r"^d\d $")
            self.assertLess(waited, 5.0)  # the next delta, not the 10 s deadline
            # during the agent's 4 s sleep nothing is committed: the answer comes at wait_ms
            b.wait_event(run, "reasoning.available")
            quiet = b.request({"action": "get_output", "run_id": run})
            started = time.monotonic()
            empty = b.request({"action": "get_output", "run_id": run, "wait_ms": 300, "cursor": quiet["cursor"],
                               "event_cursor": quiet["event_cursor"]})
            waited = time.monotonic() - started
            self.assertEqual((empty["delta"], empty["events"], empty["done"]), ("", [], False))
            self.assertGreaterEqual(waited, 0.29)
            self.assertLess(waited, 3.0)  # at wait_ms, with room for a slow machine; not at the next news
            b.wait_done(run)

    def test_done_run_answers_at_once_and_include_output_false_drops_output(self):
        with Bridge() as b:
            run = b.chat("d", "hello", wait=True)["run_id"]
            out = b.request({"action": "get_output", "run_id": run, "wait_ms": 20_000, "cursor": 99,
                             "event_cursor": 99, "include_output": False})
            self.assertTrue(out["done"])
            self.assertNotIn("output", out)
            full = b.request({"action": "get_output", "run_id": run, "include_output": True})
            self.assertEqual(full["output"], "echo: hello")

    def test_wait_ms_is_capped_and_errors_are_immediate(self):
        with Bridge() as b:
            out = b.request({"action": "get_output", "run_id": "nope", "wait_ms": 999_999})
            self.assertEqual(out["error_type"], "KeyError")


class Subscriptions(unittest.TestCase):
    def test_run_subscription_streams_every_commit_then_closes(self):
        with Bridge() as b:
            run = b.chat("s", "script:say before ;tool terminal ls;stream 20 10;say after")["run_id"]
            lines = read_stream(subscribe(b, run_id=run, id="sub-1"))
            full = b.request({"action": "get_result", "run_id": run})
            self.assertTrue(all(line["id"] == "sub-1" for line in lines))
            self.assertEqual("".join(line["delta"] for line in lines), full["output"])
            self.assertEqual([e for line in lines for e in line["events"]], full["events"])
            self.assertTrue(lines[-1]["done"])
            self.assertEqual(lines[-1]["status"], "complete")
            self.assertFalse(any(line["done"] for line in lines[:-1]))
            self.assertTrue(all("output" not in line for line in lines))
            # cursors only move forward, and each line carries something new
            for before, after in zip(lines, lines[1:]):
                self.assertLessEqual(before["cursor"], after["cursor"])
                self.assertLess(before["event_cursor"], after["event_cursor"] + (1 if after["done"] else 0))

    def test_health_shows_the_output_kept_for_live_runs(self):
        with Bridge() as b:
            run = b.chat("w", "script:stream 300 10")["run_id"]
            first = read_stream(subscribe(b, run_id=run), limit=2)  # some output is committed
            self.assertTrue(first[-1]["delta"])
            windows = b.request({"action": "health"})["output_windows"]
            self.assertEqual(windows["runs"], 1)
            self.assertGreaterEqual(windows["bytes"], len("".join(line["delta"] for line in first)))
            self.assertEqual(windows["ended_runs"], 0)
            b.wait_done(run)
            # the commit's notice reaches the hub a moment after a read can see the end;
            # the ended run stays, done, for the poll that sees it end
            wait_for(lambda: b.request({"action": "health"})["output_windows"]["ended_runs"] == 1,
                     what="the ended run's window kept")
            windows = b.request({"action": "health"})["output_windows"]
            self.assertEqual(windows["runs"], 0)
            self.assertGreater(windows["bytes"], 0)

    def test_reconnecting_with_the_last_cursors_loses_and_repeats_nothing(self):
        rng = random.Random(7)
        with Bridge() as b:
            # paced like a model, so that lines are small and reconnects many
            run = b.chat("r", "script:say start ;tool terminal ls;stream 120 15;tool terminal pwd;say end")["run_id"]
            text, events = "", []
            cursor = event_cursor = 0
            reconnects = 0
            while True:
                sock = subscribe(b, run_id=run, cursor=cursor, event_cursor=event_cursor)
                lines = read_stream(sock, limit=rng.randint(1, 6))
                sock.close()  # leave at a random point
                reconnects += 1
                for line in lines:
                    text += line["delta"]
                    events += line["events"]
                    cursor, event_cursor = line["cursor"], line["event_cursor"]
                if lines and lines[-1]["done"]:
                    break
            full = b.request({"action": "get_result", "run_id": run})
            self.assertGreater(reconnects, 5)
            self.assertEqual(text, full["output"])
            self.assertEqual(events, full["events"])

    def test_order_of_text_and_tools_is_the_agent_s(self):
        with Bridge() as b:
            run = b.chat("o", "script:say alpha ;tool terminal one;say beta ;tool terminal two;say gamma")["run_id"]
            lines = read_stream(subscribe(b, run_id=run))
            names = [(e["event"], e.get("delta") or e.get("tool_call_id"))
                     for line in lines for e in line["events"]
                     if e["event"] in ("stream.delta", "tool.started")]
            self.assertEqual(names, [("stream.delta", "alpha"), ("tool.started", "call_1"),
                                     ("stream.delta", "beta"), ("tool.started", "call_2"),
                                     ("stream.delta", "gamma")])

    def test_session_subscription_follows_each_new_run(self):
        with Bridge() as b:
            sock = subscribe(b, session_id="follow")
            time.sleep(0.1)
            first = b.chat("follow", "one", wait=True)["run_id"]
            second = b.chat("follow", "two", wait=True)["run_id"]
            sock.settimeout(5)
            lines = []
            while sum(1 for line in lines if line.get("done")) < 2:
                lines += read_stream(sock, limit=1)
            started = [line["run_id"] for line in lines if line.get("event") == "run.started"]
            self.assertEqual(started, [first, second])
            for run_id in (first, second):
                text = "".join(line["delta"] for line in lines if line.get("run_id") == run_id and "delta" in line)
                self.assertEqual(text, b.request({"action": "get_result", "run_id": run_id})["output"])
            sock.close()

    def test_unknown_run_gets_an_error_line(self):
        with Bridge() as b:
            lines = read_stream(subscribe(b, run_id="missing"))
            self.assertEqual(lines, [{"ok": False, "error": "'unknown run: missing'", "error_type": "KeyError"}])
            self.assertEqual(b.request({"action": "subscribe"})["error_type"], "ValueError")

    def test_a_thousand_subscribers_all_receive_everything(self):
        with Bridge() as b:
            run = b.chat("many", "script:say go;tool terminal ls;stream 60 15")["run_id"]
            sel = selectors.DefaultSelector()
            received: dict[socket.socket, bytes] = {}
            for _ in range(1000):
                sock = subscribe(b, run_id=run)
                sock.setblocking(False)
                sel.register(sock, selectors.EVENT_READ)
                received[sock] = b""
            open_socks = len(received)
            deadline = time.monotonic() + 120
            while open_socks and time.monotonic() < deadline:
                for key, _ in sel.select(timeout=1):
                    chunk = key.fileobj.recv(1 << 20)
                    if chunk:
                        received[key.fileobj] += chunk
                    else:
                        sel.unregister(key.fileobj)
                        key.fileobj.close()
                        open_socks -= 1
            self.assertEqual(open_socks, 0, "some subscribers never got their terminal line")
            full = b.request({"action": "get_result", "run_id": run})
            for data in received.values():
                lines = [json.loads(line) for line in data.splitlines()]
                self.assertTrue(lines[-1]["done"])
                self.assertEqual("".join(line["delta"] for line in lines), full["output"])
                self.assertEqual([e for line in lines for e in line["events"]], full["events"])

    def test_a_frozen_subscriber_is_cut_off_not_waited_for(self):
        # Paced so the frozen reader's socket fills up while the run still
        # streams: its news is then held back, and once more than the byte
        # limit waits (or after two seconds of taking none of it) it is cut
        # off. Two seconds is longer than a busy machine keeps the healthy
        # reader from reading (300 ms was not, under ASan in CI; one of 15
        # runs failed at one second while the machine compiled).
        with Bridge(args=["--subscriber-buffer-bytes", "65536", "--subscriber-stall-ms", "2000"]) as b:
            run = b.chat("frozen", "script:stream 4000 1")["run_id"]
            frozen = subscribe(b, run_id=run)  # reads nothing until the run is over
            frozen.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            healthy = read_stream(subscribe(b, run_id=run))
            full = b.request({"action": "get_result", "run_id": run})
            self.assertTrue(healthy[-1].get("done"), healthy[-1])
            self.assertEqual("".join(line["delta"] for line in healthy), full["output"])
            lines = read_stream(frozen)
            last = lines[-1]
            self.assertEqual(last["error_type"], "SlowReader")
            self.assertIn("subscribe again", last["error"])
            text = "".join(line["delta"] for line in lines[:-1])
            self.assertEqual(last["cursor"], len([e for line in lines[:-1] for e in line["events"]
                                                  if e["event"] == "stream.delta"]))
            rest = read_stream(subscribe(b, run_id=run, cursor=last["cursor"], event_cursor=last["event_cursor"]))
            self.assertEqual(text + "".join(line["delta"] for line in rest), full["output"])


class Keepalive(unittest.TestCase):
    def test_many_requests_on_one_connection_in_order_with_ids(self):
        with Bridge() as b:
            sock = b.connect()
            _pending.pop(sock.fileno(), None)
            sock.sendall(b'{"action": "chat", "session_id": "k", "message": "script:sleep 300", "wait": true, '
                         b'"keepalive": true, "id": 1}\n{"action": "ping", "keepalive": true, "id": 2}\n'
                         b'{"action": "status", "session_id": "zz", "keepalive": true, "id": [3]}\n')
            lines = read_stream(sock, limit=3)
            self.assertEqual([line.get("id") for line in lines], [1, 2, [3]])
            self.assertEqual(lines[0]["status"], "complete")  # the slow answer first, as asked
            self.assertTrue(lines[1]["pong"])
            self.assertEqual(lines[2]["exists"], False)
            sock.sendall(b'{"action": "ping", "keepalive": true}\n')  # still open
            self.assertTrue(read_stream(sock, limit=1)[0]["pong"])
            sock.close()

    def test_a_request_without_keepalive_is_the_last(self):
        with Bridge() as b:
            for last, expected in ((b'{"action": "ping", "id": 2}\n', [1, 2]),
                                   (b'{"action": "ping", "keepalive": false, "id": 2}\n', [1, 2]),
                                   (b'{"oops\n', [1, None])):  # a broken line cannot ask to stay
                sock = b.connect()
                _pending.pop(sock.fileno(), None)
                sock.settimeout(10)
                sock.sendall(b'{"action": "chat", "session_id": "k2", "message": "script:sleep 200", "wait": true, '
                             b'"keepalive": true, "id": 1}\n' + last +
                             b'{"action": "ping", "keepalive": true, "id": 3}\n')
                lines = read_stream(sock)  # until the daemon closes: no answer for id 3
                self.assertEqual([line.get("id") for line in lines], expected, last)
                self.assertEqual(lines[0]["status"], "complete")  # earlier answers still come first
                sock.close()

    def test_without_keepalive_one_request_per_connection(self):
        with Bridge() as b:
            sock = b.connect()
            _pending.pop(sock.fileno(), None)
            sock.sendall(b'{"action": "ping", "id": 1}\n{"action": "ping", "id": 2}\n')
            lines = read_stream(sock)
            self.assertEqual([line["id"] for line in lines], [1])

    def test_idle_keepalive_connections_are_closed(self):
        with Bridge(args=["--keepalive-idle-ms", "300"]) as b:
            sock = b.connect()
            _pending.pop(sock.fileno(), None)
            sock.sendall(b'{"action": "ping", "keepalive": true}\n')
            self.assertTrue(read_stream(sock, limit=1)[0]["pong"])
            sock.settimeout(5)
            self.assertEqual(sock.recv(100), b"")  # closed by the daemon
            sock.close()


if __name__ == "__main__":
    unittest.main()
