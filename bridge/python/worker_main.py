"""An agent worker process: hermes-agent on its own interpreter, for one
profile, driven by the daemon over the socket it inherited (fd 3).

The daemon starts it as `<agent's python> [-P] -B -c <bootstrap> <dir> ...
--fd 3 --agent-root R --hermes-home H --profile P` with the bridge's modules
in <dir> (bridge/worker/module_dir.cpp: the bootstrap checks <dir> and puts
it first on sys.path, the current directory nowhere). It calls the same adapter functions the embedded host calls
(bridge_adapter.create_session, run_turn, ...); the sink it hands to a turn
(worker_turn.Turn) turns every callback into a frame (worker_frames,
FRAMES.md), and a question blocks the agent's thread until the daemon's
answer arrives.
This process owns its os.environ: only its profile's environment is in it.
When the daemon goes away (the socket ends) it interrupts its turns and exits;
or, with `--rendezvous DIR` and an `--orphan-timeout`, its turns go on while it
waits that long for a daemon to attach to its own socket (worker_rendezvous).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any, Callable

import bridge_adapter as adapter
import worker_frames as frames
import worker_threads as threads
from worker_connection import Connection
from worker_turn import Turn
from worker_rendezvous import describe, open_rendezvous
from worker_warmup import freeze_imports, preimport, tune_malloc
from bridge_json import clean_text
from bridge_profiles import environment

# How long a turn may take to stop once the daemon is gone, before the
# process exits anyway (its threads are the agent's and may not listen).
EXIT_GRACE_S = 3.0
# Threads for requests, per kind of request: a flood of them queues instead
# of starting a thread each, and slow ones (building an agent, a named
# operation) never hold up quick ones (an interrupt). Turns have a thread
# each: the daemon runs at most one per session.
QUICK_THREADS = 8
SLOW_THREADS = 8


class Worker:
    # Lock order: the connection's lock, then this one; never the other way.
    def __init__(self, conn: Connection, configure_error: str, identity: dict[str, Any]) -> None:
        self.conn = conn
        self.configure_error = configure_error
        self.identity = identity  # what `ready` said, said again to a daemon that attaches
        self.warm = False  # `warm` sent, or due while no daemon was there to get it
        self.highest_req = 0  # a daemon that attaches numbers its calls above it
        self.lock = threading.Lock()
        self.sessions: dict[int, Any] = {}  # handle -> bridge_session.Session
        self.building = 0  # create_session calls under way
        self.session_ids: dict[int, str] = {}  # handle -> the session_id its create_session named
        self.turns: dict[int, tuple[Turn, Any]] = {}  # turn id -> (sink, session)
        self.questions: dict[int, dict[str, Any]] = {}
        self.ask_ids = itertools.count(1)
        self.pools = {
            "quick": threads.pool(QUICK_THREADS, "hb-quick"),
            "slow": threads.pool(SLOW_THREADS, "hb-slow"),
        }

    # -- questions ---------------------------------------------------------
    def open_question(self, turn_id: int, kind: str, request_json: str,
                      timeout_s: float) -> tuple[int, dict[str, Any]]:
        waiter = {"done": threading.Event(), "answer": None, "turn": turn_id, "kind": kind,
                  "request": request_json, "timeout_s": timeout_s, "asked_at": time.monotonic(), "seq": None}
        with self.lock:
            ask_id = next(self.ask_ids)
            self.questions[ask_id] = waiter
        return ask_id, waiter

    def close_question(self, ask_id: int) -> None:
        with self.lock:
            self.questions.pop(ask_id, None)

    def close_gateway_questions(self, turn_id: int = 0, token: str = "") -> None:
        """Gateway approvals nobody will answer through this worker any more:
        answered (by `token`) or their turn over (`turn_id`)."""
        with self.lock:
            for ask_id, w in list(self.questions.items()):
                if w["kind"] == "gateway" and (w["turn"] == turn_id or (token and w.get("token") == token)):
                    del self.questions[ask_id]

    def answer(self, frame: dict[str, Any]) -> None:
        with self.lock:
            waiter = self.questions.get(frame["ask"])
        if waiter is not None:
            waiter["answer"] = str(frame.get("text", ""))
            waiter["done"].set()

    # -- requests ------------------------------------------------------------
    def session(self, handle: int) -> Any:
        with self.lock:
            found = self.sessions.get(handle)
        if found is None:
            raise KeyError(f"no agent {handle} in this worker")
        return found

    def reply(self, req: int, fn: Callable[[], str]) -> None:
        """Runs fn and answers `req` with its value or its exception."""
        try:
            value = fn()
            self.conn.send("reply", req=req, ok=True, value=value, error_type="", error="")
        except BaseException as exc:  # every Python error becomes the caller's error, never a dead worker
            self.conn.send("reply", req=req, ok=False, value="", error_type=type(exc).__name__,
                           error=clean_text(str(exc)))

    def in_thread(self, fn: Callable[[], None], pool: str = "slow") -> None:
        # Off the reading thread: nothing it runs holds up the reading of
        # answers the turns wait for, or of heartbeats.
        self.pools[pool].submit(fn)

    def create(self, f: dict[str, Any]) -> None:
        def build() -> str:
            if self.configure_error:
                raise RuntimeError(self.configure_error)
            with self.lock:
                self.building += 1  # from here until it is in `sessions`: see freeze_imports
            built = None
            try:
                built = adapter.create_session(f["session_id"], f["profile"], f["model"], f["provider"])
            finally:
                with self.lock:
                    self.building -= 1
                    if built is not None:
                        self.sessions[f["handle"]] = built[0]
                        self.session_ids[f["handle"]] = f["session_id"]
            return built[1]
        self.in_thread(lambda: self.reply(f["req"], build))

    def start_turn(self, f: dict[str, Any]) -> None:
        # Known to the connection from now on, so that a daemon attaching
        # before the thread gets going is told of the turn.
        sink = Turn(self, f["turn"], f["handle"], str(f.get("run", "")))
        self.conn.track(sink)
        if f.get("clear_interrupt"):
            # Here, not in the turn's thread: an interrupt the daemon sends
            # after this frame is read after it, and must not be cleared.
            with contextlib.suppress(Exception):  # a missing agent is the turn's error to report
                adapter.prepare_turn(self.session(f["handle"]))

        def run() -> None:
            parts: list = ["error", None, None, None, 0]
            try:
                session = self.session(f["handle"])
                with self.lock:
                    self.turns[f["turn"]] = (sink, session)
                if f.get("steer"):
                    with contextlib.suppress(Exception):  # an agent without steer() said so when it was sent
                        adapter.steer(session, f["steer"])
                parts = adapter.run_turn(session, sink, f["request"], pieces=True)
            except BaseException as exc:  # run_turn catches the agent's; this is the adapter's
                text = clean_text(str(exc))
                parts = ["error", json.dumps({"error": text, "traceback": traceback.format_exc()}), text, None, 0]
            finally:
                with self.lock:
                    self.turns.pop(f["turn"], None)
                self.close_gateway_questions(turn_id=f["turn"])
            # The result and the history go raw (worker_frames.Raw), as the
            # bytes run_turn made (text only for an adapter error).
            parts[1], parts[3] = frames.raw(parts[1]), frames.raw(parts[3])
            self.conn.end_turn(sink, status=parts[0], result=parts[1], error=parts[2], history=parts[3],
                               message_count=int(parts[4] or 0))
        threads.start(run, "hb-turn")

    def resolve_gateway(self, f: dict[str, Any]) -> None:
        # The daemon logs the verdict when it reads this reply; the agent
        # thread it wakes writes its next frame only after the reply, because
        # the call runs under the connection's gate (Connection.gate).
        def run() -> None:
            with self.conn.gate():
                self.reply(f["req"], lambda: str(adapter.resolve_gateway(
                    f["session_id"], f["choice"], f.get("request_id", ""), f.get("token", ""))))
            self.close_gateway_questions(token=f.get("token", ""))
        self.in_thread(run, "quick")

    def release(self, f: dict[str, Any]) -> None:
        with self.lock:
            session = self.sessions.pop(f["handle"], None)
            self.session_ids.pop(f["handle"], None)
        if session is not None:
            # Now, before the frames after this one: a session created next
            # under the same id must not find this one's workspace.
            adapter.forget_workspace(session)
            self.in_thread(lambda: adapter.release(session), "quick")

    def named_call(self, f: dict[str, Any], name: str, first: Callable[[], Any]) -> None:
        def run() -> str:
            fn = getattr(adapter, name, None)
            if not callable(fn):
                raise RuntimeError(f"{f['op']} is not available: this hermes-bridge's adapter has no {name}")
            return str(fn(first(), f["op"], f["args"]))
        self.in_thread(lambda: self.reply(f["req"], run))

    def drop_turn(self, turn_id: int) -> None:
        """An attached daemon will not follow this turn: it stops, and its
        questions get their fail-closed defaults, as nobody will answer them."""
        if not self.conn.drop(turn_id):
            return
        with self.lock:
            live = self.turns.get(turn_id)
            waiting = [w for w in self.questions.values() if w["turn"] == turn_id]
        for waiter in waiting:
            waiter["done"].set()
        if live is not None:
            session = live[1]
            self.in_thread(lambda: adapter.interrupt(session, json.dumps("hermes-bridge dropped this turn")),
                           "quick")

    def dispatch(self, f: dict[str, Any]) -> bool:
        """Handles one frame from the daemon; False once told to stop."""
        kind = f["t"]
        req = f.get("req")
        if type(req) is int and req > self.highest_req:
            self.highest_req = req
        if kind == "heartbeat":
            self.conn.send_now("heartbeat_reply", beat=int(f["beat"]), unacknowledged=self.conn.unacked_frames)
        elif kind == "answer":
            self.answer(f)
        elif kind == "create_session":
            self.create(f)
        elif kind == "start_turn":
            self.start_turn(f)
        elif kind == "prepare_turn":
            self.in_thread(lambda: self.reply(f["req"], lambda: adapter.prepare_turn(self.session(f["handle"])) or ""),
                           "quick")
        elif kind == "interrupt_turn":
            self.in_thread(lambda: self.reply(
                f["req"], lambda: adapter.interrupt(self.session(f["handle"]), f["message"]) or ""), "quick")
        elif kind == "steer_turn":
            self.in_thread(lambda: self.reply(
                f["req"], lambda: "1" if adapter.steer(self.session(f["handle"]), f["text"]) else ""), "quick")
        elif kind == "release_session":
            self.release(f)
        elif kind == "resolve_gateway":
            self.resolve_gateway(f)
        elif kind == "session_call":
            self.named_call(f, "session_call", lambda: self.session(f["handle"]))
        elif kind == "profile_call":
            self.named_call(f, "profile_call", lambda: f["profile"])
        elif kind == "committed":
            self.conn.committed(int(f["turn"]), int(f["seq"]))
        elif kind == "resume":
            self.conn.resume(int(f["turn"]), int(f["after"]))
        elif kind == "drop_turn":
            self.drop_turn(int(f["turn"]))
        elif kind == "shutdown":
            return False
        else:
            raise frames.FrameError(f"unknown frame kind: {kind[:40]}")
        return True

    def finish_unseen(self) -> int | None:
        """A daemon that cannot drive this worker's version: its live turns go
        on to their end unseen, their questions answered with the fail-closed
        defaults at once (nobody can answer them), and then it exits."""
        live = self.conn.finish_unseen()
        if live is not None:
            with self.lock:
                waiting = list(self.questions.values())
            for waiter in waiting:
                waiter["done"].set()
        return live

    def wind_down(self, why: str) -> None:
        """The daemon is gone or asked to stop: interrupt every turn, let
        blocked questions fail closed, give the turns a moment, exit."""
        with self.lock:
            live = list(self.turns.values())
            waiting = list(self.questions.values())
        for _, session in live:
            try:
                adapter.interrupt(session, json.dumps(why))
            except BaseException:
                pass
        for waiter in waiting:
            waiter["done"].set()
        deadline = threading.Event()
        for _ in range(int(EXIT_GRACE_S / 0.05)):
            with self.lock:
                if not self.turns:
                    break
            deadline.wait(0.05)


def say_warm(worker: Worker) -> None:
    with worker.conn.lock:  # a daemon attaching meanwhile gets `warm` in `attached` or after it, never both
        worker.warm = True
        worker.conn.send("warm")


def serve(worker: Worker, inbox: Any) -> bool:
    """Handles the daemon's frames until it says `shutdown` (True) or goes
    away (False)."""
    try:
        while True:
            frame = frames.read(inbox)
            if frame is None:
                return False
            if not worker.dispatch(frame):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return False  # the daemon went away with frames of ours unread: gone all the same, as at EOF


def main(argv: list[str]) -> int:
    tune_malloc()
    parser = argparse.ArgumentParser(prog="hermes-bridge-worker")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--agent-root", default="")
    parser.add_argument("--hermes-home", default="")
    parser.add_argument("--profile", default="default")
    parser.add_argument("--rendezvous", default="")
    parser.add_argument("--orphan-timeout", type=float, default=0.0)
    parser.add_argument("--warm-nice", type=int, default=0)  # a spare's: its imports yield to running turns
    parser.add_argument("--daemon-key", default="")  # the starting daemon's, in the record: whose worker this is
    args = parser.parse_args(argv)
    # Ctrl-C is for the daemon, which stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=args.fd)
    conn = Connection(sock)
    error, root = "", args.agent_root
    try:
        root = adapter.configure(args.agent_root, args.hermes_home)["agent_root"]
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
    env = environment(root)
    identity = {"pid": os.getpid(), "version": frames.FRAMES_VERSION, "python": env["python"],
                "python_version": env["python_version"], "agent_root": str(root),
                "agent_version": env["agent_version"], "error": clean_text(error)}
    worker = Worker(conn, error, identity)
    rendezvous = open_rendezvous(args.rendezvous, args.profile, args.daemon_key) if args.rendezvous else None
    orphan_timeout = max(args.orphan_timeout, 0.0) if rendezvous is not None else 0.0
    why = "hermes-bridge went away"
    try:
        if rendezvous is not None:
            conn.outlives_daemon = orphan_timeout > 0
            rendezvous.remove_on_sigterm()
            rendezvous.serve(conn, lambda: describe(worker), worker.finish_unseen)
        conn.send("ready", **identity)
        if error:
            say_warm(worker)  # nothing to import: every create_session fails at once with the error
        else:
            def warmed() -> None:
                freeze_imports(worker)
                say_warm(worker)
            threads.start(preimport, "hb-preimport", args.profile, warmed, args.warm_nice)
        inbox = conn.inbox
        while inbox is not None:
            if serve(worker, inbox):
                why = "hermes-bridge is shutting down"
                break
            if orphan_timeout <= 0 or rendezvous is None:
                break
            conn.orphan()
            rendezvous.move_output()
            inbox = conn.wait_for_daemon(orphan_timeout)
            if conn.draining:
                why = "a hermes-bridge of another frame version drained this worker"
    except (frames.FrameError, KeyError, TypeError, ValueError, OSError) as exc:
        with contextlib.suppress(OSError):  # its stderr may be a closed pipe: nothing may keep it from exiting
            print(f"hermes-bridge worker: cannot read the daemon's frames: {exc}", file=sys.stderr)
    finally:
        if rendezvous is not None:
            rendezvous.remove()  # first: no daemon tries to attach to a worker on its way out
    worker.wind_down(why)
    conn.drain(1.0)  # the turns' last frames, if anyone still reads them
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe must not keep the process from exiting
            stream.flush()
    os._exit(0)  # the agent's own threads may never end


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
