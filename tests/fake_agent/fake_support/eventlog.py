"""JSON-lines event log for test assertions ($FAKE_AGENT_LOG).

Opened in append mode per line so several processes (and threads) can share
one file; each line is flushed immediately so tests can read it mid-run.
"""

import json
import os
import threading

_lock = threading.Lock()
_path = None


def configure() -> None:
    """Reads $FAKE_AGENT_LOG again (the self-test changes it between cases).

    Read once, not per line: log_callback runs twice for every streamed
    delta, and a lookup of an unset variable raises and catches a KeyError
    inside os.environ, which made the environment lookup most of what the
    fake cost per delta (the real agent does nothing of the kind)."""
    global _path
    _path = os.environ.get("FAKE_AGENT_LOG") or None


configure()


def log(op, **fields) -> None:
    path = _path
    if path is None:
        return
    # ensure_ascii keeps lone surrogates writable; default=str for odd objects.
    line = json.dumps({"op": op, **fields}, default=str, ensure_ascii=True)
    with _lock:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()


def log_callback(name) -> None:
    if _path is None:
        return
    log("cb", name=name, thread=threading.current_thread().name)
