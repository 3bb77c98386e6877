"""tools.env_probe as the real agent has it: a one-line summary of the
machine's Python toolchain, built once per process (the real one runs
python3 and pip by subprocess: 0.6 s of a process's first turn) and cached
for the process. The first build is logged as `env_probe`."""

from __future__ import annotations

import os
import threading

from fake_support import eventlog

_lock = threading.Lock()
_line: str | None = None


def get_environment_probe_line(*, force_refresh: bool = False) -> str:
    global _line
    with _lock:
        if _line is None or force_refresh:
            _line = ""
            eventlog.log("env_probe", pid=os.getpid())
        return _line
