"""The agent's working directory (agent/runtime_cwd.py, hermes-agent 0.18+).

A multi-session host pins a session's cwd in a ContextVar on the turn thread;
otherwise TERMINAL_CWD, then the process cwd. FAKE_AGENT_LEGACY_CWD=1 plays an
older agent that has no such module (bridges must fall back to TERMINAL_CWD).
"""

import os
from contextvars import ContextVar
from pathlib import Path

if os.environ.get("FAKE_AGENT_LEGACY_CWD"):
    raise ImportError("agent.runtime_cwd does not exist in this (older) agent")

_SESSION_CWD = ContextVar("HERMES_SESSION_CWD", default="")


def set_session_cwd(cwd):
    return _SESSION_CWD.set((cwd or "").strip())


def clear_session_cwd() -> None:
    _SESSION_CWD.set("")


def resolve_agent_cwd() -> Path:
    override = _SESSION_CWD.get()
    if override and Path(override).expanduser().is_dir():
        return Path(override).expanduser()
    raw = os.environ.get("TERMINAL_CWD", "").strip()
    if raw and Path(raw).expanduser().is_dir():
        return Path(raw).expanduser()
    return Path(os.getcwd())
