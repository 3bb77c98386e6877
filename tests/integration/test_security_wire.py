"""What a client can cost the daemon through the wire alone (issue 21):
a deeply nested request, answers nobody reads, a huge line before the
token, timeouts that are not numbers a clock can hold."""

from __future__ import annotations

import json
import socket
import threading
import time
import unittest
from pathlib import Path

from harness import Bridge, wait_for

TOKEN = "s3cret-token-0123456789abcdef"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


class DeepRequests(unittest.TestCase):
    def test_a_request_nested_100000_levels_is_refused_and_the_daemon_lives(self):
        with Bridge() as b:
            # 200 KB, far under --max-line-bytes: it used to overflow the
            # broker thread's stack (SIGSEGV, every session gone).
            line = ('{"action": "ping", "keepalive": true, "id": ' + nested(100_000) + "}\n").encode()
            with b.connect() as deep, b.connect() as other:
                deep.sendall(line)
                answer = json.loads(deep.makefile("rb").readline())
                self.assertFalse(answer["ok"])
                self.assertEqual(answer["error_type"], "ValueError")
                self.assertIn("deeper than 64 levels", answer["error"])
                other.sendall(b'{"action": "ping"}\n')
                self.assertTrue(json.loads(other.makefile("rb").readline())["pong"])
            self.assertIsNone(b.proc.poll())
            # 62 levels inside the request (64 counting the object and the id's own array) are fine.
            self.assertTrue(b.request({"action": "ping", "id": json.loads(nested(62))})["ok"])


class UnreadAnswers(unittest.TestCase):
    """Clients that ask for an 8 MiB answer and never read it."""

    def big_run(self, b: Bridge) -> str:
        run = b.chat("s-big", "script: flood 8")["run_id"]
        b.wait_done(run, timeout=60)
        return run

    def ask_and_never_read(self, b: Bridge, run: str, count: int) -> list[socket.socket]:
        """One at a time: each client's answer (or refusal) has begun to
        arrive before the next connects, so an answered connection that left
        the count at once would let every one of them in."""
        socks = []
        for _ in range(count):
            s = b.connect()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            try:
                s.sendall(json.dumps({"action": "get_output", "run_id": run}).encode() + b"\n")
            except BrokenPipeError:
                pass  # refused at the door before it asked (the refusal is waiting in its buffer)
            s.recv(1, socket.MSG_PEEK)
            socks.append(s)
        return socks

    def test_connections_stay_counted_until_their_answers_drain_and_are_cut_after_the_write_deadline(self):
        with Bridge(args=["--max-connections", "12", "--write-timeout-ms", "3000"]) as b:
            run = self.big_run(b)
            b.request({"action": "ping"})
            base_fds = b.open_fds()
            socks = self.ask_and_never_read(b, run, 40)
            try:
                refused = sum(b"too many connections" in s.recv(200, socket.MSG_PEEK) for s in socks)
                # On a slow machine the first may already have been cut (a free place for one more).
                cut_meanwhile = b.stderr().count("event=connection.write_timeout")
                self.assertGreaterEqual(refused, 40 - 12 - cut_meanwhile)
                self.assertLessEqual(b.open_fds(), base_fds + 12 + 1)
                # Nobody reads: cut after --write-timeout-ms, and everything they held is let go.
                self.assertTrue(b.log_has("event=connection.write_timeout", timeout=20), b.stderr()[-2000:])
                # A health asked while the cut ones still count may itself be refused at the door.
                health = wait_for(lambda: (h := b.request({"action": "health"})).get("connections", 99) <= 1 and h,
                                  timeout=20, what="the cut connections forgotten")
                self.assertEqual(health["queued_answer_bytes"], 0)
                wait_for(lambda: b.open_fds() <= base_fds + 1, timeout=10, what="their fds closed")
            finally:
                for s in socks:
                    s.close()

    def test_answers_waiting_across_connections_are_capped(self):
        # A get_output of the 8 MiB run is about 42 MB (delta, output, events).
        with Bridge(args=["--max-queued-answer-bytes", str(60 << 20), "--write-timeout-ms", "60000"]) as b:
            run = self.big_run(b)
            socks = self.ask_and_never_read(b, run, 2)
            try:
                first, second = socks
                head = second.recv(300, socket.MSG_PEEK)
                self.assertIn(b'"error_type": "RuntimeError"', head)
                self.assertIn(b"--max-queued-answer-bytes", head)
                self.assertIn("event=connection.answer_refused", b.stderr())
                health = b.request({"action": "health"})  # small answers still go out
                self.assertGreater(health["queued_answer_bytes"], 30 << 20)
                self.assertEqual(health["connections"], 2)  # the refused one has drained and left
                # The reader takes its answer whole; then there is room again.
                got = json.loads(first.makefile("rb").readline())
                self.assertEqual(len(got["delta"]), 8 << 20)
                wait_for(lambda: b.request({"action": "health"})["queued_answer_bytes"] == 0, timeout=20,
                         what="the answer drained")
                self.assertEqual(len(b.request({"action": "get_output", "run_id": run})["delta"]), 8 << 20)
            finally:
                for s in socks:
                    s.close()

    def test_a_reader_that_keeps_taking_is_not_cut(self):
        with Bridge(args=["--write-timeout-ms", "1000"]) as b:
            run = self.big_run(b)
            with b.connect() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.sendall(json.dumps({"action": "get_output", "run_id": run}).encode() + b"\n")
                data = bytearray()
                started = time.monotonic()
                while not data.endswith(b"\n"):
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        break
                    data += chunk
                    if time.monotonic() - started < 2.5:  # slowly, for longer than the deadline
                        time.sleep(0.1)
                self.assertEqual(len(json.loads(data)["delta"]), 8 << 20)
            self.assertNotIn("connection.write_timeout", b.stderr())


class BeforeTheToken(unittest.TestCase):
    def bridge(self) -> Bridge:
        b = Bridge()
        token = b.dir / "token"
        token.write_text(TOKEN + "\n")
        token.chmod(0o600)
        b.args = ["--token-file", str(token)]
        return b

    def test_a_32_mb_line_without_the_token_is_refused_cheaply(self):
        with self.bridge() as b:
            ping = json.dumps({"action": "ping", "token": TOKEN}).encode() + b"\n"
            self.assertTrue(b.raw_json(ping)["pong"])
            before = b.status_kb("VmHWM")
            line = b'{"action": "chat", "message": "' + b"x" * (32 << 20) + b'"}\n'
            with b.connect() as s:
                sent = threading.Event()

                def send():
                    try:
                        s.sendall(line)
                    except OSError:
                        pass  # cut off while sending: expected
                    sent.set()

                sender = threading.Thread(target=send)
                sender.start()
                answer = json.loads(s.makefile("rb").readline())
                # Others are served meanwhile.
                self.assertTrue(b.raw_json(ping)["pong"])
                sender.join(30)
            self.assertFalse(answer["ok"])
            self.assertEqual(answer["error_type"], "PermissionError")
            self.assertTrue(answer["error"].startswith("unauthorized"), answer)
            grown_kb = b.status_kb("VmHWM") - before
            self.assertLess(grown_kb, 8 << 10, f"peak RSS grew by {grown_kb} kB")

    def test_a_big_first_request_that_shows_its_token_early_is_served(self):
        with self.bridge() as b:
            big = "y" * (300 << 10)
            early = json.dumps({"token": TOKEN, "action": "ping", "pad": big}).encode() + b"\n"
            self.assertTrue(b.raw_json(early)["pong"])
            # A keepalive connection that has shown its token may send long lines after.
            with b.connect() as s:
                s.sendall(json.dumps({"action": "ping", "keepalive": True, "token": TOKEN}).encode() + b"\n")
                s.sendall(json.dumps({"action": "ping", "pad": big}).encode() + b"\n")
                lines = s.makefile("rb")
                self.assertTrue(json.loads(lines.readline())["pong"])
                self.assertTrue(json.loads(lines.readline())["pong"])
            late = json.dumps({"action": "ping", "pad": big, "token": TOKEN}).encode() + b"\n"
            with b.connect() as s:
                try:
                    s.sendall(late)
                except BrokenPipeError:
                    pass  # refused and closed after its first 64 KiB; the answer is waiting
                answer = json.loads(s.makefile("rb").readline())
            self.assertEqual(answer["error_type"], "PermissionError")
            self.assertIn("within its first 65536 bytes", answer["error"])


class Timeouts(unittest.TestCase):
    def test_a_chat_wait_timeout_that_no_clock_holds_waits_like_the_seed(self):
        with Bridge() as b:
            for timeout in ["inf", "nan", -1, 1e300, "1e300"]:
                with self.subTest(timeout=timeout):
                    out = b.chat(f"s-{timeout}", "script: sleep 300; say done", wait=True, timeout=timeout)
                    self.assertTrue(out["ok"], out)
                    self.assertEqual(out["status"], "complete", out)
                    self.assertIn("done", out["output"])


if __name__ == "__main__":
    unittest.main()
