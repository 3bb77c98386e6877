"""Who may talk to the daemon: owner-only unix sockets, per-user default
path, never stealing a live daemon's socket, tokens for TCP, a connection
cap, socket activation; and the health action."""

from __future__ import annotations

import json
import os
import select
import socket
import stat
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge, FAKE_AGENT, bridge_binary, free_port


class UnixSockets(unittest.TestCase):
    def test_socket_is_owner_only_in_an_owner_only_directory(self):
        b = Bridge()
        b.endpoint = f"ipc://{b.dir}/fresh/dir/bridge.sock"
        with b:
            path = Path(b.endpoint[len("ipc://"):])
            self.assertEqual(stat.S_IMODE(path.stat().st_mode), 0o600)
            self.assertEqual(stat.S_IMODE(path.parent.stat().st_mode), 0o700)

    def test_a_live_daemon_s_socket_is_never_taken(self):
        with Bridge() as first:
            second = Bridge()
            second.endpoint = first.endpoint
            with self.assertRaises(AssertionError) as refused:
                second.start()
            self.assertIn("another bridge is already serving", str(refused.exception))
            second.proc.wait(10)  # else stop() would send `shutdown` to the first one's socket
            second.stop()
            self.assertTrue(first.request({"action": "ping"})["pong"])

    def test_a_stale_socket_is_replaced_and_other_files_are_not(self):
        b = Bridge()
        path = b.dir / "bridge.sock"
        dead = socket.socket(socket.AF_UNIX)
        dead.bind(str(path))
        dead.close()  # the file stays, nobody listens
        with b:
            self.assertTrue(b.request({"action": "ping"})["pong"])
        c = Bridge()
        (c.dir / "bridge.sock").write_text("not a socket")
        with self.assertRaises(AssertionError) as refused:
            c.start()
        self.assertIn("is not a socket", str(refused.exception))
        c.stop()

    def test_default_endpoint_is_per_user(self):
        b = Bridge()
        runtime = b.dir / "runtime"
        runtime.mkdir(mode=0o700)
        cmd = b.command()
        i = cmd.index("--endpoint")
        b.command = lambda: cmd[:i] + cmd[i + 2:]
        b.env = {"XDG_RUNTIME_DIR": str(runtime), "HERMES_AGENT_BRIDGE_ENDPOINT": ""}
        b.endpoint = f"ipc://{runtime}/hermes-bridge/bridge.sock"
        os.environ.pop("HERMES_AGENT_BRIDGE_ENDPOINT", None)
        with b:
            self.assertEqual(json.loads(b.ready_line)["endpoint"], b.endpoint)


class Tokens(unittest.TestCase):
    def token_file(self, directory: Path, mode: int = 0o600) -> Path:
        path = directory / "token"
        path.write_text("s3cret-token\n")
        path.chmod(mode)
        return path

    def test_non_loopback_tcp_needs_a_private_token_file(self):
        b = Bridge(transport="tcp")
        b.endpoint = f"tcp://0.0.0.0:{free_port()}"
        with self.assertRaises(AssertionError) as refused:
            b.start()
        self.assertIn("--token-file", str(refused.exception))
        b.stop()
        c = Bridge(transport="tcp")
        c.args = ["--token-file", str(self.token_file(c.dir, 0o644))]
        with self.assertRaises(AssertionError) as refused:
            c.start()
        self.assertIn("readable by others", str(refused.exception))
        c.stop()

    def test_only_clients_with_the_token_are_served(self):
        b = Bridge(transport="tcp")
        b.args = ["--token-file", str(self.token_file(b.dir))]
        b.endpoint = f"tcp://0.0.0.0:{free_port()}"
        # the harness pings to see the daemon is up; give it the token
        request = b.request
        b.request = lambda obj, timeout=30.0: request({**obj, "token": "s3cret-token"}, timeout)
        with b:
            denied = {"ok": False, "error": "unauthorized", "error_type": "PermissionError"}
            self.assertEqual(request({"action": "ping"}), denied)
            self.assertEqual(request({"action": "ping", "token": "s3cret-tokeX"}), denied)
            self.assertEqual(request({"action": "list", "token": "s3cret"}), denied)
            self.assertTrue(b.request({"action": "ping"})["pong"])
            # a keepalive connection authenticates once
            sock = b.connect()
            sock.sendall(b'{"action": "ping", "keepalive": true, "token": "s3cret-token"}\n{"action": "ping"}\n')
            time.sleep(0.2)
            lines = [json.loads(line) for line in sock.recv(65536).splitlines()]
            self.assertEqual([line["pong"] for line in lines], [True, True])
            sock.close()
            self.assertNotIn("s3cret-token", b.stderr())


class Names(unittest.TestCase):
    def test_a_profile_that_is_a_path_is_a_value_error_and_creates_nothing(self):
        with Bridge() as b:
            outside = b.dir / "outside"
            for profile in ("../outside", "../../outside", str(outside), "a/b", "..", "."):
                with self.subTest(profile=profile):
                    reply = b.request({"action": "chat", "session_id": "p", "message": "hi", "profile": profile})
                    self.assertEqual(reply["error_type"], "ValueError", reply)
                    self.assertIn("plain name", reply["error"])
            self.assertFalse(outside.exists())
            self.assertEqual(sorted(p.name for p in b.home.iterdir() if p.name != "hermes-bridge"),
                             ["config.yaml"])
            self.assertEqual(b.request({"action": "list"})["sessions"], [])
            self.assertEqual(b.chat("p", "hi", wait=True, profile="default")["status"], "complete")


class Limits(unittest.TestCase):
    def test_connections_beyond_the_cap_are_refused_clearly(self):
        with Bridge(args=["--max-connections", "4"]) as b:
            held = [b.connect() for _ in range(4)]
            time.sleep(0.1)
            with b.connect() as refused:  # refused before it can even send
                reply = json.loads(refused.recv(65536))
            self.assertEqual(reply["error_type"], "RuntimeError")
            self.assertIn("too many connections", reply["error"])
            for sock in held:
                sock.close()
            time.sleep(0.1)
            self.assertTrue(b.request({"action": "ping"})["pong"])

    def test_thousands_of_silent_connections_do_not_delay_a_ping(self):
        with Bridge() as b:
            silent = [b.connect() for _ in range(2000)]
            half = silent[:1000]
            for sock in half:
                sock.sendall(b'{"action": "pi')  # half a line, then nothing
            started = time.monotonic()
            self.assertTrue(b.request({"action": "ping"})["pong"])
            waited = time.monotonic() - started
            self.assertLess(waited, 2.0)  # served, not queued behind them
            self.assertEqual(b.request({"action": "health"})["connections"], 2001)
            for sock in silent:
                sock.close()

    def test_health_reports_the_daemon_s_state(self):
        with Bridge() as b:
            b.chat("h1", "hi", wait=True)
            run = b.chat("h2", "script:approve-gw rm -rf /")["run_id"]
            b.wait_event(run, "approval.requested")
            health = b.request({"action": "health"})
            self.assertEqual(health["sessions"], 2)
            self.assertEqual(health["running"], 1)
            self.assertEqual(health["pending_questions"], 1)
            self.assertGreater(health["log_bytes"], 0)
            self.assertGreater(health["commits"], 0)
            self.assertGreater(health["committed_rows"], health["commits"] - 1)
            self.assertGreaterEqual(health["max_commit_ms"], health["last_commit_ms"])


class SocketActivation(unittest.TestCase):
    def test_an_inherited_listening_socket_is_served(self):
        home = Path(tempfile.mkdtemp(prefix="hb-activation-"))
        (home / "config.yaml").write_text(json.dumps({"model": {"default": "fake-model"}}))
        path = home / "activated.sock"
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(path))
        listener.listen(16)

        def as_fd_3():  # systemd's place for the first inherited socket
            if listener.fileno() == 3:
                os.set_inheritable(3, True)
            else:
                os.dup2(listener.fileno(), 3)  # the copy is inheritable

        proc = subprocess.Popen(
            ["/bin/sh", "-c", 'export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" "$@"', str(bridge_binary()),
             "--endpoint", f"ipc://{path}", "--agent-root", str(FAKE_AGENT), "--hermes-home", str(home)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=as_fd_3, close_fds=False)
        try:
            ready, _, _ = select.select([proc.stdout], [], [], 20)
            self.assertTrue(ready, "no ready line")
            self.assertIn(b'"ready"', proc.stdout.readline(), proc.stderr.read1(4096) if proc.poll() else b"")
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(str(path))
                client.sendall(b'{"action": "ping"}\n')
                self.assertIn(b'"pong": true', client.recv(65536))
        finally:
            proc.terminate()
            proc.wait(10)
            proc.stdout.close()
            proc.stderr.close()
            listener.close()
            subprocess.run(["rm", "-rf", str(home)])


if __name__ == "__main__":
    unittest.main()
