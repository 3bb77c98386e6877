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
