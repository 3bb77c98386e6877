"""The worker's socket to the daemon (fd 3): frames queued whole, in order,
and sent by a writer thread of its own (worker_main.py uses it; the frame
format is worker_frames.py's). Stdlib only."""

from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import worker_frames as frames

if TYPE_CHECKING:
    from worker_main import Turn


class Connection:
    """The socket to the daemon. Frames are queued whole under one lock, in
    the order they are made, and a writer thread sends what has queued in
    one system call: a busy worker sends many deltas per write instead of
    paying a write (and a wake-up of the daemon's reader) for each. The lock
    is re-entrant so that resolve_gateway can hold it across the call that
    wakes an agent thread (see Worker.resolve_gateway)."""

    # Queued bytes past which senders wait: back-pressure reaches the agent's
    # threads when the daemon reads slowly, as it would with a full socket.
    QUEUE_LIMIT = 8 << 20

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbox = sock.makefile("rb")
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.queue = bytearray()
        self.broken = False
        self.sending = False
        threading.Thread(target=self._send_loop, name="hermes-bridge-frames", daemon=True).start()

    # Positional-only: an ask frame has a field named "kind".
    def send(self, frame_kind: str, /, **fields: Any) -> bool:
        data = frames.encode(frame_kind, fields)
        with self.lock:
            return self._queue(data)

    def send_for(self, turn: "Turn", frame_kind: str, /, **fields: Any) -> bool:
        """A turn's frame, numbered in the order it is queued."""
        with self.lock:
            if turn.closed:
                return False  # a thread the turn left behind
            turn.seq += 1
            fields["turn"], fields["seq"] = turn.turn_id, turn.seq
            return self._queue(frames.encode(frame_kind, fields))

    def send_now(self, frame_kind: str, /, **fields: Any) -> bool:
        """A frame that does not wait for room (a heartbeat's reply: tiny, and
        it must not look like a hung worker while the daemon reads slowly)."""
        data = frames.encode(frame_kind, fields)
        with self.lock:
            return self._queue(data, wait=False)

    def _queue(self, data: bytes, wait: bool = True) -> bool:
        while wait and len(self.queue) > self.QUEUE_LIMIT and not self.broken:
            self.cond.wait(1.0)
        if self.broken:
            return False
        self.queue += data
        self.cond.notify_all()
        return True

    def _send_loop(self) -> None:
        while True:
            with self.cond:
                while not self.queue:
                    self.cond.wait()
                data, self.queue = bytes(self.queue), bytearray()
                self.sending = True
                self.cond.notify_all()  # room for blocked senders
            try:
                self.sock.sendall(data)
            except OSError:
                with self.cond:
                    self.broken = True
                    self.queue.clear()
                    self.cond.notify_all()
                return
            finally:
                with self.cond:
                    self.sending = False
                    self.cond.notify_all()

    def drain(self, timeout_s: float) -> None:
        """Waits (a bounded time) until everything queued has been sent."""
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while (self.queue or self.sending) and not self.broken:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(left)
