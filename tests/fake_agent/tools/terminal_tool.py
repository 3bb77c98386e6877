"""CLI-style approval callback, stored per thread like the real one.

Thread-local on purpose: a bridge must set it on the thread that runs the
turn, and tests check that setting it elsewhere has no effect.
"""

import threading

_local = threading.local()


def set_approval_callback(cb) -> None:
    _local.approval_callback = cb


def _get_approval_callback():
    return getattr(_local, "approval_callback", None)


# Per-task environment overrides (hermes-agent 0.18+): a host registers
# {"cwd": ...} under the session id and the terminal tool runs there.
# FAKE_AGENT_LEGACY_CWD=1 plays an older agent without them.
_task_env_overrides = {}

if not __import__("os").environ.get("FAKE_AGENT_LEGACY_CWD"):
    def register_task_env_overrides(task_id, overrides) -> None:
        _task_env_overrides[task_id] = dict(overrides or {})

    def clear_task_env_overrides(task_id) -> None:
        _task_env_overrides.pop(task_id, None)


def terminal_cwd(task_id) -> str:
    """Where the terminal tool would run a command for this task: the task's
    override, then the session cwd, then TERMINAL_CWD, then the process cwd."""
    import os

    cwd = (_task_env_overrides.get(task_id) or {}).get("cwd")
    if cwd:
        return cwd
    try:
        from agent.runtime_cwd import resolve_agent_cwd
        return str(resolve_agent_cwd())
    except ImportError:
        return os.environ.get("TERMINAL_CWD") or os.getcwd()
