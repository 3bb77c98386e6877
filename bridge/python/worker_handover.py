"""What a worker that may outlive its daemon does with its connection to it
(worker_connection.Connection inherits this; worker_main.py and
worker_rendezvous.py call it): when the daemon's socket goes it becomes an
orphan, keeping its turns' frames and dropping everything else; a daemon
that attaches to its rendezvous socket adopts it, is told of every turn,
and then resumes or drops each one; when no daemon will come it winds down.
Every method runs under the connection's lock (the public ones take it): the
state is Connection's.
Stdlib only."""

from __future__ import annotations

import collections
import contextlib
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, BinaryIO, Callable

import worker_frames as frames

if TYPE_CHECKING:
    from worker_turn import Turn


def wait_in_poll(sock: socket.socket) -> socket.socket:
    """A thread blocked in recv() on a unix socket is woken whenever the peer
    reads what this side sent (the kernel's write-space wake-up reaches every
    sleeper on the socket): several times a turn, for nothing. One waiting in
    poll() for input is not. With a timeout CPython polls before each call.
    This one (24 days; poll() takes at most 2^31 ms) outlasts any silence of
    an attached daemon, whose heartbeat comes every few seconds."""
    sock.settimeout(24 * 24 * 3600.0)
    return sock


class DaemonHandover:
    """The part of Connection that hands it from one daemon to the next. It
    calls Connection's own _take_incoming, _let_go, _queue, _update_full and
    _wake."""

    # Connection's, which these methods read and change under `lock`.
    lock: threading.RLock
    cond: threading.Condition
    sock: socket.socket | None
    inbox: BinaryIO | None
    queue: list[tuple]
    queued: int
    sending: socket.socket | None
    retired: list[socket.socket]
    unacked: dict[int, collections.deque]
    turns: dict[int, "Turn"]
    broken: bool
    draining: bool

    def resume(self, turn_id: int, after: int) -> None:
        """An attached daemon follows a held turn: what it lacks is queued now,
        under the lock, so the turn's next frames can only come after it."""
        with self.lock:
            self._take_incoming()
            turn = self.turns.get(turn_id)
            if turn is None or not turn.held:
                return  # not one it was told of, or resumed already: sending again would repeat frames
            self._let_go(turn_id, after)
            turn.held = False
            for _, frame, size in self.unacked.get(turn_id, ()):
                tid, first, kind, payload = frame
                if first <= after:  # a `texts` the log holds the start of: only the rest
                    frame = (tid, after + 1, kind, payload[after + 1 - first:])
                self._queue(frame, size, wait=False)  # the reading thread never waits for room

    def drop(self, turn_id: int) -> bool:
        """An attached daemon will not follow this turn: nothing more of it is
        kept or sent. False if there was no such turn."""
        with self.lock:
            self._take_incoming()
            turn = self.turns.pop(turn_id, None)
            if turn is None:
                return False
            turn.closed, turn.held = True, False
            self._let_go(turn_id, float("inf"))
            return True

    def orphan(self) -> None:
        """The daemon went away without `shutdown`: no socket until one attaches.
        What was queued for it is dropped; its turns' frames stay kept."""
        with self.cond:
            lost, lost_inbox, self.sock, self.inbox = self.sock, self.inbox, None, None
            self.queue.clear()
            self.queued = 0
            self._update_full()
            if lost_inbox is not None:
                lost_inbox.close()  # the reading thread, which calls this, is done with it
            if lost is not None:
                self._retire(lost)
            self.cond.notify_all()  # senders waiting for room: a reply is dropped now

    def _retire(self, lost: socket.socket) -> None:
        # Shut down at once (a writer blocked on it wakes); closed only once no
        # thread can be inside a call on it, lest its descriptor be reused by
        # an attaching daemon's socket while that call still names it.
        with contextlib.suppress(OSError):
            lost.shutdown(socket.SHUT_RDWR)
        if self.sending is lost:
            self.retired.append(lost)
        else:
            lost.close()

    def adopt(self, sock: socket.socket, describe: Callable[[], dict[str, Any]]) -> bool:
        """Makes an attaching daemon's socket the connection, its first frame
        `describe()`'s, if the worker has no daemon and is not winding down:
        one check and one change under the lock, so of two racing daemons
        exactly one gets in. Every turn it is told of is held until it says
        `resume` or `drop_turn`."""
        with self.cond:
            if self.sock is not None or self.broken or self.draining:
                return False
            self._take_incoming()
            first = describe()
            for turn in self.turns.values():
                turn.held = True
            self.sock, self.inbox = wait_in_poll(sock), sock.makefile("rb")
            self.queue = [(0, 0, first.pop("t"), first)]
            self.queued = frames.size_hint(first)
            self._update_full()
            self._wake()
            self.cond.notify_all()
            return True

    def finish_unseen(self) -> int | None:
        """No daemon will attach (one that cannot speak this version said so):
        nothing more is kept or sent, and the worker exits once its live
        turns end. How many are live; None if a daemon is attached."""
        with self.cond:
            if self.sock is not None or self.broken:
                return None
            self.draining = True
            for turn_id in list(self.unacked):
                self._let_go(turn_id, float("inf"))
            self.cond.notify_all()  # senders waiting for room go on, sending nothing
            return self._live_turns()

    def _live_turns(self) -> int:
        return sum(not turn.closed for turn in self.turns.values())

    def wait_for_daemon(self, timeout_s: float) -> BinaryIO | None:
        """The attached daemon's stream, once one attaches within `timeout_s`;
        else None, and no daemon can attach any more (and senders give up).
        Drained, None as soon as no turn is live."""
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while self.sock is None:
                left = deadline - time.monotonic()
                if left <= 0 or (self.draining and not self._live_turns()):
                    self.broken = True
                    self.cond.notify_all()
                    return None
                self.cond.wait(left)
            return self.inbox
