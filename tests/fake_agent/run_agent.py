"""Fake hermes-agent `run_agent`: AIAgent driven by scripts in the user message.

No network, no model. See README.md for the script language. Threading,
callback shapes, interrupt/steer semantics and result keys follow the real
agent (docs: /work/shared/reference/hermes-agent.md).
"""

import contextlib
import functools
import inspect
import os
import threading
import time
import uuid
from datetime import datetime

from agent.prompt_builder import PLATFORM_HINTS  # noqa: F401  (re-exported: same dict object)
from fake_support import eventlog
from fake_support.turn import Turn

# The real agent's stamp on a message dict it has written to state.db (its
# name too: the bridge looks for it).
_DB_PERSISTED_MARKER = "_db_persisted"

# The real agent takes seconds to import (its model clients, tools and their
# dependencies): a worker that has not finished importing it is not ready.
if os.environ.get("FAKE_AGENT_IMPORT_DELAY_MS"):
    time.sleep(int(os.environ["FAKE_AGENT_IMPORT_DELAY_MS"]) / 1000.0)
# For tests of who imports at what priority: the importing thread's
# niceness, in a file of this process's own.
if os.environ.get("FAKE_AGENT_IMPORT_NOTE"):
    with open(f"{os.environ['FAKE_AGENT_IMPORT_NOTE']}.{os.getpid()}", "w") as _note:
        _note.write(str(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))


def _record_passed_kwargs(init):
    """Remember which kwargs the caller actually passed, for the event log.

    functools.wraps sets __wrapped__, so inspect.signature(AIAgent) still shows
    the explicit parameter list; unknown kwargs still raise TypeError from the
    wrapped __init__ itself.
    """
    names = list(inspect.signature(init).parameters)[1:]

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        self._passed_kwargs = sorted(set(names[:len(args)]) | set(kwargs))
        return init(self, *args, **kwargs)

    return wrapper


class AIAgent:
    @_record_passed_kwargs
    def __init__(self, base_url=None, api_key=None, provider=None, api_mode=None,
                 acp_command=None, acp_args=None, model="", max_iterations=90,
                 enabled_toolsets=None, disabled_toolsets=None, quiet_mode=False,
                 verbose_logging=False, ephemeral_system_prompt=None, session_id=None,
                 tool_progress_callback=None, tool_start_callback=None,
                 tool_complete_callback=None, thinking_callback=None, reasoning_callback=None,
                 clarify_callback=None, step_callback=None, stream_delta_callback=None,
                 status_callback=None, reasoning_config=None, service_tier=None, platform=None,
                 session_db=None, credential_pool=None):
        # Deliberately no **kwargs: an unknown kwarg must fail like version skew does.
        delay_ms = os.environ.get("FAKE_AGENT_INIT_DELAY_MS")
        if delay_ms:
            time.sleep(int(delay_ms) / 1000.0)
        if model == "fail-init":
            eventlog.log("init_failed", kwargs=self._passed_kwargs, model=model, pid=os.getpid())
            raise RuntimeError("fake init failure for model fail-init")

        self.base_url, self.api_key, self.api_mode = base_url, api_key, api_mode
        self.provider, self.model, self.platform = provider, model, platform
        self.max_iterations = max_iterations
        self.enabled_toolsets, self.disabled_toolsets = enabled_toolsets, disabled_toolsets
        self.quiet_mode, self.ephemeral_system_prompt = quiet_mode, ephemeral_system_prompt
        self.reasoning_config, self.service_tier = reasoning_config, service_tier
        self.credential_pool = credential_pool
        self.session_id = session_id or (
            datetime.now().strftime("%Y%m%d_%H%M%S_") + uuid.uuid4().hex[:6])
        self.session_db = session_db
        self._session_db = session_db  # the real agent's private name for it
        self.compression_enabled = True
        self._last_flushed_db_idx = 0

        # Public attributes so bridges may also (re)assign them after construction.
        self.tool_progress_callback = tool_progress_callback
        self.tool_start_callback = tool_start_callback
        self.tool_complete_callback = tool_complete_callback
        self.thinking_callback = thinking_callback
        self.reasoning_callback = reasoning_callback
        self.clarify_callback = clarify_callback
        self.step_callback = step_callback
        self.stream_delta_callback = stream_delta_callback
        self.status_callback = status_callback

        self._lock = threading.Lock()
        self._interrupt_requested = False
        self._interrupt_message = None
        self._pending_steer = None
        self._clear_called = False  # for the log: did the bridge clear before this run?
        self._call_seq = 0
        self._cached_system_prompt = "You are a fake Hermes agent." + (
            "\n" + ephemeral_system_prompt if ephemeral_system_prompt else "")

        # Tool schemas as the real agent holds them (context estimates read
        # them), from where its construction gets them: model_tools, whose
        # first call in a process pays for the availability checks.
        import model_tools
        self.tools = model_tools.get_tool_definitions(enabled_toolsets=enabled_toolsets,
                                                      disabled_toolsets=disabled_toolsets, quiet_mode=quiet_mode)
        eventlog.log("init", kwargs=self._passed_kwargs, model=model, provider=provider,
                     session_id=self.session_id, HERMES_HOME=os.environ.get("HERMES_HOME"),
                     pid=os.getpid())

    # -- interrupt / steer (any thread) ------------------------------------

    def interrupt(self, message=None) -> None:
        with self._lock:
            self._interrupt_requested = True
            self._interrupt_message = message

    def clear_interrupt(self) -> None:
        with self._lock:
            self._interrupt_requested = False
            self._interrupt_message = None
            self._pending_steer = None  # the real one drops a pending steer too
            self._clear_called = True

    @property
    def is_interrupted(self) -> bool:
        return self._interrupt_requested

    def steer(self, text) -> bool:
        if not text or not str(text).strip():
            return False
        with self._lock:
            self._pending_steer = (self._pending_steer + "\n" + text) if self._pending_steer else text
        return True

    def _drain_steer(self):
        with self._lock:
            steer, self._pending_steer = self._pending_steer, None
        return steer

    def switch_model(self, new_model, new_provider, api_key="", base_url="", api_mode=""):
        """Hot switch (the real signature); "fail-switch" fails like a bad provider."""
        if new_model == "fail-switch":
            raise RuntimeError("fake switch failure for model fail-switch")
        self.model, self.provider = new_model, new_provider
        self.api_key, self.base_url, self.api_mode = api_key, base_url, api_mode
        eventlog.log("switch_model", model=new_model, provider=new_provider)

    # -- compression -------------------------------------------------------

    def _compress_context(self, messages, system_message, *, approx_tokens=None,
                          task_id="default", focus_topic=None, force=False):
        """Keep the last two messages. Bridges replace this via an instance attribute."""
        return (messages[-2:] or messages), system_message

    # -- the turn ----------------------------------------------------------

    def run_conversation(self, user_message, system_message=None, conversation_history=None,
                         task_id=None, stream_callback=None, persist_user_message=None) -> dict:
        with self._lock:
            cleared, self._clear_called = self._clear_called, False
        eventlog.log("run", thread=threading.current_thread().name, interrupt_cleared=cleared,
                     system_message=system_message,
                     history_len=len(conversation_history or []),
                     HERMES_EXEC_ASK=os.environ.get("HERMES_EXEC_ASK"),
                     HERMES_HOME=os.environ.get("HERMES_HOME"))
        lease = self._acquire_turn_lease(conversation_history)
        if isinstance(lease, dict):
            return lease  # the wait for another process's lease ended the turn
        from tools.env_probe import get_environment_probe_line
        get_environment_probe_line()  # the real one's system prompt holds it: built on a process's first turn
        if lease is not None:
            conversation_history = lease[1]
        turn = Turn(self, user_message, system_message, conversation_history, stream_callback,
                    persist_user_message, task_id)
        try:
            interrupted = turn.run()
        finally:
            self._flush_to_db(turn)  # every exit path persists, exceptions included
            if lease is not None:
                with contextlib.suppress(Exception):
                    self.session_db.release_session_turn_lease(self.session_id, lease[0])
        result = turn.result(interrupted)
        # Like the real finalizer: hand back an undrained steer, then clear the
        # interrupt state this turn consumed (internally, not via clear_interrupt).
        with self._lock:
            steer, self._pending_steer = self._pending_steer, None
            message = self._interrupt_message
            self._interrupt_requested = False
            self._interrupt_message = None
        if steer:
            result["pending_steer"] = steer
        if interrupted:
            result["interrupt_message"] = message
        eventlog.log("run_end", thread=threading.current_thread().name, interrupted=interrupted,
                     api_calls=turn.api_calls)
        return result

    def _acquire_turn_lease(self, history):
        """hermes-agent 0.20's cross-process turn lease: a session that
        state.db already holds is served by one process at a time. Returns
        None (no lease needed), (holder, history) once held (history reloaded
        from state.db after a wait, as the real one does), or the turn's
        result when the wait ended it (interrupt, or FAKE_AGENT_LEASE_WAIT_S,
        default 1800, passed)."""
        db = self.session_db
        if db is None or not self.session_id or not callable(getattr(db, "acquire_session_turn_lease", None)):
            return None
        if db.get_session(self.session_id) is None:
            return None  # a new session has nothing to race over
        holder = f"pid={os.getpid()}:turn={uuid.uuid4().hex[:12]}:platform={self.platform or 'unknown'}"
        waited = False

        def on_wait(elapsed):
            nonlocal waited
            waited = True
            if elapsed < 1.0:
                self._emit("status_callback", "lifecycle", "\u23f3 Another Hermes process is using this session; "
                           "waiting for it to finish before starting your turn...")
            else:
                self._emit("status_callback", "lifecycle", "\u23f3 Still waiting for the other Hermes process on "
                           f"this session ({int(elapsed)}s)...")

        if db.acquire_session_turn_lease(self.session_id, holder, wait_seconds=float(
                os.environ.get("FAKE_AGENT_LEASE_WAIT_S", "1800")), poll_interval_seconds=0.2,
                on_wait=on_wait, wait_notice_interval_seconds=float(
                    os.environ.get("FAKE_AGENT_LEASE_NOTICE_S", "15")),
                should_abort=lambda: self._interrupt_requested):
            if waited:
                self._emit("status_callback", "lifecycle", "Session is free; loading the latest transcript...")
                history = db.get_messages_as_conversation(self.session_id)
            return holder, history
        eventlog.log("lease_wait_end", interrupted=self._interrupt_requested)
        if self._interrupt_requested:
            result = {"final_response": "Stopped waiting for another Hermes process on this session. "
                                        "Your message was not processed.",
                      "messages": list(history or []), "api_calls": 0, "completed": False,
                      "interrupted": True}
            if self._interrupt_message:
                result["interrupt_message"] = self._interrupt_message
            self.clear_interrupt()
            return result
        message = ("\u23f3 Another Hermes process kept this session busy too long. Your message was not "
                   "processed - wait for the other process to finish, then send it again.")
        self._emit("status_callback", "warn", message)
        return {"final_response": message, "messages": list(history or []), "api_calls": 0,
                "completed": False, "failed": True, "error": f"session_turn_lease_timeout:{self.session_id}"}

    def _flush_to_db(self, turn) -> None:
        db = self.session_db
        if db is None:
            return
        try:
            db.create_session(self.session_id, source=self.platform or "cli", model=self.model)
            # The real agent's rule (0.18+): every message dict of this turn
            # is written once, then stamped "_db_persisted" (the stamp stays
            # in the returned messages, so history passed back is not written
            # again); the caller's history is never written.
            for msg in turn.messages[turn.flush_base:]:
                if not isinstance(msg, dict) or msg.get(_DB_PERSISTED_MARKER):
                    continue
                db.append_message(self.session_id, msg.get("role"), content=msg.get("content"),
                                  tool_calls=msg.get("tool_calls"),
                                  tool_call_id=msg.get("tool_call_id"),
                                  tool_name=msg.get("tool_name"))
                msg[_DB_PERSISTED_MARKER] = True
            self._last_flushed_db_idx = len(turn.messages)
        except Exception:
            pass  # the real agent logs persistence failures and carries on

    # -- callback plumbing ---------------------------------------------------

    def _emit(self, name, *args, **kwargs):
        """Call the named callback attribute; exceptions are swallowed like the real agent."""
        return self._invoke(name, getattr(self, name, None), *args, **kwargs)

    def _invoke(self, name, cb, *args, **kwargs):
        if cb is None:
            return None
        eventlog.log_callback(name)
        try:
            return cb(*args, **kwargs)
        except Exception:
            return None

    def _deliver_delta(self, delta, stream_callback) -> None:
        """On the stream worker: per-turn stream_callback first, then stream_delta_callback."""
        self._invoke("stream_callback", stream_callback, delta)
        self._emit("stream_delta_callback", delta)

    def _next_call_id(self) -> str:
        with self._lock:
            self._call_seq += 1
            return f"call_{self._call_seq}"

    def close(self) -> None:
        pass  # nothing to release: no clients, no subprocesses
