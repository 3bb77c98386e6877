"""model_tools as the real agent has it, as far as bridges meet it: AIAgent()
asks it for its tool definitions, and the first call in a process pays for
the toolsets' availability checks (real hermes-agent 0.18.2: about 0.7 s of
a first construction). Logged as `tool_checks` with `first` (the process's
first call) and the toolsets asked for."""

from __future__ import annotations

import os
import threading
import time

from fake_support import eventlog

_lock = threading.Lock()
_checked = False


def get_tool_definitions(enabled_toolsets=None, disabled_toolsets=None, quiet_mode=False,
                         skip_tool_search_assembly=False):
    global _checked
    with _lock:
        first, _checked = not _checked, True
    if first:
        delay_ms = os.environ.get("FAKE_AGENT_FIRST_AGENT_DELAY_MS")
        if delay_ms:
            time.sleep(int(delay_ms) / 1000.0)
    eventlog.log("tool_checks", first=first, enabled_toolsets=enabled_toolsets, pid=os.getpid())
    return [{"type": "function", "function": {"name": n, "description": f"fake {n} tool",
                                              "parameters": {"type": "object"}}}
            for n in ("terminal", "clarify")]
