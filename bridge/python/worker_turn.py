"""The sink of one turn in a worker process: the agent's callbacks as
frames on the worker's connection (worker_connection), its questions asked
of the daemon and waited for on the agent's own thread."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worker_main import Worker

# How long a tool's start waits for queued frames to be sent (the daemon
# reads them at once unless its log is backlogged, when it stops reading).
FLUSH_WAIT_S = 1.0
# A question's own deadline is the daemon's business; past it plus this the
# asking thread stops waiting for an answer that will not come.
ASK_GRACE_S = 30.0
# What a question gets when the daemon cannot answer (fail closed).
DEFAULT_ANSWERS = {"approval": "deny", "compression": '{"failure": "bridge compression timed out"}',
                   "clarify": ""}


class Turn:
    """The sink of one running turn: what embedded_agent.cpp's Sink is in
    the daemon (text, event, ask_*, gateway_notify), as frames."""

    def __init__(self, worker: "Worker", turn_id: int, handle: int, run: str) -> None:
        self.worker = worker
        self.turn_id = turn_id
        self.handle = handle
        self.run = run  # the daemon's name for it: how a daemon that attaches later knows it
        self.seq = 0  # the last seq written; the connection's lock guards it
        self.closed = False  # turn_end written (or the turn dropped): nothing more of it
        self.held = False  # an attached daemon has not yet said it follows the turn
        # Its frames put by its threads, not yet taken by the connection's
        # writer (Connection.text_sender), and whether the turn is on the
        # connection's `incoming` for them.
        self.pending: list = []
        self.queued = False
        # The agent's stream callback (Connection.text_sender): one delta, on
        # the hot path.
        self.text = worker.conn.text_sender(self)

    def event(self, json_text: str) -> None:
        self.worker.conn.send_event(self, json_text)

    def flush(self) -> None:
        """What this worker has queued reaches the daemon before a tool runs."""
        self.worker.conn.drain(FLUSH_WAIT_S)

    def gateway_notify(self, request_json: str, timeout_s: float) -> None:
        """The agent waits by itself; the request is kept as a question until
        the daemon answers it or the turn ends, so that a daemon attaching
        meanwhile opens it again (worker_rendezvous.describe)."""
        ask_id, waiter = self.worker.open_question(self.turn_id, "gateway", request_json, float(timeout_s))
        try:
            waiter["token"] = str(json.loads(request_json).get("bridge_token") or "")
        except (ValueError, AttributeError):
            waiter["token"] = ""
        conn = self.worker.conn
        with conn.lock:
            if conn.send_for(self, "notify", request=request_json, timeout_s=float(timeout_s)):
                waiter["seq"] = self.seq
            else:
                self.worker.close_question(ask_id)

    def ask_approval(self, request_json: str, timeout_s: float) -> str:
        return self._ask("approval", request_json, timeout_s)

    def ask_compression(self, request_json: str, timeout_s: float) -> str:
        return self._ask("compression", request_json, timeout_s)

    def ask_clarify(self, request_json: str, timeout_s: float) -> str:
        return self._ask("clarify", request_json, timeout_s)

    def _ask(self, kind: str, request_json: str, timeout_s: float) -> str:
        ask_id, waiter = self.worker.open_question(self.turn_id, kind, request_json, float(timeout_s))
        conn = self.worker.conn
        try:
            with conn.lock:  # its seq, exactly: a daemon that attaches is told of it by its seq
                if not conn.send_for(self, "ask", ask=ask_id, kind=kind, request=request_json,
                                     timeout_s=float(timeout_s)):
                    return DEFAULT_ANSWERS[kind]
                waiter["seq"] = self.seq
            if not waiter["done"].wait(float(timeout_s) + ASK_GRACE_S):
                return DEFAULT_ANSWERS[kind]
            answer = waiter["answer"]
            return DEFAULT_ANSWERS[kind] if answer is None else answer
        finally:
            self.worker.close_question(ask_id)
