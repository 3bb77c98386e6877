"""HERMES_HOME lookup and reasoning-effort parsing (real semantics)."""

import os
from pathlib import Path

VALID_REASONING_EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "max", "ultra")


def get_hermes_home() -> Path:
    # Read at call time so tests can switch HERMES_HOME between calls.
    return Path(os.environ.get("HERMES_HOME") or "~/.hermes").expanduser()


def parse_reasoning_effort(effort):
    """False/"none"/"false"/"disabled" -> disabled; a known level -> enabled; else None."""
    if effort is False:
        return {"enabled": False}
    if effort is None or effort is True:
        return None
    value = str(effort).strip().lower()
    if value in ("none", "false", "disabled"):
        return {"enabled": False}
    if value in VALID_REASONING_EFFORTS:
        return {"enabled": True, "effort": value}
    return None
