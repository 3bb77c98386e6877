"""Gateway approvals: per-session notify callbacks and blocking waits.

Process-global like the real module (a bridge must register in the same
process that runs the agent). The current session key is a ContextVar, so
it has to be set on the turn thread.
"""

import contextvars
import os
import threading
import time
import uuid

from fake_support import eventlog

POLL_SECONDS = 0.05
DEFAULT_TIMEOUT_SECONDS = 60.0

_session_key = contextvars.ContextVar("approval_session_key", default=None)
_lock = threading.Lock()
_notify_cbs = {}   # session_key -> cb(approval_data)
_gateway_queues = {}  # session_key -> [_ApprovalEntry], oldest first (the real names)


# hermes-agent 0.20 gives every pending request a request_id and resolves by
# it; FAKE_AGENT_LEGACY_APPROVALS=1 plays 0.18 (no ids, oldest first).
_LEGACY = bool(os.environ.get("FAKE_AGENT_LEGACY_APPROVALS"))


class _ApprovalEntry:
    def __init__(self, data):
        self.data = data if _LEGACY else dict(data)
        if not _LEGACY:
            self.data.setdefault("request_id", uuid.uuid4().hex)
        self.event = threading.Event()
        self.result = None
        self.reason = None


def set_current_session_key(key):
    return _session_key.set(key)


def reset_current_session_key(token) -> None:
    _session_key.reset(token)


def get_current_session_key(default=""):
    # The real one falls back to the HERMES_SESSION_KEY session env.
    return _session_key.get() or os.environ.get("HERMES_SESSION_KEY", default)


def register_gateway_notify(session_key, cb) -> None:
    with _lock:
        _notify_cbs[session_key] = cb


def has_gateway_notify(session_key) -> bool:
    with _lock:
        return session_key in _notify_cbs


def unregister_gateway_notify(session_key) -> None:
    """Drop the callback and wake its waiters; they get "deny"."""
    with _lock:
        _notify_cbs.pop(session_key, None)
        waiters = _gateway_queues.pop(session_key, [])
    for entry in waiters:
        entry.result = "deny"
        entry.event.set()


def _resolve(session_key, choice, resolve_all=False, reason=None, request_id=None) -> int:
    """Resolve the request with request_id, else the oldest (or all); return how many."""
    with _lock:
        queue = _gateway_queues.get(session_key) or []
        if request_id:
            targets = [e for e in queue if e.data.get("request_id") == request_id]
        else:
            targets = list(queue) if resolve_all else queue[:1]
        for entry in targets:
            queue.remove(entry)
    for entry in targets:
        entry.result = choice
        entry.reason = reason
        entry.event.set()
    return len(targets)


# FAKE_AGENT_BROKEN_RESOLVE=<text>: resolving raises RuntimeError(<text>),
# like an approval module that fails (the bridge must log that reason).
_BROKEN = os.environ.get("FAKE_AGENT_BROKEN_RESOLVE", "")

if _LEGACY:
    def resolve_gateway_approval(session_key, choice, resolve_all=False, reason=None) -> int:
        if _BROKEN:
            raise RuntimeError(_BROKEN)
        return _resolve(session_key, choice, resolve_all, reason)
else:
    def resolve_gateway_approval(session_key, choice, resolve_all=False, reason=None,
                                 request_id=None) -> int:
        if _BROKEN:
            raise RuntimeError(_BROKEN)
        return _resolve(session_key, choice, resolve_all, reason, request_id)


def pending_count(session_key) -> int:
    with _lock:
        return len(_gateway_queues.get(session_key) or [])


def _timeout_seconds() -> float:
    try:
        from hermes_cli.config import load_config

        approvals = load_config().get("approvals") or {}
        return float(approvals.get("timeout", DEFAULT_TIMEOUT_SECONDS))
    except (TypeError, ValueError, AttributeError):
        return DEFAULT_TIMEOUT_SECONDS


def wait_for_gateway_decision(session_key, approval_data, is_interrupted=None) -> str:
    """Notify the gateway on the calling thread, then block for a decision.

    Returns the choice; "deny" when no callback is registered, the notify
    callback raises, the wait times out or the turn is interrupted.
    """
    entry = _ApprovalEntry(approval_data)
    with _lock:
        cb = _notify_cbs.get(session_key)
        if cb is None:
            return "deny"
        # Queue before notifying so a resolve issued from inside cb finds it.
        _gateway_queues.setdefault(session_key, []).append(entry)
    eventlog.log_callback("gateway_notify")
    try:
        # 0.18 hands the notify callback the entry's own dict, 0.20 a copy.
        cb(entry.data if _LEGACY else dict(entry.data))
    except Exception:
        _forget(session_key, entry)
        return "deny"

    deadline = time.monotonic() + _timeout_seconds()
    try:
        while not entry.event.wait(POLL_SECONDS):
            if (is_interrupted is not None and is_interrupted()) or time.monotonic() >= deadline:
                return "deny"
        return entry.result or "deny"
    finally:
        _forget(session_key, entry)


def _forget(session_key, entry) -> None:
    with _lock:
        queue = _gateway_queues.get(session_key)
        if queue and entry in queue:
            queue.remove(entry)
