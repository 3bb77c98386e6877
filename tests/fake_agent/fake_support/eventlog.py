"""JSON-lines event log for test assertions ($FAKE_AGENT_LOG).

Opened in append mode per line so several processes (and threads) can share
one file; each line is flushed immediately so tests can read it mid-run.
"""

import json
import os
import threading

_lock = threading.Lock()


def log(op, **fields) -> None:
    path = os.environ.get("FAKE_AGENT_LOG")
    if not path:
        return
    # ensure_ascii keeps lone surrogates writable; default=str for odd objects.
    line = json.dumps({"op": op, **fields}, default=str, ensure_ascii=True)
    with _lock:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()


def log_callback(name) -> None:
    log("cb", name=name, thread=threading.current_thread().name)
