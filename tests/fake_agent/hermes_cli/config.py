"""load_config(): $HERMES_HOME/config.yaml, written by tests as JSON.

JSON is a subset of YAML, so tests stay valid for the real agent while this
fake needs only the stdlib. Anything missing or unparseable reads as {}.
As the real one (0.18+), the parsed file is cached per path on its
(mtime_ns, size): load_config() hands out a deep copy, load_config_readonly()
the cached dict itself.
"""

import copy
import json
import threading

from hermes_constants import get_hermes_home

_CACHE: dict = {}  # path -> ((mtime_ns, size), parsed)
_LOCK = threading.Lock()


def _cached() -> dict:
    path = get_hermes_home() / "config.yaml"
    try:
        st = path.stat()
    except OSError:
        return {}
    signature = (st.st_mtime_ns, st.st_size)
    with _LOCK:
        hit = _CACHE.get(str(path))
        if hit is None or hit[0] != signature:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}
            hit = (signature, data if isinstance(data, dict) else {})
            _CACHE[str(path)] = hit
        return hit[1]


def load_config() -> dict:
    return copy.deepcopy(_cached())


def load_config_readonly() -> dict:
    return _cached()
