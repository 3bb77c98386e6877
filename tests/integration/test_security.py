"""Who may talk to the daemon: owner-only unix sockets, per-user default
path, never stealing a live daemon's socket, tokens for TCP, a connection
cap, socket activation; and the health action."""

from __future__ import annotations

import json
import os
import select
import socket
import sqlite3
import stat
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from harness import Bridge, FAKE_AGENT, bridge_binary, free_port, start_refused


class UnixSockets(unittest.TestCase):
    def test_socket_is_owner_only_in_an_owner_only_directory(self):
        b = Bridge()
        b.endpoint = f"ipc://{b.dir}/fresh/dir/bridge.sock"
        with b:
            path = Path(b.endpoint[len("ipc://"):])
            self.assertEqual(stat.S_IMODE(path.stat().st_mode), 0o600)
            self.assertEqual(stat.S_IMODE(path.parent.stat().st_mode), 0o700)

    def test_no_descriptor_of_the_daemon_outlives_an_exec_client_connections_included(self):
        # What the daemon starts (workers, tmux, an agent's tools) must not
        # hold a client's connection, nor the log, open: every file past
        # stdio is close-on-exec, sockets accepted with it (accept4).
        for transport in ("ipc", "tcp"):
            with Bridge(transport=transport) as b:
                b.chat("x", "hi", wait=True)
                client = b.connect()
                client.sendall(b'{"action": "ping", "keepalive": true}\n')
                self.assertIn(b'"pong": true', client.recv(65536))
                before = set(os.listdir(f"/proc/{b.proc.pid}/fd"))
                second = b.connect()  # the descriptor that appears is its accepted socket
                second.sendall(b'{"action": "ping", "keepalive": true}\n')
                self.assertIn(b'"pong": true', second.recv(65536))
                accepted = set(os.listdir(f"/proc/{b.proc.pid}/fd")) - before
                self.assertTrue(accepted, transport)
                for fd in os.listdir(f"/proc/{b.proc.pid}/fd"):
                    try:
                        target = os.readlink(f"/proc/{b.proc.pid}/fd/{fd}")
                        with open(f"/proc/{b.proc.pid}/fdinfo/{fd}") as info:
                            flags = int(next(l for l in info if l.startswith("flags:")).split()[1], 8)
                    except FileNotFoundError:
                        continue  # closed meanwhile by one of the daemon's threads
                    if int(fd) >= 3:
                        self.assertTrue(flags & os.O_CLOEXEC, (transport, fd, target))
                    if fd in accepted and target.startswith("socket:"):
                        self.assertTrue(flags & os.O_NONBLOCK, (transport, fd))
                client.close()
                second.close()

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


class Directories(unittest.TestCase):
    def test_a_socket_directory_others_can_write_is_refused(self):
        b = Bridge()
        shared = b.dir / "shared"
        shared.mkdir()
        shared.chmod(0o777)  # no sticky bit: anyone could swap the socket
        b.endpoint = f"ipc://{shared}/bridge.sock"
        message = start_refused(self, b)
        self.assertIn(f"socket directory {shared} is writable by group or others", message)
        self.assertFalse((shared / "bridge.sock").exists())

    def test_a_root_owned_sticky_directory_like_tmp_is_accepted(self):
        # Hermes Studio's default endpoint is ipc:///tmp/hermes-agent-bridge.sock.
        b = Bridge()
        b.endpoint = f"ipc:///tmp/hb-sticky-{os.getpid()}.sock"
        with b:
            self.assertTrue(b.request({"action": "ping"})["pong"])

    def test_directories_the_daemon_creates_are_owner_only(self):
        b = Bridge()
        b.endpoint = f"ipc://{b.dir}/made/for/it/bridge.sock"
        with b:
            for d in ("made", "made/for", "made/for/it"):
                self.assertEqual(stat.S_IMODE((b.dir / d).stat().st_mode), 0o700, d)

    def test_a_native_directory_others_can_write_is_refused(self):
        b = Bridge()
        native = b.dir / "native"
        (native / "somesession").mkdir(parents=True, mode=0o700)
        b.args = ["--native-dir", str(native)]
        native.chmod(0o770)
        self.assertIn(f"native session directory {native} is writable by group or others", start_refused(self, b))
        c = Bridge()
        native = c.dir / "native"
        (native / "somesession").mkdir(parents=True, mode=0o700)
        (native / "somesession").chmod(0o722)
        c.args = ["--native-dir", str(native)]
        self.assertIn(f"native session directory {native / 'somesession'} is writable", start_refused(self, c))


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

    def test_tcp_on_loopback_without_a_token_warns(self):
        with Bridge(transport="tcp") as b:
            self.assertTrue(b.request({"action": "ping"})["pong"])
            self.assertIn("event=access.no_token", b.stderr())
            self.assertIn("any local user can connect", b.stderr())
        with Bridge() as b:  # a unix socket is owner-only: nothing to warn about
            self.assertNotIn("access.no_token", b.stderr())

    def test_loopback_is_the_bound_address_not_the_name(self):
        # "localhost" resolves to loopback: served. (The daemon's own
        # non-loopback address, refused whatever it is called, is in
        # test_security_outward: not every machine has one.)
        b = Bridge(transport="tcp")
        b.endpoint = f"tcp://localhost:{free_port()}"
        with b:
            self.assertIn("address=127.0.0.1:", b.stderr())

    def test_the_terminal_client_sends_the_token(self):
        b = Bridge(transport="tcp")
        token = self.token_file(b.dir)
        b.args = ["--token-file", str(token)]
        request = b.request
        b.request = lambda obj, timeout=30.0: request({**obj, "token": "s3cret-token"}, timeout)
        with b:
            call = [str(bridge_binary()), "call", "--endpoint", b.endpoint]
            denied = subprocess.run(call + ['{"action": "ping"}'], capture_output=True, timeout=30)
            self.assertEqual(denied.returncode, 1)
            self.assertIn(b"unauthorized", denied.stdout)
            served = subprocess.run(call + ["--token-file", str(token), '{"action": "ping"}'],
                                    capture_output=True, timeout=30)
            self.assertEqual(served.returncode, 0, served.stdout + served.stderr)
            self.assertIn(b'"pong": true', served.stdout)
            chat = subprocess.run([str(bridge_binary()), "chat", "--endpoint", b.endpoint, "--token-file", str(token),
                                   "--session", "tok", "hello"], capture_output=True, timeout=60)
            self.assertEqual(chat.returncode, 0, chat.stderr)
            self.assertIn(b"echo: hello", chat.stdout)
            attach = subprocess.run([str(bridge_binary()), "attach", "--endpoint", b.endpoint, "--token-file",
                                     str(token), "--print", "tok"], capture_output=True, timeout=30)
            self.assertIn(b"is not a native session", attach.stderr)  # it got past the token
            loose = b.dir / "loose-token"
            loose.write_text("s3cret-token")
            loose.chmod(0o644)
            refused = subprocess.run(call + ["--token-file", str(loose), '{"action": "ping"}'],
                                     capture_output=True, timeout=30)
            self.assertEqual(refused.returncode, 2, refused.stderr)
            self.assertIn(b"readable by others", refused.stderr)

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

    def test_a_stored_profile_that_is_a_path_is_not_resumed(self):
        first = Bridge().start()
        db = first.home / "hermes-bridge" / "events.db"
        try:
            self.assertEqual(first.chat("old", "hi", wait=True)["status"], "complete")
            first.request({"action": "shutdown"})
            first.proc.wait(10)
            first.proc.stdout.close()
            with sqlite3.connect(db) as c:  # as a log written before profiles were checked could hold
                c.execute("UPDATE sessions SET config=json_set(config, '$.profile', '../../escaped')")
            with Bridge(args=["--db", str(db)]) as again:
                reply = again.chat("old", "hi again", wait=True)
                self.assertEqual(reply["error_type"], "ValueError", reply)
                self.assertIn("plain name", reply["error"])
                self.assertEqual(again.request({"action": "status", "session_id": "old"})["exists"], True)
            self.assertFalse((first.dir.parent / "escaped").exists())
            verdict = subprocess.run([str(bridge_binary()), "verify", "--db", str(db)], capture_output=True)
            self.assertEqual(verdict.returncode, 5)
            self.assertIn(b"sessions session old: profile must be a plain name", verdict.stdout)
        finally:
            first.stop()


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

    def test_the_cap_fits_the_open_file_limit_so_its_refusal_is_sent(self):
        b = Bridge()
        command = b.command
        b.command = lambda: ["/bin/sh", "-c", 'ulimit -n 256; exec "$0" "$@"'] + command()  # soft and hard
        with b:
            logged = [line for line in b.stderr().splitlines() if "event=connections.capped" in line]
            self.assertEqual(len(logged), 1, b.stderr())
            cap = int(logged[0].split("max_connections=")[1].split()[0])
            self.assertIn("open_file_limit=256", logged[0])
            self.assertLess(cap, 256)
            held = [b.connect() for _ in range(cap)]
            time.sleep(0.2)
            for _ in range(40):  # well past the cap: every one is told, none hangs
                with b.connect(timeout=5) as refused:
                    reply = json.loads(refused.recv(65536))
                self.assertIn("too many connections", reply["error"])
            for sock in held:
                sock.close()
            time.sleep(0.2)
            self.assertTrue(b.request({"action": "ping"})["pong"])
            self.assertEqual(b.chat("fd", "hi", wait=True)["status"], "complete")  # room left to work

    def test_the_soft_open_file_limit_is_raised_to_the_hard_one(self):
        b = Bridge()
        command = b.command
        b.command = lambda: ["/bin/sh", "-c", 'ulimit -S -n 200; exec "$0" "$@"'] + command()
        with b:
            pid = b.proc.pid
            limits = Path(f"/proc/{pid}/limits").read_text()
            soft, hard = next(line for line in limits.splitlines() if line.startswith("Max open files")).split()[3:5]
            self.assertEqual(soft, hard)
            self.assertGreater(int(soft), 200)

    def test_max_sessions_refuses_new_session_ids(self):
        with Bridge(args=["--max-sessions", "2"]) as b:
            for sid in ("m1", "m2"):
                self.assertEqual(b.chat(sid, "hi", wait=True)["status"], "complete")
            refused = b.chat("m3", "hi", wait=True)
            self.assertEqual(refused["error_type"], "RuntimeError")
            self.assertIn("too many sessions (--max-sessions 2)", refused["error"])
            self.assertEqual(b.chat("m1", "again", wait=True)["status"], "complete")  # known ids still run
            self.assertTrue(b.request({"action": "destroy", "session_id": "m2"})["destroyed"])
            self.assertEqual(b.chat("m3", "hi", wait=True)["status"], "complete")

    def test_a_line_trickled_byte_by_byte_is_cut_at_the_deadline(self):
        with Bridge(args=["--read-timeout-ms", "1500"]) as b:
            for keepalive in (False, True):
                with self.subTest(keepalive=keepalive), b.connect(timeout=10) as sock:
                    if keepalive:
                        sock.sendall(b'{"action": "ping", "keepalive": true}\n')
                        self.assertIn(b'"pong"', sock.recv(65536))
                    started = time.monotonic()
                    answer = b""
                    for byte in b'{"action": "ping", "padding": "' + b"x" * 100:
                        try:
                            sock.sendall(bytes([byte]))
                        except OSError:
                            break
                        ready, _, _ = select.select([sock], [], [], 0.25)  # one byte every quarter second
                        if ready:
                            answer = sock.recv(65536)
                            break
                    elapsed = time.monotonic() - started
                    self.assertIn(b"no complete request line within 1500 ms", answer)
                    self.assertLess(elapsed, 12.0)  # the deadline, not the last byte (25 s on), decides
                    self.assertGreater(elapsed, 1.4)

    def test_bytes_held_in_unfinished_lines_are_capped(self):
        with Bridge(args=["--max-pending-bytes", "100000"]) as b:
            first = b.connect(timeout=10)
            first.sendall(b'{"action": "ping", "pad": "' + b"a" * 60000)
            deadline = time.monotonic() + 10
            while b.request({"action": "health"})["pending_request_bytes"] < 60000 and time.monotonic() < deadline:
                time.sleep(0.02)  # until the daemon holds all of it
            with b.connect(timeout=10) as second:
                second.sendall(b'{"action": "ping", "pad": "' + b"b" * 60000)
                reply = json.loads(second.recv(65536))
            self.assertEqual(reply["error_type"], "RuntimeError")
            self.assertIn("--max-pending-bytes 100000", reply["error"])
            self.assertIn("event=connection.refused_pending", b.stderr())
            self.assertTrue(b.request({"action": "ping"})["pong"])  # small requests still fit
            first.sendall(b'"}\n')  # the first line completes: its bytes are no longer held
            self.assertIn(b'"pong": true', first.recv(65536))
            first.close()
            self.assertEqual(b.request({"action": "health"})["pending_request_bytes"], 0)
            with b.connect(timeout=10) as third:
                third.sendall(b'{"action": "ping", "pad": "' + b"c" * 90000 + b'"}\n')
                self.assertIn(b'"pong": true', third.recv(65536))

    def test_thousands_of_silent_connections_do_not_delay_a_ping(self):
        with Bridge() as b:
            silent = [b.connect() for _ in range(2000)]
            half = silent[:1000]
            for sock in half:
                sock.sendall(b'{"action": "pi')  # half a line, then nothing
            started = time.monotonic()
            self.assertTrue(b.request({"action": "ping"})["pong"])
            waited = time.monotonic() - started
            self.assertLess(waited, 10.0)  # served, not queued behind their 30 s read deadlines
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
    def start_with_inherited(self, listener: socket.socket, home: Path, *extra: str) -> subprocess.Popen:
        def as_fd_3():  # systemd's place for the first inherited socket
            if listener.fileno() == 3:
                os.set_inheritable(3, True)
            else:
                os.dup2(listener.fileno(), 3)
        return subprocess.Popen(
            ["/bin/sh", "-c", 'export LISTEN_PID=$$ LISTEN_FDS=1; exec "$0" "$@"', str(bridge_binary()),
             "--agent-root", str(FAKE_AGENT), "--hermes-home", str(home), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=as_fd_3, close_fds=False)

    def test_an_inherited_tcp_socket_follows_the_endpoint_rule(self):
        home = Path(tempfile.mkdtemp(prefix="hb-activation-"))
        (home / "config.yaml").write_text(json.dumps({"model": {"default": "fake-model"}}))
        try:
            exposed = socket.socket()
            exposed.bind(("0.0.0.0", 0))
            exposed.listen(4)
            # The endpoint flag says loopback; the socket systemd handed over is what counts.
            proc = self.start_with_inherited(exposed, home, "--endpoint", "tcp://127.0.0.1:1")
            out, err = proc.communicate(timeout=30)
            exposed.close()
            self.assertEqual(proc.returncode, 1)
            self.assertEqual(out, b"")
            self.assertIn(b"the socket handed over by systemd (LISTEN_FDS) is bound to 0.0.0.0:", err)
            self.assertIn(b"--token-file", err)
            local = socket.socket()
            local.bind(("127.0.0.1", 0))
            local.listen(4)
            proc = self.start_with_inherited(local, home, "--endpoint", f"tcp://127.0.0.1:{local.getsockname()[1]}")
            try:
                ready, _, _ = select.select([proc.stdout], [], [], 20)
                self.assertTrue(ready, "no ready line")
                self.assertIn(b'"ready"', proc.stdout.readline())
                with socket.create_connection(local.getsockname(), timeout=10) as client:
                    client.sendall(b'{"action": "ping"}\n')
                    self.assertIn(b'"pong": true', client.recv(65536))
            finally:
                proc.terminate()
                proc.wait(10)
                err = proc.stderr.read()
                proc.stdout.close()
                proc.stderr.close()
                local.close()
            self.assertIn(b"event=access.no_token", err)
        finally:
            subprocess.run(["rm", "-rf", str(home)])

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
