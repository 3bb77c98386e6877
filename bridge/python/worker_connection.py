"""The worker's connection to the daemon: fd 3, or the socket of a daemon that
re-attached (worker_rendezvous.py); frames queued in order and sent by a
writer thread of its own (worker_main.py uses it; the frame format is
worker_frames.py's). Stdlib only."""

from __future__ import annotations

import collections
import contextlib
import queue
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, Iterator

import worker_frames as frames
import worker_threads as threads
from bridge_json import clean_text
from worker_handover import DaemonHandover, wait_in_poll

if TYPE_CHECKING:
    from worker_turn import Turn


_ONLY_TEXTS = {str}


def _slow_way_flag(name: str) -> property:
    """A flag of Connection's that, while set, sends every turn's frames the
    slow way (under the lock): the agents' hot path reads one attribute,
    `slow`, for all of them."""
    private = "_" + name

    def get(self: "Connection") -> bool:
        return getattr(self, private)

    def put(self: "Connection", value: bool) -> None:
        setattr(self, private, value)
        self.slow = self._full or self._gated or self._broken or self._draining

    return property(get, put)


class Connection(DaemonHandover):
    """The socket to the daemon, and the frames on their way to it.

    A streaming turn's `text` and `event` frames take no lock: the agent's
    thread appends them to its turn's `pending` list (a text as itself,
    anything else as (kind, payload, size); a list's append is one call that
    never waits for another thread) and, the first time since the writer
    last looked, puts the turn on `incoming` and wakes the writer if it
    sleeps. The writer thread takes everything that piled up, numbers each
    turn's frames (`seq`) in the order they were put, keeps them until the
    daemon says its log holds them, and sends them encoded in one go
    (worker_frames.encode_items: a turn's texts that follow each other as
    one `texts` frame, the turn frames of a round as one `batch`), in one
    system call unless a big raw field (a long run's result) goes as its
    own. Frames of different turns keep no order among themselves; nothing
    reads them in any. A lock on the hot path made 64 turn threads queue
    behind whichever of them the GIL had just paused while it held the
    lock: 25 us of CPU per delta instead of 1 to 2; a tuple and a deque
    entry per delta cost 0.6 us where a list append costs 0.15.

    Everything else (questions, a turn's end, replies, heartbeats, attaching
    and acknowledgements) goes under `lock`, after numbering what is on
    `incoming`, so a frame sent under the lock comes after every frame put
    before it and `seq` is exact while the lock is held. The lock is
    re-entrant so that resolve_gateway can hold it (`gate()`) across the
    call that wakes an agent thread.

    A worker that may outlive its daemon (`outlives_daemon`) has no socket
    while it is an orphan (`sock` is None): its turns' frames are only kept,
    everything else is dropped, until a daemon attaches. A turn an attached
    daemon has not yet said it follows is `held`: kept, not sent, until it
    is resumed (worker_handover.py: orphan, adopt, resume, drop)."""

    # Queued bytes (about: characters) past which senders wait: back-pressure
    # reaches the agent's threads when the daemon reads slowly, as it would
    # with a full socket.
    QUEUE_LIMIT = 8 << 20
    # A turn's frames are kept, once sent, until the daemon says its event log
    # holds them (`committed`): what a daemon that comes back after a crash
    # would need again. Past this many bytes (about) kept, senders wait as
    # for a full queue.
    UNACKED_LIMIT = 64 << 20
    # A turn's frames put but not yet taken by the writer (it is busy
    # sending), past which that turn's senders go the slow way (and wait
    # there once the queue is full); a frame longer than PENDING_TEXT goes
    # that way at once. At most about 1 MB waits per turn.
    PENDING_FRAMES = 8192
    PENDING_TEXT = 128

    def __init__(self, sock: socket.socket) -> None:
        self.sock: socket.socket | None = wait_in_poll(sock)
        self.inbox: BinaryIO | None = sock.makefile("rb")
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self._full = self._gated = self._broken = self._draining = False
        self.slow = False  # any of those four: turns' frames go under the lock
        # Turns with frames on their `pending` list, put by agent threads
        # (maybe twice); taken only under the lock.
        self.incoming: collections.deque = collections.deque()
        self.wakeups: queue.SimpleQueue = queue.SimpleQueue()  # what the idle writer waits on
        self.queue: list[tuple] = []  # numbered frames to send: (turn id or 0, seq, kind, payload)
        self.queued = 0  # about the bytes in self.queue
        self.blocked = 0  # senders waiting for room
        self.writer_idle = False  # the writer waits on `wakeups`: the next frame wakes it
        self.outlives_daemon = False  # a lost socket makes an orphan, not a dead connection
        self.draining = False  # told by a daemon of another version: no daemon will come; frames go nowhere
        self.sending: socket.socket | None = None  # the socket the writer is writing to
        self.retired: list[socket.socket] = []  # lost sockets to close once the writer is off them
        self.unacked: dict[int, collections.deque] = {}  # turn -> [last seq, frame, size], oldest first
        self.unacked_bytes = 0
        self.unacked_frames = 0
        self.turns: dict[int, "Turn"] = {}  # every turn live or with kept frames: what an attach is told
        threads.start(self._send_loop, "hb-frames")

    # Set under the lock; each sends turns' frames the slow way while set.
    full = _slow_way_flag("full")  # the queue or the kept frames are over their bound: senders wait
    gated = _slow_way_flag("gated")  # gate(): a turn's next frame waits for the lock
    broken = _slow_way_flag("broken")
    draining = _slow_way_flag("draining")

    # -- a turn's stream: no lock ------------------------------------------------
    def text_sender(self, turn: "Turn") -> Callable[[Any], None]:
        """The turn's stream callback, which the agent calls for every delta
        (thousands of times a second per turn): one Python call that makes
        the delta valid text and appends it to the turn's `pending`. None
        (the agent's end of a segment) is no text."""
        pending = turn.pending
        put = pending.append
        overhead = frames.FRAME_OVERHEAD
        most, longest = self.PENDING_FRAMES, self.PENDING_TEXT

        def text(delta: Any) -> None:
            if delta is None:
                return
            if delta.__class__ is not str:
                delta = str(delta)
            if not delta.isascii():
                delta = clean_text(delta)
            if self.slow or len(delta) > longest or len(pending) >= most:
                self._put(turn, "texts", [delta], len(delta) + overhead)
                return
            put(delta)
            if not turn.queued:
                self._announce(turn)

        return text

    def send_event(self, turn: "Turn", json_text: str) -> bool:
        return self._put(turn, "event", {"json": json_text}, len(json_text) + frames.FRAME_OVERHEAD)

    def _put(self, turn: "Turn", kind: str, payload: Any, size: int) -> bool:
        if turn.closed or self.broken or self.draining:
            return False  # a thread the turn left behind, or nobody will ever read it
        if self.slow or size > self.PENDING_TEXT + frames.FRAME_OVERHEAD or len(turn.pending) >= self.PENDING_FRAMES:
            with self.lock:
                return self._send_locked(turn, kind, payload, size)
        turn.pending.append((kind, payload, size))
        if not turn.queued:
            self._announce(turn)
        return True

    def _announce(self, turn: "Turn") -> None:
        """The turn has frames pending: the next look at `incoming` finds it.
        After the append to `pending`; _take_incoming clears `queued` before
        it looks, so a frame is either taken or announced again."""
        if turn.closed:  # a thread the turn left behind: nothing of it is sent, nobody woken
            turn.pending.clear()
            return
        turn.queued = True
        self.incoming.append(turn)
        self._wake()  # after the append: a writer going idle looks at `incoming` after saying so

    # -- everything else: under the lock ------------------------------------------
    # Positional-only: an ask frame has a field named "kind".
    def send(self, frame_kind: str, /, **fields: Any) -> bool:
        with self.lock:
            self._take_incoming()
            return self._queue((0, 0, frame_kind, fields), frames.size_hint(fields) + len(frame_kind))

    def track(self, turn: "Turn") -> None:
        with self.lock:
            self.turns[turn.turn_id] = turn

    def send_for(self, turn: "Turn", frame_kind: str, /, **fields: Any) -> bool:
        """A turn's frame, numbered now: `turn.seq` is its seq while the
        caller holds the lock."""
        with self.lock:
            return self._send_locked(turn, frame_kind, fields, frames.size_hint(fields) + len(frame_kind))

    def end_turn(self, turn: "Turn", **fields: Any) -> None:
        """The turn's `turn_end`, and nothing of the turn after it."""
        with self.lock:
            self.send_for(turn, "turn_end", **fields)
            turn.closed = True
            if turn.turn_id not in self.unacked:
                self.turns.pop(turn.turn_id, None)
            if self.draining:
                self.cond.notify_all()  # wait_for_daemon counts the live turns

    @contextlib.contextmanager
    def gate(self) -> Iterator[None]:
        """Holds the lock, and makes every turn's next frame wait for it: a
        frame an agent thread writes after a call made under the gate comes
        after what the caller sends under it (Worker.resolve_gateway)."""
        with self.lock:
            self.gated = True
            try:
                yield
            finally:
                self.gated = False

    def _send_locked(self, turn: "Turn", kind: str, payload: Any, size: int) -> bool:
        self._take_incoming()  # what the turn put before comes first,
        self._take(turn)  # even while another of its threads is between marking it queued and queuing it
        if not self._room_for(turn, size):
            return False
        self._number(turn, kind, payload, size)
        return True

    def _room_for(self, turn: "Turn", size: int) -> bool:
        if size > frames.MAX_FRAME_BYTES:  # the sender's error, as when it encoded its own frames
            raise frames.FrameError(f"frame of about {size} bytes is over the limit")
        while self.full and not (self.broken or turn.closed or self.draining):
            self.blocked += 1
            self.cond.wait(1.0)
            self.blocked -= 1
            self._take_incoming()
        return not (self.broken or turn.closed or self.draining)

    def _take_incoming(self) -> None:
        """Numbers (and keeps, and queues) what agent threads put, each turn's
        in the order they put it. Under the lock: nothing else takes from
        `incoming` or `pending`. A turn's texts that follow each other are
        numbered as one run (a turn thread streams for a whole GIL slice at
        a time)."""
        incoming = self.incoming
        took = bool(incoming)
        while incoming:
            turn = incoming.popleft()
            turn.queued = False  # before looking: whatever is put from now on announces the turn again
            self._take(turn)
        if took and self.blocked:
            self.cond.notify_all()  # a turn over its backlog may go on

    def _take(self, turn: "Turn") -> None:
        """Numbers what the turn's threads put so far. Under the lock."""
        pending = turn.pending
        count = len(pending)
        if not count:
            return  # announced twice, or taken by a sender of its own
        items = pending[:count]
        del pending[:count]  # (its producers only ever append)
        if turn.closed or self.broken or self.draining:
            return
        if set(map(type, items)) == _ONLY_TEXTS:
            self._number_texts(turn, items)
            return
        texts: list[str] = []  # a run of texts between other frames
        for item in items:
            if item.__class__ is str:
                texts.append(item)
                continue
            if texts:
                self._number_texts(turn, texts)
                texts = []
            self._number(turn, *item)
        if texts:
            self._number_texts(turn, texts)

    def _number_texts(self, turn: "Turn", texts: list[str]) -> None:
        self._number(turn, "texts", texts, sum(map(len, texts)) + frames.FRAME_OVERHEAD * len(texts))

    def _number(self, turn: "Turn", kind: str, payload: Any, size: int) -> None:
        """Gives a turn's frame its seq (a `texts` frame, whose payload is its
        list of texts, one seq per text), queues it unless nobody may have it
        yet, and keeps it until it is committed. Texts join the turn's
        `texts` frame that is last in the queue, when it is: one frame, one
        kept entry, for a run of deltas."""
        kept = self.unacked.get(turn.turn_id)
        if kept is None:
            kept = self.unacked[turn.turn_id] = collections.deque()
        count = len(payload) if kind == "texts" else 1
        first = turn.seq + 1
        turn.seq += count
        self.unacked_bytes += size
        self.unacked_frames += count
        if kind == "texts" and kept:
            last = kept[-1]
            if self.queue and self.queue[-1] is last[1] and last[1][2] == "texts":
                last[1][3].extend(payload)  # (queued and kept: the same list)
                last[0] = turn.seq
                last[2] += size
                self.queued += size
                self._update_full()
                return
        frame = (turn.turn_id, first, kind, payload)
        if not turn.held and self.sock is not None:
            self.queue.append(frame)
            self.queued += size
            self._wake()
        kept.append([turn.seq, frame, size])  # [its last seq, the frame, its size]
        self._update_full()

    def _update_full(self) -> None:
        full = self.queued > self.QUEUE_LIMIT or self.unacked_bytes > self.UNACKED_LIMIT
        if full != self._full:
            self.full = full

    def _wake(self) -> None:
        """The writer, if it waits for frames, looks again. (Two threads may
        both wake it: it then looks once more for nothing.)"""
        if self.writer_idle:
            self.writer_idle = False
            self.wakeups.put(None)

    def committed(self, turn_id: int, seq: int) -> None:
        """The daemon's event log holds `turn_id`'s frames up to `seq`."""
        with self.lock:
            self._let_go(turn_id, seq)

    def _let_go(self, turn_id: int, seq: float) -> None:
        kept = self.unacked.get(turn_id)
        if kept is None:
            return
        while kept and kept[0][0] <= seq:  # a `texts` entry goes once all of it is in the log
            last, frame, size = kept.popleft()
            self.unacked_bytes -= size
            self.unacked_frames -= last - frame[1] + 1
        if not kept:
            del self.unacked[turn_id]
            turn = self.turns.get(turn_id)
            if turn is not None and turn.closed:
                del self.turns[turn_id]
        self._update_full()
        if self.blocked:
            self.cond.notify_all()  # room for senders waiting on the bound

    def send_now(self, frame_kind: str, /, **fields: Any) -> bool:
        """A frame that does not wait for room (a heartbeat's reply: tiny, and
        it must not look like a hung worker while the daemon reads slowly)."""
        with self.lock:
            return self._queue((0, 0, frame_kind, fields), frames.FRAME_OVERHEAD, wait=False)

    def _queue(self, frame: tuple, size: int, wait: bool = True) -> bool:
        if size > frames.MAX_FRAME_BYTES:
            raise frames.FrameError(f"frame of about {size} bytes is over the limit")
        while wait and self.full and not (self.broken or self.sock is None):
            self.blocked += 1
            self.cond.wait(1.0)
            self.blocked -= 1
            self._take_incoming()
        if self.broken or self.sock is None:
            return False  # an orphan's reply or warm: its asker is gone
        self.queue.append(frame)
        self.queued += size
        self._update_full()
        self._wake()
        return True

    # -- the writer --------------------------------------------------------------
    def _send_loop(self) -> None:
        while True:
            with self.cond:
                self.writer_idle = False
                self._take_incoming()
                if not self.queue or self.sock is None:
                    sock = None
                    self.writer_idle = True
                    self.cond.notify_all()  # drain() may be waiting for this
                else:
                    sock = self.sock
                    bodies, self.queue, self.queued = self.queue, [], 0
                    self._update_full()
                    self.sending = sock
                    if self.blocked:
                        self.cond.notify_all()  # room for blocked senders
            if sock is None:
                # Said idle first, then looked: a frame appended after the look
                # sees writer_idle and wakes it; one appended before is seen.
                if not self.incoming:
                    self.wakeups.get()
                continue
            try:
                # Encoded here, on the one writer thread, not on the agents'.
                for chunk in frames.encode_items(bodies):
                    sock.sendall(chunk)
            except (OSError, frames.FrameError):
                with self.cond:
                    if not self.outlives_daemon:
                        self.broken = True
                        self.queue.clear()
                        self.cond.notify_all()
                        return
                # The reading thread sees the socket end and makes the worker an
                # orphan; the turns' frames in what was lost are still kept.
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            finally:
                with self.cond:
                    self.sending = None
                    if sock in self.retired:
                        self.retired.remove(sock)
                        sock.close()
                    self.cond.notify_all()

    def drain(self, timeout_s: float) -> None:
        """Waits (a bounded time) until everything queued has been sent."""
        deadline = time.monotonic() + timeout_s
        with self.cond:
            while ((self.queue or self.sending is not None or self.incoming)
                   and self.sock is not None and not self.broken):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(left)
