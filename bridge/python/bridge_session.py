"""One session's AIAgent callbacks. They report to whichever turn is running
(the C++ sink of that run) and ask the client questions through it."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

from bridge_json import to_json
from bridge_ops import estimated_tokens
from bridge_profiles import DEFAULT_GATEWAY_TIMEOUT_S

CHOICES = ["once", "session", "always", "deny"]

# Gateway approvals waiting in the agent, by the token the daemon answers
# with: an agent without request ids (before 0.20) is answered by its own
# queue entry, never by "the oldest", which may be another request.
GATEWAY_REQUESTS: dict[str, Any] = {}


def _seconds_from_env(name: str, default: float) -> float:
    """The seed's deadlines (60 s approvals, 180 s compression), overridable."""
    try:
        value = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return value if value > 0 else default


def terminal_approval_timeout_s() -> float:
    # Hermes Studio's current bridge waits 120 s (the seed waited 60 s).
    return _seconds_from_env("HERMES_BRIDGE_APPROVAL_TIMEOUT", 120.0)


def clarify_timeout_s() -> float:
    return _seconds_from_env("HERMES_BRIDGE_CLARIFY_TIMEOUT", 300.0)


def compression_timeout_s() -> float:
    return _seconds_from_env("HERMES_BRIDGE_COMPRESSION_TIMEOUT", 180.0)

# --------------------------------------------------------------------------
# A session: one AIAgent and the callbacks that report to the current run.


class Session:
    def __init__(self, session_id: str, profile: str) -> None:
        self.session_id = session_id
        self.profile = profile
        self.agent: Any = None
        self.sink: Any = None  # the running turn's C++ sink, None between turns
        self.gateway_timeout_s = DEFAULT_GATEWAY_TIMEOUT_S
        self.pending_note = ""  # told to the next turn (a model switch)
        # hermes titled the session (its title thread called back): later
        # turns start no title thread, which would find the title and stop.
        self.titled = False
        self.gateway_tokens: list[str] = []

    # -- reporting --------------------------------------------------------
    def event(self, payload: dict[str, Any]) -> None:
        sink = self.sink
        if sink is not None:
            sink.event(to_json(payload))

    def on_stream_delta(self, text: Any = None) -> None:
        # Text arrives through the sink's text() (run_conversation's stream_callback);
        # this callback only contributes the end-of-segment sentinel.
        if text is None:
            self.event({"event": "turn.boundary"})

    def on_status(self, kind: Any, text: Any = None) -> None:
        self.event({"event": "status", "kind": str(kind), "text": None if text is None else str(text)})

    def text_event(self, name: str):
        return lambda text=None, *_, **__: self.event({"event": name, "text": str(text)})

    def on_thinking(self, *_: Any, **__: Any) -> None:
        # hermes-agent's thinking callback carries its terminal spinner's
        # decoration, not the model's reasoning (that comes through
        # reasoning_callback); Studio's bridge forwards it empty, so that the
        # kaomoji never end up in the conversation.
        self.event({"event": "thinking.delta", "text": ""})

    def on_step(self, *args: Any, **kwargs: Any) -> None:
        if len(args) >= 2:
            info: Any = {"api_call_count": args[0], "prev_tools": args[1]}
        else:
            info = args[0] if args else (kwargs or None)
        self.event({"event": "step", "step_info": info if info else None})

    def on_tool_progress(self, event_type: Any, name: Any = None, preview: Any = None,
                         args: Any = None, **_: Any) -> None:
        # tool.started / tool.completed come from the start/complete callbacks,
        # which carry the real tool_call_id; here only reasoning is reported.
        kind = str(event_type or "")
        if kind == "reasoning.available":
            self.event({"event": "reasoning.available", "text": str(preview) if preview else ""})
        elif kind == "_thinking" and name:
            self.event({"event": "reasoning.delta", "text": str(name)})
        elif kind.startswith("subagent."):
            payload = {"event": kind, "tool_name": str(name) if name else "",
                       "text": str(preview) if preview is not None else "", "args": args if args else {}}
            payload.update({str(k): v for k, v in _.items()})
            self.event(payload)
        elif kind == "moa.reference":
            payload = {"event": kind, "label": str(name or _.get("label") or "reference"),
                       "text": str(preview) if preview is not None else ""}
            if _.get("moa_index") is not None:
                payload["index"] = _["moa_index"]
            if _.get("moa_count") is not None:
                payload["count"] = _["moa_count"]
            self.event(payload)
        elif kind == "moa.aggregating":
            self.event({"event": kind, "aggregator": str(name or _.get("aggregator") or "")})

    def on_tool_start(self, call_id: Any, name: Any, args: Any) -> None:
        self.event({"event": "tool.started", "tool_call_id": str(call_id) if call_id else "",
                    "tool_name": str(name) if name else "", "args": args if args else {}})
        # A tool may take the process down (os._exit, a crashing extension, the
        # OOM killer): a worker hands the daemon what it holds before it runs.
        flush = getattr(self.sink, "flush", None)
        if callable(flush):
            flush()

    def on_tool_complete(self, call_id: Any, name: Any, args: Any, result: Any = None) -> None:
        self.event({"event": "tool.completed", "tool_call_id": str(call_id) if call_id else "",
                    "tool_name": str(name) if name else "", "args": args if args else {},
                    "result": result, "result_preview": str(result)[:500] if result else None})

    # -- questions for the client ------------------------------------------
    def on_approval(self, command: Any, description: Any, *, allow_permanent: bool = True,
                    **_: Any) -> str:
        sink = self.sink
        if sink is None:
            return "deny"  # nobody can answer: fail closed
        choices = CHOICES if allow_permanent else [c for c in CHOICES if c != "always"]
        timeout = terminal_approval_timeout_s()
        request = {"command": str(command or ""), "description": str(description or ""),
                   "choices": choices, "allow_permanent": bool(allow_permanent),
                   "timeout_ms": int(timeout * 1000)}
        return sink.ask_approval(to_json(request), timeout)

    def on_gateway_approval(self, data: Any) -> None:
        sink = self.sink
        if sink is None:
            return
        token = f"{self.session_id}:{id(data)}"
        GATEWAY_REQUESTS[token] = data  # the agent's own dict (see resolve_gateway)
        self.gateway_tokens.append(token)
        data = data if isinstance(data, dict) else {}
        keys = data.get("pattern_keys")
        if not isinstance(keys, list):
            keys = [data["pattern_key"]] if data.get("pattern_key") else []
        request = {"command": str(data.get("command") or ""),
                   "description": str(data.get("description") or ""),
                   "pattern_keys": [str(k) for k in keys],
                   "choices": list(CHOICES), "allow_permanent": True,
                   # What hermes-agent will really wait (approvals.timeout).
                   "timeout_ms": int(self.gateway_timeout_s * 1000),
                   # For the daemon only (not in the event): how to answer exactly this one.
                   "agent_request_id": str(data.get("request_id") or ""), "bridge_token": token}
        sink.gateway_notify(to_json(request), self.gateway_timeout_s)

    def on_clarify(self, question: Any, choices: Any = None) -> str:
        """The clarify tool: the user's answer, or a note that none came."""
        sink = self.sink
        timeout = clarify_timeout_s()
        silent = f"[user did not respond within {max(1, round(timeout / 60))}m]"
        if sink is None:
            return silent
        request = {"question": str(question or ""),
                   "choices": [str(c) for c in choices] if choices else None,
                   "timeout_ms": int(timeout * 1000)}
        answer = sink.ask_clarify(to_json(request), timeout)
        return answer if answer else silent

    def on_compress(self, messages: Any, system_message: Any = None, **kw: Any):
        before = len(messages) if isinstance(messages, list) else 0
        sink = self.sink
        if sink is None:
            raise RuntimeError("bridge compression requested outside a run")
        approx = kw.get("approx_tokens")
        if not isinstance(approx, int) or approx <= 0:
            approx = estimated_tokens(self.agent, messages, system_message)
        kw["approx_tokens"] = approx
        request = {"message_count": before, "approx_tokens": approx,
                   "focus_topic": kw.get("focus_topic"), "messages": messages}
        reply = json.loads(sink.ask_compression(to_json(request), compression_timeout_s()))
        request_id = reply.get("request_id", "")
        try:
            if reply.get("failure"):
                raise RuntimeError(reply["failure"])
            if reply.get("error"):
                raise RuntimeError(str(reply["error"]))
            compressed = reply.get("messages")
            if not isinstance(compressed, list):
                raise RuntimeError("bridge compression response missing messages")
        except Exception as exc:
            self.event({"event": "bridge.compression.failed", "request_id": request_id,
                        "message_count": before, "approx_tokens": kw.get("approx_tokens"),
                        "error": str(exc)})
            raise
        # A reply without system_message keeps the prompt the agent already has.
        new_system = reply.get("system_message")
        new_system = new_system if new_system is not None else system_message
        self.event({"event": "bridge.compression.completed", "request_id": request_id,
                    "message_count": before, "result_messages": len(compressed),
                    "approx_tokens": kw.get("approx_tokens"),
                    "result_approx_tokens": estimated_tokens(self.agent, compressed, new_system),
                    "compressed": True})
        return compressed, new_system

    # -- binding on the turn thread ----------------------------------------
    def bind(self, sink: Any) -> list:
        """Thread-local approval callback and ContextVar session key must be set
        on the thread that runs the turn; returns the undo steps."""
        self.sink = sink
        undo: list = []
        with contextlib.suppress(Exception):
            from tools.terminal_tool import _get_approval_callback, set_approval_callback
            previous = _get_approval_callback()
            set_approval_callback(self.on_approval)
            undo.append(lambda: set_approval_callback(previous))
        with contextlib.suppress(Exception):
            from tools.approval import (register_gateway_notify, reset_current_session_key,
                                        set_current_session_key, unregister_gateway_notify)
            token = set_current_session_key(self.session_id)
            undo.append(lambda: reset_current_session_key(token))
            register_gateway_notify(self.session_id, self.on_gateway_approval)
            undo.append(lambda: unregister_gateway_notify(self.session_id))
        return undo

    def unbind(self, undo: list) -> None:
        for step in reversed(undo):
            with contextlib.suppress(Exception):
                step()
        self.sink = None
        for token in self.gateway_tokens:
            GATEWAY_REQUESTS.pop(token, None)
        self.gateway_tokens.clear()


