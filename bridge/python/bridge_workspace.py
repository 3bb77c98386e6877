"""The working directory of a session's tools: pinned on the turn's thread
while it runs (the agent's runtime cwd, and the terminal tool's per-task
cwd), and forgotten when the session goes away. Needs nothing of the agent
but those two modules, where it has them."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

# Whose workspace the terminal tool holds under a session id: a session that
# goes away forgets only its own, never that of a session created after it
# under the same id (its release can run late, on another thread).
_workspace_owners: dict[str, Any] = {}
_workspace_lock = threading.Lock()


@contextlib.contextmanager
def bound_workspace(session: Any, workspace: str | None):
    """Pins the session's workspace on this thread for the agent's tools:
    the session cwd (agent.runtime_cwd) and the terminal tool's per-task cwd
    where the agent has them. Yields False when it has neither: the caller
    then carries the workspace in TERMINAL_CWD (see GATE.hold)."""
    if not workspace:
        yield True
        return
    try:
        from agent.runtime_cwd import clear_session_cwd, set_session_cwd
    except Exception:
        set_session_cwd = clear_session_cwd = None
    try:
        from tools.terminal_tool import register_task_env_overrides
    except Exception:
        register_task_env_overrides = None
    if set_session_cwd is None and register_task_env_overrides is None:
        yield False
        return
    if set_session_cwd is not None:
        set_session_cwd(workspace)
    if register_task_env_overrides is not None:
        with _workspace_lock, contextlib.suppress(Exception):
            register_task_env_overrides(session.session_id, {"cwd": workspace})
            _workspace_owners[session.session_id] = session
    try:
        yield True
    finally:
        if clear_session_cwd is not None:
            with contextlib.suppress(Exception):
                clear_session_cwd()


def forget_workspace(session: Any) -> None:
    """Drops the terminal tool's per-task cwd of a session that goes away:
    a session created later under the same id must not run its commands in
    the old one's workspace."""
    with _workspace_lock:
        if _workspace_owners.get(session.session_id) is not session:
            return  # none, or a later session's
        del _workspace_owners[session.session_id]
        try:
            from tools.terminal_tool import clear_task_env_overrides
        except Exception:
            return
        with contextlib.suppress(Exception):
            clear_task_env_overrides(session.session_id)


def needs_terminal_cwd() -> bool:
    """An agent older than agent.runtime_cwd and per-task overrides reads
    its tools' cwd from TERMINAL_CWD only."""
    try:
        from agent.runtime_cwd import set_session_cwd  # noqa: F401
        return False
    except Exception:
        pass
    try:
        from tools.terminal_tool import register_task_env_overrides  # noqa: F401
        return False
    except Exception:
        return True
