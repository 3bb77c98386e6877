"""An agent worker process: hermes-agent on its own interpreter, for one
profile, driven by the daemon over the socket it inherited (fd 3).

The daemon starts it as `<agent's python> [-P] -B -c <bootstrap> <dir> ...
--fd 3 --agent-root R --hermes-home H --profile P` with the bridge's modules
in <dir> (bridge/worker/module_dir.cpp: the bootstrap checks <dir> and puts
it first on sys.path, the current directory nowhere). It calls the same adapter functions the embedded host calls
(bridge_adapter.create_session, run_turn, ...); the sink it hands to a turn
turns every callback into a frame (worker_frames, FRAMES.md), and a
question blocks the agent's thread until the daemon's answer arrives.
This process owns its os.environ: only its profile's environment is in it.
When the daemon goes away (the socket ends) it interrupts its turns and exits.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import importlib
import itertools
import json
import os
import signal
import socket
import sys
import threading
import traceback
from typing import Any, Callable

import bridge_adapter as adapter
import worker_frames as frames
from worker_connection import Connection
from bridge_json import clean_text
from bridge_profiles import environment

# How long a tool's start waits for queued frames to be sent (the daemon
# reads them at once unless its log is backlogged, when it stops reading).
FLUSH_WAIT_S = 1.0

# How long a turn may take to stop once the daemon is gone, before the
# process exits anyway (its threads are the agent's and may not listen).
EXIT_GRACE_S = 3.0
# A question's own deadline is the daemon's business; past it plus this the
# asking thread stops waiting for an answer that will not come.
ASK_GRACE_S = 30.0
# What a question gets when the daemon cannot answer (fail closed).
# Threads for requests, per kind of request: a flood of them queues instead
# of starting a thread each, and slow ones (building an agent, a named
# operation) never hold up quick ones (an interrupt). Turns have a thread
# each: the daemon runs at most one per session.
QUICK_THREADS = 8
SLOW_THREADS = 8
DEFAULT_ANSWERS = {"approval": "deny", "compression": '{"failure": "bridge compression timed out"}',
                   "clarify": ""}


class Turn:
    """The sink of one running turn: what embedded_agent.cpp's Sink is in
    the daemon (text, event, ask_*, gateway_notify), as frames."""

    def __init__(self, worker: "Worker", turn_id: int) -> None:
        self.worker = worker
        self.turn_id = turn_id
        self.seq = 0
        self.closed = False

    def text(self, text: Any) -> None:
        if text is None:
            return
        self.worker.conn.send_text(self, clean_text(text if isinstance(text, str) else str(text)))

    def event(self, json_text: str) -> None:
        self.worker.conn.send_for(self, "event", json=json_text)

    def flush(self) -> None:
        """What this worker has queued reaches the daemon before a tool runs."""
        self.worker.conn.drain(FLUSH_WAIT_S)

    def gateway_notify(self, request_json: str, timeout_s: float) -> None:
        self.worker.conn.send_for(self, "notify", request=request_json, timeout_s=float(timeout_s))

    def ask_approval(self, request_json: str, timeout_s: float) -> str:
        return self._ask("approval", request_json, timeout_s)

    def ask_compression(self, request_json: str, timeout_s: float) -> str:
        return self._ask("compression", request_json, timeout_s)

    def ask_clarify(self, request_json: str, timeout_s: float) -> str:
        return self._ask("clarify", request_json, timeout_s)

    def _ask(self, kind: str, request_json: str, timeout_s: float) -> str:
        ask_id, waiter = self.worker.open_question()
        try:
            if not self.worker.conn.send_for(self, "ask", ask=ask_id, kind=kind, request=request_json,
                                             timeout_s=float(timeout_s)):
                return DEFAULT_ANSWERS[kind]
            if not waiter["done"].wait(float(timeout_s) + ASK_GRACE_S):
                return DEFAULT_ANSWERS[kind]
            answer = waiter["answer"]
            return DEFAULT_ANSWERS[kind] if answer is None else answer
        finally:
            self.worker.close_question(ask_id)


class Worker:
    def __init__(self, conn: Connection, configure_error: str) -> None:
        self.conn = conn
        self.configure_error = configure_error
        self.lock = threading.Lock()
        self.sessions: dict[int, Any] = {}  # handle -> bridge_session.Session
        self.turns: dict[int, tuple[Turn, Any]] = {}  # turn id -> (sink, session)
        self.questions: dict[int, dict[str, Any]] = {}
        self.ask_ids = itertools.count(1)
        self.pools = {
            "quick": concurrent.futures.ThreadPoolExecutor(QUICK_THREADS, thread_name_prefix="hermes-bridge-quick"),
            "slow": concurrent.futures.ThreadPoolExecutor(SLOW_THREADS, thread_name_prefix="hermes-bridge-slow"),
        }

    # -- questions ---------------------------------------------------------
    def open_question(self) -> tuple[int, dict[str, Any]]:
        waiter = {"done": threading.Event(), "answer": None}
        with self.lock:
            ask_id = next(self.ask_ids)
            self.questions[ask_id] = waiter
        return ask_id, waiter

    def close_question(self, ask_id: int) -> None:
        with self.lock:
            self.questions.pop(ask_id, None)

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
            session, config = adapter.create_session(f["session_id"], f["profile"], f["model"], f["provider"])
            with self.lock:
                self.sessions[f["handle"]] = session
            return config
        self.in_thread(lambda: self.reply(f["req"], build))

    def start_turn(self, f: dict[str, Any]) -> None:
        def run() -> None:
            sink = Turn(self, f["turn"])
            parts: list = ["error", None, None, None, 0]
            try:
                session = self.session(f["handle"])
                with self.lock:
                    self.turns[f["turn"]] = (sink, session)
                parts = adapter.run_turn(session, sink, f["request"])
            except BaseException as exc:  # run_turn catches the agent's; this is the adapter's
                text = clean_text(str(exc))
                parts = ["error", json.dumps({"error": text, "traceback": traceback.format_exc()}), text, None, 0]
            finally:
                with self.lock:
                    self.turns.pop(f["turn"], None)
            with self.conn.lock:  # the end, and nothing of this turn after it
                self.conn.send_for(sink, "turn_end", status=parts[0], result=parts[1], error=parts[2],
                                   history=parts[3], message_count=int(parts[4] or 0))
                sink.closed = True
        threading.Thread(target=run, name=f"hermes-bridge-turn-{f['turn']}", daemon=True).start()

    def resolve_gateway(self, f: dict[str, Any]) -> None:
        # The daemon logs the verdict when it reads this reply; the agent
        # thread it wakes writes its next frame only after the reply, because
        # the reply is written under the same lock the call runs under.
        def run() -> None:
            with self.conn.lock:
                self.reply(f["req"], lambda: str(adapter.resolve_gateway(
                    f["session_id"], f["choice"], f.get("request_id", ""), f.get("token", ""))))
        self.in_thread(run, "quick")

    def release(self, f: dict[str, Any]) -> None:
        with self.lock:
            session = self.sessions.pop(f["handle"], None)
        if session is not None:
            self.in_thread(lambda: adapter.release(session), "quick")

    def named_call(self, f: dict[str, Any], name: str, first: Callable[[], Any]) -> None:
        def run() -> str:
            fn = getattr(adapter, name, None)
            if not callable(fn):
                raise RuntimeError(f"{f['op']} is not available: this hermes-bridge's adapter has no {name}")
            return str(fn(first(), f["op"], f["args"]))
        self.in_thread(lambda: self.reply(f["req"], run))

    def dispatch(self, f: dict[str, Any]) -> bool:
        """Handles one frame from the daemon; False once told to stop."""
        kind = f["t"]
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
        elif kind == "shutdown":
            return False
        else:
            raise frames.FrameError(f"unknown frame kind: {kind[:40]}")
        return True

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


# What the first AIAgent of a process and its first turn import beyond
# run_agent (hermes-agent 0.18; a module an agent lacks is skipped): its
# model client and the client's resources (loaded on first use), the
# provider resolution, its init helpers, session store and turn loop.
# Measured on the real agent, after `import run_agent` alone a fresh
# process's first session took 5 s and its first turn 4 s more (later ones
# 0.2 s and 0.15 s): a spare warmed without them makes its first session wait.
FIRST_AGENT_MODULES = (
    "openai", "httpx", "openai.resources", "openai.lib.streaming.chat", "hermes_cli.runtime_provider",
    "agent.agent_init", "hermes_state", "agent.transports.chat_completions", "agent.conversation_loop",
    "agent.system_prompt", "agent.chat_completion_helpers", "agent.turn_context", "agent.turn_finalizer",
    "agent.conversation_compression", "agent.prompt_caching", "agent.display", "agent.title_generator",
    "hermes_cli.skin_engine", "hermes_cli.moa_config")


def pay_first_agent_costs(profile_toolsets: list[str] | None) -> None:
    """What a process's first agent pays once, beyond imports (hermes-agent
    0.18.2, measured in one process with every module above imported):
    its construction's toolset availability checks (each check's first run
    imports, builds SSL contexts, may try a lazy dependency: 0.99 s for a
    first construction, 0.24 s for later ones, 0.37 s after this) and its
    first turn's environment probe (python3 and pip versions, by
    subprocess, cached for the process: 0.62 s of a 0.78 s first turn). Both
    are done here for the toolsets a session of this profile gets, so that
    a spare's first session costs about what later ones do. The same calls
    the first session would make, only earlier: nothing is written, no model
    is called."""
    with contextlib.suppress(Exception):
        import model_tools
        model_tools.get_tool_definitions(enabled_toolsets=profile_toolsets, quiet_mode=True)
    with contextlib.suppress(Exception):
        from tools.env_probe import get_environment_probe_line
        get_environment_probe_line()


def preimport(profile: str, conn: Connection) -> None:
    """Imports run_agent and FIRST_AGENT_MODULES ahead of the first
    create_session (seconds for the real agent), inside the profile's
    environment as create_session would: its module-level code reads
    HERMES_HOME and loads that home's .env; then pays what a first agent
    pays once (pay_first_agent_costs). Then says `warm`: the daemon places new sessions
    only on warm workers."""
    try:
        from bridge_profiles import GATE, PATHS, load_config, toolsets_for
        with GATE.hold(profile or "default"):
            root = PATHS["agent_root"]
            if root is not None and str(root) not in sys.path:
                sys.path.insert(0, str(root))
            import run_agent  # noqa: F401
            for name in FIRST_AGENT_MODULES:
                try:
                    importlib.import_module(name)
                except Exception:
                    pass  # not this agent's, or broken: its first session says so if it matters
            pay_first_agent_costs(toolsets_for(load_config()))
    except BaseException:
        pass  # create_session imports it again and reports what fails
    conn.send("warm")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hermes-bridge-worker")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--agent-root", default="")
    parser.add_argument("--hermes-home", default="")
    parser.add_argument("--profile", default="default")
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
    conn.send("ready", pid=os.getpid(), python=env["python"], python_version=env["python_version"],
              agent_root=str(root), agent_version=env["agent_version"], error=clean_text(error))
    worker = Worker(conn, error)
    if error:
        conn.send("warm")  # nothing to import: every create_session fails at once with the error
    else:
        threading.Thread(target=preimport, args=(args.profile, conn), daemon=True).start()
    why = "hermes-bridge went away"
    try:
        while True:
            frame = frames.read(conn.inbox)
            if frame is None:
                break
            if not worker.dispatch(frame):
                why = "hermes-bridge is shutting down"
                break
    except (ConnectionResetError, BrokenPipeError):
        pass  # the daemon went away with frames of ours unread: gone all the same, as at EOF
    except (frames.FrameError, KeyError, TypeError, OSError) as exc:
        print(f"hermes-bridge worker: cannot read the daemon's frames: {exc}", file=sys.stderr)
    worker.wind_down(why)
    conn.drain(1.0)  # the turns' last frames, if anyone still reads them
    sys.stderr.flush()
    os._exit(0)  # the agent's own threads may never end


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
