"""The worker's threads under names the kernel knows too, so that `top -H`,
perf and `scripts/bench-hosts` tell the frame writer, the turns and the
request pools apart (Python sets the kernel's name of a thread itself only
from 3.14 on; before, every thread shows as the interpreter). Stdlib only."""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from typing import Any, Callable


def _kernel_namer() -> Callable[[bytes], int] | None:
    """prctl(PR_SET_NAME) through ctypes: one call. (Writing the name to
    /proc/thread-self/comm instead cost a turn's thread about 0.2 ms of CPU
    with 64 turns starting at once.)"""
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (ImportError, OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    set_name = 15  # PR_SET_NAME
    return lambda name: prctl(set_name, ctypes.c_char_p(name), 0, 0, 0)


_SET_NAME = _kernel_namer()


def name_this_thread(name: str) -> None:
    """Gives the calling thread `name` (15 bytes at most: the kernel's limit)."""
    short = name.encode("ascii", "replace")[:15]
    if _SET_NAME is not None and _SET_NAME(short) == 0:
        return
    with contextlib.suppress(OSError):  # not Linux, or /proc not mounted: only a name lost
        with open("/proc/thread-self/comm", "wb") as comm:
            comm.write(short)


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
