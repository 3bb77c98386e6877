"""The Python half of hermes-bridge's embedded sessions.

The C++ daemon owns sockets, concurrency and the event log. This module owns
what has to touch hermes-agent's Python objects: finding the agent, applying a
profile's environment, building an AIAgent, binding its callbacks on the turn
thread and running one turn. Everything it reports goes through a `sink`
object implemented in C++ (module `hermes_bridge_native`), as JSON text.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import sys
import threading
import traceback
from typing import Any

from bridge_json import clean_text, dumps, dumps_pieces, plain, to_json  # clean_text: C++ uses it for lone surrogates
from bridge_ops import context_info, profile_call, session_call  # noqa: F401
from bridge_workspace import bound_workspace, forget_workspace, needs_terminal_cwd
from bridge_agent_calls import DBS, accepted_kwargs
from bridge_profiles import (GATE, PATHS, configure, gateway_timeout_s, load_config, max_iterations_for,
                             model_from, platform_name, reasoning_config_for, section, service_tier_for,
                             suppress_platform_hints, toolsets_for)
from bridge_session import GATEWAY_REQUESTS, Session


def create_session(session_id: str, profile: str, model: str, provider: str) -> tuple[Session, str]:
    """Builds the AIAgent; returns the session and its config as JSON."""
    profile = profile or "default"
    with GATE.hold(profile):
        if PATHS["agent_root"] is not None and str(PATHS["agent_root"]) not in sys.path:
            sys.path.insert(0, str(PATHS["agent_root"]))
        suppress_platform_hints()
        from run_agent import AIAgent
        from hermes_cli.runtime_provider import resolve_runtime_provider

        cfg = load_config()
        model = model.strip() or model_from(cfg)
        requested = provider.strip() or os.environ.get("HERMES_BRIDGE_PROVIDER", "").strip() or None
        runtime = resolve_runtime_provider(requested=requested, target_model=model or None)
        system_prompt = str(section(cfg, "agent").get("system_prompt", "") or "").strip() or None
        session = Session(session_id, profile)
        session_db = DBS.for_profile(profile)
        kwargs = dict(
            model=model, max_iterations=max_iterations_for(cfg),
            provider=runtime.get("provider"), base_url=runtime.get("base_url"),
            api_key=runtime.get("api_key"), api_mode=runtime.get("api_mode"),
            acp_command=runtime.get("command"), acp_args=runtime.get("args"),
            credential_pool=runtime.get("credential_pool"),
            quiet_mode=True, verbose_logging=False,
            reasoning_config=reasoning_config_for(cfg), service_tier=service_tier_for(cfg),
            enabled_toolsets=toolsets_for(cfg), platform=platform_name(),
            session_id=session_id, session_db=session_db,
            ephemeral_system_prompt=system_prompt,
            status_callback=session.on_status,
            thinking_callback=session.on_thinking,
            clarify_callback=session.on_clarify,
            reasoning_callback=session.text_event("reasoning.delta"),
            tool_progress_callback=session.on_tool_progress,
            tool_start_callback=session.on_tool_start,
            tool_complete_callback=session.on_tool_complete,
            step_callback=session.on_step,
            stream_delta_callback=session.on_stream_delta,
        )
        agent = AIAgent(**accepted_kwargs(AIAgent.__init__, kwargs))
        agent.compression_enabled = False
        if callable(getattr(agent, "_compress_context", None)):
            agent._compress_context = session.on_compress
        session.agent = agent
        config = {
            "requested_session_id": session_id, "profile": profile, "model": model,
            "provider": runtime.get("provider"), "base_url": runtime.get("base_url"),
            "api_mode": runtime.get("api_mode"), "platform": platform_name(),
            "resumed": False, "resumed_message_count": 0, "db_error": DBS.error,
        }
        return session, to_json(config)


def _state_db_count(session: Session) -> int | None:
    """How many rows the session has in state.db, to tell whether a turn
    added any: SessionDB.message_count (a COUNT(*), hermes-agent 0.18+) where
    there is one, else the active messages (each decoded: O(history))."""
    db = DBS.for_profile(session.profile)
    if db is None:
        return None
    try:
        count = getattr(db, "message_count", None)
        return int(count(session.session_id)) if callable(count) else len(db.get_messages(session.session_id) or [])
    except Exception:
        return None


# hermes-agent 0.18+ stamps each message dict it writes to state.db with
# this key (run_agent._DB_PERSISTED_MARKER); the stamp stays in the turn's
# messages.
PERSISTED_STAMP = "_db_persisted"
STAMPED = object()  # a turn's "before": read its stamps, not the rows' count


def _rows_before(session: Session) -> Any:
    """What tells, after the turn, whether the agent wrote it: STAMPED for an
    agent that stamps what it writes (no COUNT(*), which grows with the
    session, before and after every turn), else the rows' count."""
    module = sys.modules.get(type(session.agent).__module__)
    if getattr(module, "_DB_PERSISTED_MARKER", None) == PERSISTED_STAMP:
        return STAMPED
    return _state_db_count(session)


def _agent_wrote(session: Session, before: Any, result: dict[str, Any]) -> bool:
    """True also when it cannot be told (no state.db): nothing is written then.
    A stamping agent wrote the turn when its last message is stamped: the
    turn's own last word, wherever it sits (a compression during the turn
    may leave the list shorter than the history it was given)."""
    if before is STAMPED:
        messages = result.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        return not isinstance(last, dict) or bool(last.get(PERSISTED_STAMP))
    after = _state_db_count(session)
    return before is None or after is None or after > before


def _mirror_turn(session: Session, before: Any, user_text: str,
                 result: dict[str, Any], history_len: int, source: Any = None) -> None:
    """Writes the turn to hermes' state.db when the agent did not."""
    if _agent_wrote(session, before, result):
        return
    db = DBS.for_profile(session.profile)
    messages = result.get("messages")
    if db is None or not isinstance(messages, list):
        return
    with contextlib.suppress(Exception):
        db.create_session(session_id=session.session_id, source=str(source or "") or platform_name(),
                          model=getattr(session.agent, "model", None))
        if user_text.strip():
            db.append_message(session_id=session.session_id, role="user", content=user_text)
        for msg in messages[history_len + 1:]:
            if isinstance(msg, dict) and msg.get("role") in ("assistant", "tool"):
                db.append_message(session_id=session.session_id, role=msg["role"],
                                  content=msg.get("content"), tool_name=msg.get("tool_name"),
                                  tool_calls=msg.get("tool_calls") if isinstance(msg.get("tool_calls"), list) else None,
                                  tool_call_id=msg.get("tool_call_id"))


def _user_text(message: Any) -> str:
    if isinstance(message, str):
        return message
    if isinstance(message, dict):
        return str(message.get("content", message))
    if isinstance(message, list):
        return " ".join(str(b.get("text", "")) for b in message if isinstance(b, dict) and b.get("type") == "text")
    return "" if message is None else str(message)


_UNCHANGED = object()


def _override_reasoning(agent: Any, effort: Any) -> Any:
    """A turn's reasoning_effort, parsed as hermes parses its config; an
    effort it does not recognise leaves the agent's own. Returns what to
    put back after the turn."""
    if not effort:
        return _UNCHANGED
    try:
        from hermes_constants import parse_reasoning_effort
        parsed = parse_reasoning_effort(str(effort).strip())
    except Exception:
        return _UNCHANGED
    if parsed is None:
        return _UNCHANGED
    saved = getattr(agent, "reasoning_config", None)
    agent.reasoning_config = parsed
    return saved


def _announce_context(session: Session, sink: Any, req: dict[str, Any], instructions: Any) -> None:
    """bridge.context.ready: what the agent's fixed context costs, first in
    the run (Studio's UI sizes its context meter with it)."""
    agent = session.agent
    event = {"event": "bridge.context.ready", "session_id": session.session_id,
             "profile": str(req.get("profile") or "") or session.profile,
             "model": getattr(agent, "model", None), "provider": getattr(agent, "provider", None)}
    event.update(context_info(agent, [], instructions))
    sink.event(to_json(event))


def _with_note(session: Session, message: Any) -> Any:
    """A model switch is told to the next turn, in front of the user's message."""
    note, session.pending_note = session.pending_note, ""
    if not note:
        return message
    if isinstance(message, str):
        return f"{note}\n\n{message}"
    if isinstance(message, list):
        return [{"type": "text", "text": note}, *message]
    return message


def _title_text(message: Any) -> str:
    if isinstance(message, list):
        parts = [str(b.get("text") or "") if b.get("type") == "text" else str(b.get("name") or "")
                 for b in message if isinstance(b, dict)]
        text = " ".join(p for p in parts if p)
    else:
        text = "" if message is None else str(message)
    return (text + "\n\n[Title language: use the same language as the user's message. "
            "Do not translate the title to English unless the user's message is English.]")


def _title_wait_s() -> float:
    try:
        return max(0.0, float(os.environ.get("HERMES_BRIDGE_TITLE_WAIT_MS", "") or 250) / 1000.0)
    except ValueError:
        return 0.25


def _title_after(session: Session, sink: Any, message: Any, result: dict[str, Any]) -> None:
    """hermes titles a session on a thread of its own after its first
    exchanges; a title that comes while the turn's sink is open becomes a
    session.title.updated event (one that comes later is in state.db, which
    get_session_title reads)."""
    final = str(result.get("final_response") or result.get("response") or "").strip()
    db = DBS.for_profile(session.profile)
    if session.titled or db is None or not final or result.get("failed") or result.get("partial"):
        return
    try:
        from agent.title_generator import maybe_auto_title
    except Exception:
        return
    agent = session.agent

    def titled(title: Any) -> None:
        cleaned = str(title or "").strip()
        if cleaned:
            session.titled = True
            sink.event(to_json({"event": "session.title.updated", "session_id": session.session_id,
                                "title": cleaned}))

    with contextlib.suppress(Exception):
        maybe_auto_title(db, session.session_id, _title_text(message), final,
                         result.get("messages") if isinstance(result.get("messages"), list) else [],
                         failure_callback=getattr(agent, "_emit_auxiliary_failure", None),
                         main_runtime={k: getattr(agent, k, None)
                                       for k in ("model", "provider", "base_url", "api_key", "api_mode")},
                         title_callback=titled)
    # A title that is quick (a fast model, or none to make: the session has
    # one) still makes it into the run; a slow one is not waited for. Only
    # this turn's title thread is waited for (the one holding our callback;
    # other sessions may be starting theirs right now).
    for thread in threading.enumerate():
        if getattr(thread, "_kwargs", {}).get("title_callback") is titled:
            with contextlib.suppress(RuntimeError):
                thread.join(_title_wait_s())


def run_turn(session: Session, sink: Any, request_json: str, pieces: bool = False) -> list:
    """Runs one chat turn on the calling thread; never raises. With `pieces`
    (the worker) its result and history come as dumps_pieces() bytes, the
    history's pieces also the result's `messages`, rather than as text."""
    req = json.loads(request_json)
    message = req["message"] if "message" in req else req.get("input", "")
    storage = req.get("storage_message")
    instructions = req.get("instructions") or req.get("system_message")
    history = req.get("conversation_history")
    workspace = str(req.get("workspace") or "").strip() or None
    agent = session.agent
    legacy_cwd = workspace if workspace and needs_terminal_cwd() else None
    with GATE.hold(session.profile, exec_ask=True, terminal_cwd=legacy_cwd), \
            bound_workspace(session, workspace):
        session.gateway_timeout_s = gateway_timeout_s(load_config(read_only=True))
        undo = session.bind(sink)
        saved_reasoning = _override_reasoning(agent, req.get("reasoning_effort"))
        try:
            _announce_context(session, sink, req, instructions)
            if req.get("force_compress") and callable(getattr(agent, "_compress_context", None)):
                compressed, new_system = agent._compress_context(
                    history if isinstance(history, list) else [], instructions,
                    approx_tokens=None, focus_topic="debug_force_compress")
                if isinstance(compressed, list):
                    history = compressed
                if isinstance(new_system, str):
                    instructions = new_system
            user_text = _user_text(storage if storage is not None else message)
            before = _rows_before(session)
            # The sink's own method: no Python frame per delta. (After the turn
            # the sink drops what stray threads still send through it.)
            kwargs: dict[str, Any] = {"task_id": session.session_id, "stream_callback": sink.text}
            if instructions:
                kwargs["system_message"] = instructions
            if history is not None:
                kwargs["conversation_history"] = history
            if storage is not None:
                kwargs["persist_user_message"] = user_text
            result = agent.run_conversation(_with_note(session, message),
                                            **accepted_kwargs(agent.run_conversation, kwargs))
            result = plain(result if isinstance(result, dict) else {"value": result})
            _mirror_turn(session, before, user_text, result,
                         len(history) if isinstance(history, list) else 0, req.get("source"))
            _title_after(session, sink, message, result)
            messages = result.get("messages")
            status = "interrupted" if result.get("interrupted") else "complete"
            # Each part encoded on its own (see turn_outcome in agent_host.hpp).
            if not isinstance(messages, list):
                return [status, dumps_pieces(result) if pieces else dumps(result), None, None, 0]
            if pieces:
                said = dumps_pieces(messages)
                return [status, dumps_pieces(result, {id(messages): said}), None, said, len(messages)]
            return [status, dumps(result), None, dumps(messages), len(messages)]
        except BaseException as exc:  # the daemon outlives anything the agent raises
            text = str(exc)
            return ["error", to_json({"error": text, "traceback": traceback.format_exc()}),
                    clean_text(text), None, 0]
        finally:
            if saved_reasoning is not _UNCHANGED:
                agent.reasoning_config = saved_reasoning
            session.unbind(undo)


def prepare_turn(session: Session) -> None:
    """A stale interrupt must not kill the next turn; called before the chat
    is acknowledged, so any interrupt the client sends afterwards counts."""
    clear = getattr(session.agent, "clear_interrupt", None)
    if callable(clear):
        clear()


def interrupt(session: Session, message_json: str) -> None:
    if not hasattr(session.agent, "interrupt"):
        raise RuntimeError("agent does not support interrupt")
    session.agent.interrupt(json.loads(message_json))


def steer(session: Session, text: str) -> bool:
    if not hasattr(session.agent, "steer"):
        raise RuntimeError("agent does not support steer")
    return bool(session.agent.steer(text))


def resolve_gateway(session_id: str, choice: str, request_id: str = "", token: str = "") -> int:
    """Answers exactly the gateway approval the client named: by its
    request_id (hermes-agent 0.20+), else through the agent's own queue
    entry, never "the oldest pending one", which may be another request.
    Returns how many were released (0: it was no longer waiting). Raises
    when the answer could not be routed at all, with the reason: the daemon
    logs that reason, not a timeout that did not happen (the agent's own
    deadline still denies the request)."""
    try:
        from tools import approval
    except Exception as exc:
        raise RuntimeError(f"tools.approval cannot be imported: {type(exc).__name__}: {exc}") from exc
    data = GATEWAY_REQUESTS.pop(token, None) if token else None
    if request_id and "request_id" in _parameters(approval.resolve_gateway_approval):
        try:
            return int(approval.resolve_gateway_approval(session_id, choice, request_id=request_id) or 0)
        except Exception as exc:
            raise RuntimeError(f"tools.approval.resolve_gateway_approval failed: "
                               f"{type(exc).__name__}: {exc}") from exc
    queues, lock = getattr(approval, "_gateway_queues", None), getattr(approval, "_lock", None)
    if not isinstance(queues, dict) or lock is None:
        raise RuntimeError("this hermes-agent gives gateway approvals no request_id and has no "
                           "_gateway_queues: the answer cannot be routed to exactly this request")
    if data is None:
        return 0  # forgotten with its session: nothing waits for it
    with lock:
        queue = queues.get(session_id) or []
        entry = next((e for e in queue if getattr(e, "data", None) is data), None)
        if entry is None:
            return 0
        queue.remove(entry)
        if not queue:
            queues.pop(session_id, None)
    entry.result = choice
    entry.event.set()
    return 1


def _parameters(func: Any) -> Any:
    try:
        return inspect.signature(func).parameters
    except (TypeError, ValueError):
        return {}


def release(session: Session) -> None:
    session.sink = None
    forget_workspace(session)
    with contextlib.suppress(Exception):
        close = getattr(session.agent, "close", None)
        if callable(close):
            close()
    session.agent = None
