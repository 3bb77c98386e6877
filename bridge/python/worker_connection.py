"""The worker's socket to the daemon (fd 3): frames queued in order and sent
by a writer thread of its own (worker_main.py uses it; the frame format is
worker_frames.py's). Stdlib only."""

from __future__ import annotations

import collections
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import worker_frames as frames

if TYPE_CHECKING:
    from worker_main import Turn


class Connection:
    """The socket to the daemon. Senders only append a frame's fields to a
    list under one lock, in the order the frames are made; the writer
    thread takes everything that piled up meanwhile, encodes it in one go
    (a turn's frames that follow each other as one `batch` frame) and sends
    it in one system call. So a busy worker pays one encoding call, one
    frame for the daemon to parse and one write per batch rather than per
    delta, and its 64 turn threads hold the lock for a list append only. An
    idle writer sends a lone frame at once: batches form only from what
    waits anyway. The lock is re-entrant so that resolve_gateway can hold
    it across the call that wakes an agent thread (see
    Worker.resolve_gateway)."""

    # Queued bytes (about: characters) past which senders wait: back-pressure
    # reaches the agent's threads when the daemon reads slowly, as it would
    # with a full socket.
    QUEUE_LIMIT = 8 << 20
    # A turn's frames are kept, once sent, until the daemon says its event log
    # holds them (`committed`): what a daemon that comes back after a crash
    # would need again. Past this many bytes (about) kept, senders wait as
    # for a full queue.
    UNACKED_LIMIT = 64 << 20

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbox = sock.makefile("rb")
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.queue: list[dict[str, Any]] = []
        self.queued = 0  # about the bytes in self.queue
        self.blocked = 0  # senders waiting for room
        self.idle = False  # the writer waits for frames
        self.broken = False
        self.sending = False
        self.unacked: dict[int, collections.deque] = {}  # turn -> (seq, body, size), oldest first
        self.unacked_bytes = 0
        self.unacked_frames = 0
        threading.Thread(target=self._send_loop, name="hermes-bridge-frames", daemon=True).start()

    # Positional-only: an ask frame has a field named "kind".
    def send(self, frame_kind: str, /, **fields: Any) -> bool:
        body = {"t": frame_kind, **fields}
        with self.lock:
            return self._queue(body, frames.size_hint(body))

    def send_for(self, turn: "Turn", frame_kind: str, /, **fields: Any) -> bool:
        """A turn's frame, numbered in the order it is queued."""
        with self.lock:
            if turn.closed:
                return False  # a thread the turn left behind
            turn.seq += 1
            body = {"t": frame_kind, "turn": turn.turn_id, "seq": turn.seq, **fields}
            return self._keep(turn.turn_id, turn.seq, body, frames.size_hint(body))

    def send_text(self, turn: "Turn", text: str) -> bool:
        """send_for(turn, "text", text=text), without the keyword dance: the
        one frame a streaming agent sends thousands of times a second."""
        with self.lock:
            if turn.closed:
                return False
            turn.seq += 1
            return self._keep(turn.turn_id, turn.seq, {"t": "text", "turn": turn.turn_id, "seq": turn.seq, "text": text},
                              len(text) + frames.FRAME_OVERHEAD)

    def _keep(self, turn_id: int, seq: int, body: dict[str, Any], size: int) -> bool:
        """Queues a turn's frame and keeps it until it is committed."""
        if not self._queue(body, size):
            return False
        kept = self.unacked.get(turn_id)
        if kept is None:
            kept = self.unacked[turn_id] = collections.deque()
        kept.append((seq, body, size))
        self.unacked_bytes += size
        self.unacked_frames += 1
        return True

    def committed(self, turn_id: int, seq: int) -> None:
        """The daemon's event log holds `turn_id`'s frames up to `seq`."""
        with self.lock:
            kept = self.unacked.get(turn_id)
            if kept is None:
                return
            while kept and kept[0][0] <= seq:
                _, _, size = kept.popleft()
                self.unacked_bytes -= size
                self.unacked_frames -= 1
            if not kept:
                del self.unacked[turn_id]
            if self.blocked:
                self.cond.notify_all()  # room for senders waiting on the bound

    def send_now(self, frame_kind: str, /, **fields: Any) -> bool:
        """A frame that does not wait for room (a heartbeat's reply: tiny, and
        it must not look like a hung worker while the daemon reads slowly)."""
        body = {"t": frame_kind, **fields}
        with self.lock:
            return self._queue(body, frames.FRAME_OVERHEAD, wait=False)

    def _queue(self, body: dict[str, Any], size: int, wait: bool = True) -> bool:
        if size > frames.MAX_FRAME_BYTES:  # the sender's error, as when it encoded its own frames
            raise frames.FrameError(f"frame of about {size} bytes is over the limit")
        while wait and (self.queued > self.QUEUE_LIMIT or self.unacked_bytes > self.UNACKED_LIMIT) and not self.broken:
            self.blocked += 1
            self.cond.wait(1.0)
            self.blocked -= 1
        if self.broken:
            return False
        self.queue.append(body)
        self.queued += size
        if self.idle:
            self.idle = False
            self.cond.notify_all()
        return True

    def _send_loop(self) -> None:
        while True:
            with self.cond:
                while not self.queue:
                    self.idle = True
                    self.cond.wait()
                bodies, self.queue, self.queued = self.queue, [], 0
                self.sending = True
                if self.blocked:
                    self.cond.notify_all()  # room for blocked senders
            try:
                # Encoded here, on the one writer thread, not on the agents'.
                self.sock.sendall(frames.encode_all(bodies))
            except (OSError, frames.FrameError):
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
