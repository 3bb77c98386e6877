"""The worker's threads under names the kernel knows too, so that `top -H`,
perf and `scripts/bench-hosts` tell the frame writer, the turns and the
request pools apart (Python sets the kernel's name of a thread itself only
from 3.14 on; before, every thread shows as the interpreter). Stdlib only."""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from typing import Any, Callable


def name_this_thread(name: str) -> None:
    """Gives the calling thread `name` (15 bytes at most: the kernel's limit)."""
    with contextlib.suppress(OSError):  # not Linux, or /proc not mounted: only a name lost
        with open("/proc/thread-self/comm", "w", encoding="ascii", errors="replace") as comm:
            comm.write(name[:15])


def start(target: Callable[..., Any], name: str, *args: Any) -> threading.Thread:
    """A daemon thread running `target(*args)`, named `name` in Python and
    (its first 15 bytes) in the kernel."""
    def run() -> None:
        name_this_thread(name)
        target(*args)
    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    return thread


def pool(size: int, name: str) -> concurrent.futures.ThreadPoolExecutor:
    """A pool of up to `size` threads, each named `name` in the kernel."""
    return concurrent.futures.ThreadPoolExecutor(size, thread_name_prefix=name, initializer=name_this_thread,
                                                 initargs=(name,))
