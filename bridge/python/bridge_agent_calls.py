"""What the bridge hands to hermes-agent's own objects: the SessionDB of a
profile's state.db (one per file, shared by its sessions) and keyword
arguments cut down to what the agent's functions take (their signatures
move between versions). Both are asked for several times a turn, so both
are found once."""

from __future__ import annotations

import contextlib
import inspect
import threading
import weakref
from pathlib import Path
from typing import Any

from bridge_profiles import _profile_home


class _SessionDbs:
    """One hermes SessionDB per state.db path, shared by every session using it.
    A profile's is found once: every turn asks for it several times, and
    resolving the profile's path (a realpath of each part) was a millisecond
    of the worker's CPU per turn. (The path a profile resolved to is the one
    its sessions keep, as its SessionDB keeps the file it opened.)"""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_path: dict[str, Any] = {}
        self._by_profile: dict[str, Any] = {}
        self.error: str | None = None

    def for_profile(self, profile: str) -> Any:
        db = self._by_profile.get(profile)
        if db is not None:
            return db
        path = str((_profile_home(profile) / "state.db").resolve())
        with self._lock:
            if path not in self._by_path:
                try:
                    from hermes_state import SessionDB
                    self._by_path[path] = SessionDB(db_path=Path(path))
                    self.error = None
                except Exception as exc:
                    self.error = str(exc)
                    return None
            db = self._by_profile[profile] = self._by_path[path]
            return db


DBS = _SessionDbs()


def accepted_kwargs(func: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Only what `func` takes: hermes-agent's signatures move between versions."""
    names = _keyword_names(func)
    return kwargs if names is None else {k: v for k, v in kwargs.items() if k in names}


# A function's keyword names (None: it takes any), by the function (a bound
# method's own): inspect.signature costs about a millisecond, and a turn
# asks for run_conversation's.
_KEYWORD_NAMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _keyword_names(func: Any) -> frozenset[str] | None:
    key = getattr(func, "__func__", func)
    with contextlib.suppress(KeyError, TypeError):  # TypeError: not weakly referable
        return _KEYWORD_NAMES[key]
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return None
    names = (None if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
             else frozenset(params))
    with contextlib.suppress(TypeError):
        _KEYWORD_NAMES[key] = names
    return names


