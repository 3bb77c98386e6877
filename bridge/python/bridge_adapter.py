"""The Python half of hermes-bridge's embedded sessions.

The C++ daemon owns sockets, concurrency and the event log. This module owns
what has to touch hermes-agent's Python objects: finding the agent, applying a
profile's environment, building an AIAgent, binding its callbacks on the turn
thread and running one turn. Everything it reports goes through a `sink`
object implemented in C++ (module `hermes_bridge_native`), as JSON text.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback
from typing import Any

from bridge_json import clean_text, dumps, plain, to_json  # clean_text: C++ uses it for lone surrogates
from bridge_profiles import (DBS, GATE, PATHS, accepted_kwargs, configure, gateway_timeout_s,
                             load_config, max_iterations_for, model_from, platform_name,
                             reasoning_config_for, section, service_tier_for,
                             suppress_platform_hints, toolsets_for)
from bridge_session import Session


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
            thinking_callback=session.text_event("thinking.delta"),
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
    db = DBS.for_profile(session.profile)
    try:
        return len(db.get_messages(session.session_id) or []) if db is not None else None
    except Exception:
        return None


def _mirror_turn(session: Session, before: int | None, user_text: str,
                 result: dict[str, Any], history_len: int) -> None:
    """Writes the turn to hermes' state.db when the agent did not."""
    after = _state_db_count(session)
    if before is None or after is None or after > before:
        return
    db = DBS.for_profile(session.profile)
    messages = result.get("messages")
    if db is None or not isinstance(messages, list):
        return
    with contextlib.suppress(Exception):
        db.create_session(session_id=session.session_id, source=platform_name(),
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


def run_turn(session: Session, sink: Any, request_json: str) -> list:
    """Runs one chat turn on the calling thread; never raises."""
    req = json.loads(request_json)
    message = req["message"] if "message" in req else req.get("input", "")
    storage = req.get("storage_message")
    instructions = req.get("instructions") or req.get("system_message")
    history = req.get("conversation_history")
    agent = session.agent
    with GATE.hold(session.profile, exec_ask=True):
        session.gateway_timeout_s = gateway_timeout_s(load_config())
        undo = session.bind(sink)
        try:
            if req.get("force_compress") and callable(getattr(agent, "_compress_context", None)):
                compressed, new_system = agent._compress_context(
                    history if isinstance(history, list) else [], instructions,
                    approx_tokens=None, focus_topic="debug_force_compress")
                if isinstance(compressed, list):
                    history = compressed
                if isinstance(new_system, str):
                    instructions = new_system
            user_text = _user_text(storage if storage is not None else message)
            before = _state_db_count(session)
            # The sink's own method: no Python frame per delta. (After the turn
            # the sink drops what stray threads still send through it.)
            kwargs: dict[str, Any] = {"task_id": session.session_id, "stream_callback": sink.text}
            if instructions:
                kwargs["system_message"] = instructions
            if history is not None:
                kwargs["conversation_history"] = history
            if storage is not None:
                kwargs["persist_user_message"] = user_text
            result = agent.run_conversation(message, **accepted_kwargs(agent.run_conversation, kwargs))
            result = plain(result if isinstance(result, dict) else {"value": result})
            _mirror_turn(session, before, user_text, result,
                         len(history) if isinstance(history, list) else 0)
            messages = result.get("messages")
            status = "interrupted" if result.get("interrupted") else "complete"
            # Each part encoded on its own (see turn_outcome in agent_host.hpp).
            encoded = dumps(result)
            if not isinstance(messages, list):
                return [status, encoded, None, None, 0]
            return [status, encoded, None, dumps(messages), len(messages)]
        except BaseException as exc:  # the daemon outlives anything the agent raises
            text = str(exc)
            return ["error", to_json({"error": text, "traceback": traceback.format_exc()}),
                    clean_text(text), None, 0]
        finally:
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


def resolve_gateway(session_id: str, choice: str) -> int:
    try:
        from tools.approval import resolve_gateway_approval
        return int(resolve_gateway_approval(session_id, choice) or 0)
    except Exception:
        return 0


def release(session: Session) -> None:
    session.sink = None
    with contextlib.suppress(Exception):
        close = getattr(session.agent, "close", None)
        if callable(close):
            close()
    session.agent = None
