"""A worker's own socket, through which a daemon started after the one that
started the worker can attach to it (FRAMES.md, "Re-attaching"): the socket
and the record that names it and holds its secret, the handshake, and where
the worker's output goes once its daemon is gone. Stdlib only."""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import signal
import socket
import struct
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

import worker_frames as frames
import worker_threads as threads
from worker_connection import Connection

if TYPE_CHECKING:
    from worker_main import Worker

# FRAMES.md: the handshake is done within this, and an `attach` is small.
HANDSHAKE_S = 10.0
MAX_ATTACH_BYTES = 4 << 10
# Handshakes in progress at once: one that stalls for its 10 s holds a thread,
# not the accepting, and a flood of them cannot grow the worker's threads.
MAX_HANDSHAKES = 4


class Rendezvous:
    """`<dir>/worker-<pid>.sock` and `.json`, for as long as the worker lives."""

    def __init__(self, directory: str, profile: str, daemon_key: str) -> None:
        # Spelled as the daemon spells it (dir + "/worker-<pid>..."): it checks
        # that the record's socket is the one it expects, string for string.
        base = f"{directory}/worker-{os.getpid()}"
        self.directory = directory
        self.profile = profile
        self.daemon_key = daemon_key
        self.socket_path, self.record_path, self.log_path = base + ".sock", base + ".json", base + ".log"
        self.secret = secrets.token_hex(32)
        self.listener: socket.socket | None = None
        self.handshakes = threading.BoundedSemaphore(MAX_HANDSHAKES)
        self.output_moved = False

    def open(self) -> None:
        """Listens on the socket, then writes the record that leads to it."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)  # a dead process's that had this pid: no one listens on it
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.socket_path)
            os.chmod(self.socket_path, 0o600)
            listener.listen(8)
            self._write_record()
        except BaseException:
            listener.close()
            self.remove()
            raise
        self.listener = listener

    def _write_record(self) -> None:
        record = {"pid": os.getpid(), "profile": self.profile, "socket": self.socket_path, "secret": self.secret,
                  "version": frames.FRAMES_VERSION, "started_at": time.time(), "daemon": self.daemon_key,
                  # Where the bootstrap loaded this worker's modules from: the
                  # daemon that takes the worker over must not sweep it away.
                  "modules": os.path.dirname(__file__)}
        # Written whole under another name, then renamed: a daemon never reads
        # half a record, and the secret is never in a file others can read.
        partial = f"{self.directory}/.worker-{os.getpid()}.json.partial"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(partial)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(record, out)
            os.replace(partial, self.record_path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise

    def remove(self) -> None:
        """No daemon finds this worker any more; safe to call more than once."""
        for path in (self.record_path, self.socket_path):
            with contextlib.suppress(OSError):
                os.unlink(path)

    def remove_on_sigterm(self) -> None:
        """A worker killed by SIGTERM takes its files with it and still dies of
        the signal (its exit status says so)."""
        def on_term(signum: int, _frame: Any) -> None:
            self.remove()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
        signal.signal(signal.SIGTERM, on_term)

    def move_output(self) -> None:
        """Stdout and stderr were the daemon's, now gone: from here on they go
        to the log file, so a print cannot fail on a closed pipe."""
        if self.output_moved:
            return
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()  # what can still reach the old pipe; the rest reaches the log
        try:
            fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError:
            return  # prints may fail as they would have; the worker goes on
        try:
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            self.output_moved = True
        finally:
            os.close(fd)

    # -- attaching ------------------------------------------------------------
    def serve(self, conn: Connection, describe: Callable[[], dict[str, Any]],
              drain: Callable[[], int | None]) -> None:
        """Takes attaches (and a drain) from now on, on a thread of its own."""
        self.drain = drain
        threads.start(self._accept_loop, "hb-rendezvous", conn, describe)

    def _accept_loop(self, conn: Connection, describe: Callable[[], dict[str, Any]]) -> None:
        assert self.listener is not None
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                time.sleep(0.1)  # out of descriptors, say: no busy loop while it lasts
                continue
            if not (_peer_is_us(sock) and self.handshakes.acquire(blocking=False)):
                sock.close()
                continue
            threads.start(self._handshake, "hb-attach", sock, conn, describe)

    def _handshake(self, sock: socket.socket, conn: Connection, describe: Callable[[], dict[str, Any]]) -> None:
        deadline = time.monotonic() + HANDSHAKE_S
        adopted = False
        try:
            first = _read_attach(sock, deadline)
            reason = self._refusal(first)
            if reason is None and first["t"] == "drain":
                live = self.drain()
                if live is not None:
                    sock.settimeout(max(deadline - time.monotonic(), 0.1))
                    sock.sendall(frames.encode("drained", {"version": frames.FRAMES_VERSION, "turns": live}))
                    return
                reason = "another hermes-bridge is attached to this worker"
            elif reason is None:
                sock.settimeout(None)
                adopted = conn.adopt(sock, describe)
                if adopted:
                    return
                reason = "another hermes-bridge is attached to this worker"
            sock.settimeout(max(deadline - time.monotonic(), 0.1))
            sock.sendall(frames.encode("attach_refused", {"reason": reason}))
        except (OSError, ValueError, frames.FrameError):
            pass  # not a daemon speaking this format: it only gets the connection closed
        finally:
            if not adopted:
                sock.close()
            self.handshakes.release()

    def _refusal(self, frame: dict[str, Any]) -> str | None:
        """Why this `attach` (or `drain`) is refused, or None to go on. A
        drain carries no version: every version understands it."""
        secret, version = frame.get("secret"), frame.get("version")
        if frame["t"] == "drain" and isinstance(secret, str):
            version = frames.FRAMES_VERSION
        if frame["t"] not in ("attach", "drain") or not isinstance(secret, str) or type(version) is not int:
            raise frames.FrameError("not an attach frame")
        if not hmac.compare_digest(secret.encode("utf-8", "replace"), self.secret.encode("ascii")):
            return "wrong secret"
        if version != frames.FRAMES_VERSION:
            return f"this worker speaks frame version {frames.FRAMES_VERSION}, not {version}"
        return None


def open_rendezvous(directory: str, profile: str, daemon_key: str) -> Rendezvous | None:
    rendezvous = Rendezvous(directory, profile, daemon_key)
    try:
        rendezvous.open()
    except OSError as exc:
        # The worker still serves its daemon; only no later daemon can find it.
        print(f"hermes-bridge worker: no socket of its own in {directory}: {exc}", file=sys.stderr)
        return None
    return rendezvous


def describe(worker: "Worker") -> dict[str, Any]:
    """The `attached` frame: who the worker is and what it holds. Called
    under the connection's lock (Connection.adopt), so no turn writes a frame
    meanwhile and every `seq` in it is exact."""
    now = time.monotonic()
    turns = [{"turn": t.turn_id, "handle": t.handle, "run": t.run, "seq": t.seq, "ended": t.closed}
             for t in worker.conn.turns.values()]
    with worker.lock:
        sessions = [{"handle": h, "session_id": sid} for h, sid in worker.session_ids.items()]
        # A question whose frame is not written yet is left out: that frame
        # reaches the daemon as its turn's, once the turn is resumed. So is a
        # gateway approval past its deadline: its agent has stopped waiting.
        asks = [{"turn": w["turn"], "ask": ask_id, "seq": w["seq"], "kind": w["kind"], "request": w["request"],
                 "timeout_s": w["timeout_s"], "waited_s": round(now - w["asked_at"], 3)}
                for ask_id, w in worker.questions.items()
                if w["seq"] is not None and not w["done"].is_set()
                and (w["kind"] != "gateway" or now - w["asked_at"] < w["timeout_s"])]
    return {"t": "attached", **worker.identity, "warm": worker.warm, "req": worker.highest_req,
            "sessions": sessions, "turns": turns, "asks": asks}


def _peer_is_us(sock: socket.socket) -> bool:
    try:
        # struct ucred: a pid_t, then uid_t and gid_t (unsigned).
        _pid, uid, _gid = struct.unpack("iII", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                               struct.calcsize("3i")))
    except OSError:
        return False
    return uid == os.getuid()


def _read_attach(sock: socket.socket, deadline: float) -> dict[str, Any]:
    """The first frame, small and in time, or FrameError / TimeoutError."""
    (size,) = struct.unpack(">I", _receive(sock, 4, deadline))
    if size > MAX_ATTACH_BYTES:  # a part that says more follow is bigger still
        raise frames.FrameError(f"an attach frame of {size} bytes")
    return frames.read_body(_receive(sock, size, deadline))


def _receive(sock: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the attach did not come in time")
        sock.settimeout(left)
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise frames.FrameError("the connection ended before its attach")
        data += chunk
    return data
