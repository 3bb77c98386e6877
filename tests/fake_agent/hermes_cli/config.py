"""load_config(): $HERMES_HOME/config.yaml, written by tests as JSON.

JSON is a subset of YAML, so tests stay valid for the real agent while this
fake needs only the stdlib. Anything missing or unparseable reads as {}.
"""

import json

from hermes_constants import get_hermes_home


def load_config() -> dict:
    path = get_hermes_home() / "config.yaml"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
