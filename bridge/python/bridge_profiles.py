"""Where hermes-agent lives, which home and profile environment a session
uses, and the configuration read inside it. os.environ is process-wide, so
ProfileGate lets runs of one profile share it while another profile waits."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

DEFAULT_GATEWAY_TIMEOUT_S = 60.0

# --------------------------------------------------------------------------
# Where hermes-agent lives and which home it uses.

PATHS: dict[str, Any] = {"agent_root": None}


def _root_candidates(explicit: str | None) -> list[Path]:
    found: list[Path] = []
    if explicit:
        found.append(Path(explicit).expanduser())
    if os.environ.get("HERMES_AGENT_ROOT"):
        found.append(Path(os.environ["HERMES_AGENT_ROOT"]).expanduser())
    hermes_bin = shutil.which(os.environ.get("HERMES_BIN", "hermes"))
    if hermes_bin:
        real = Path(hermes_bin).resolve()
        found += [real.parent.parent, real.parent.parent.parent, real.parent.parent / "hermes-agent"]
    cwd, home = Path.cwd(), Path.home()
    found += [cwd, cwd / ".hermes" / "hermes-agent", cwd / "hermes-agent",
              home / ".hermes" / "hermes-agent", home / "hermes-agent",
              Path("/opt/hermes/hermes-agent"), Path("/opt/hermes-agent"),
              Path("/usr/local/hermes-agent")]
    unique: list[Path] = []
    for path in found:
        try:
            path = path.resolve()
        except OSError:
            pass
        if path not in unique:
            unique.append(path)
    return unique


def _normalized_base(home: Path) -> Path:
    # A profile home (<root>/profiles/<name>) belongs to the root's profile set.
    return home.parent.parent if home.parent.name == "profiles" else home


def configure(agent_root: str, hermes_home: str) -> dict[str, str]:
    """Called once at start-up, before any session exists."""
    candidates = _root_candidates(agent_root or None)
    root = next((c for c in candidates if (c / "run_agent.py").exists()), None)
    if root is None and importlib.util.find_spec("run_agent") is None:
        raise RuntimeError(
            "hermes-agent run_agent.py not found. Pass --agent-root or set HERMES_AGENT_ROOT. Tried: "
            + ", ".join(str(c) for c in candidates))
    if root is not None:
        os.environ["HERMES_AGENT_ROOT"] = str(root)
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
    else:
        os.environ.pop("HERMES_AGENT_ROOT", None)
    home = Path(hermes_home or "~/.hermes").expanduser().resolve()
    os.environ["HERMES_HOME"] = str(home)
    os.environ["HERMES_AGENT_BRIDGE_BASE_HOME"] = str(_normalized_base(home))
    PATHS["agent_root"] = root
    return {"agent_root": str(root)}


def agent_version(root: Any) -> str:
    """The installed distribution's version, else the source tree's pyproject.toml."""
    try:
        import importlib.metadata as md
        return md.version("hermes-agent")
    except Exception:
        pass
    try:
        with open(os.path.join(str(root), "pyproject.toml"), encoding="utf-8") as f:
            found = re.search(r'(?m)^version\s*=\s*"([^"]+)"', f.read())
        return found.group(1) if found else ""
    except Exception:
        return ""


def environment(root: Any = None) -> dict[str, str]:
    """What ping, health and status report about the interpreter hosting agents."""
    import platform
    if root is None:
        root = PATHS.get("agent_root")
    return {"python": sys.executable, "python_version": platform.python_version(),
            "agent_version": agent_version(root)}


def _base_home() -> Path:
    raw = os.environ.get("HERMES_AGENT_BRIDGE_BASE_HOME") or "~/.hermes"
    return _normalized_base(Path(raw).expanduser().resolve())


# A profile's name becomes a path: a plain name only, as the daemon checks it
# (protocol/names.cpp), so that nothing outside <home>/profiles is reached.
_PLAIN_PROFILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z")


def _profile_home(profile: str) -> Path:
    """The base for the default profile, else <base>/profiles/<name> (as Hermes
    Studio lists them). A bad name or a directory that resolves elsewhere is a
    ValueError, a missing one a KeyError (the base would leak the default's .env)."""
    base = _base_home()
    if not profile or profile == "default":
        return base
    if not isinstance(profile, str) or not _PLAIN_PROFILE.match(profile):
        raise ValueError("profile must be a plain name (up to 64 letters, digits, '_', '.' or '-', "
                         f"not starting with '.' or '-'), not {profile!r}")
    try:
        profiles = (base / "profiles").resolve()
        home = (profiles / profile).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise ValueError(f"profile {profile!r} cannot be resolved: {exc}") from None
    if home.parent != profiles:
        raise ValueError(f"profile {profile!r} resolves outside {profiles}: {home}")
    if not home.is_dir():
        raise KeyError(f"unknown profile: {profile} (no directory {profiles / profile})")
    return home


# --------------------------------------------------------------------------
# Profile environments. os.environ is process-wide, so runs of one profile
# share it while a run of another profile waits for them to finish.

_DOTENV_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def read_dotenv(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    values: dict[str, str] = {}
    for raw in lines:
        line = raw.strip()
        if line.startswith("export "):
            line = line[len("export "):].strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not _DOTENV_KEY.match(key):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        values[key] = value
    return values


def _all_profile_dotenv_keys() -> set[str]:
    base = _base_home()
    keys = set(read_dotenv(base / ".env"))
    with contextlib.suppress(OSError):
        for entry in (base / "profiles").iterdir():
            if entry.is_dir():
                keys |= set(read_dotenv(entry / ".env"))
    return keys


def _apply_profile(profile: str) -> dict[str, str | None]:
    """Switches os.environ to `profile`; returns what to put back."""
    home = _profile_home(profile)
    own = read_dotenv(home / ".env")
    touched = set(own) | {"HERMES_HOME"}
    if profile != "default":
        # Another profile's secrets must not leak into this one.
        touched |= _all_profile_dotenv_keys()
    saved = {key: os.environ.get(key) for key in touched}
    if (home / "config.yaml").exists():
        os.environ["HERMES_HOME"] = str(home)
    if profile != "default":
        for key in touched - {"HERMES_HOME"}:
            os.environ.pop(key, None)
    os.environ.update(own)
    return saved


def _restore(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


class ProfileGate:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._profile: str | None = None
        self._holders = 0
        self._saved: dict[str, str | None] = {}
        self._askers = 0
        self._saved_exec_ask: str | None = None

    @contextlib.contextmanager
    def hold(self, profile: str, exec_ask: bool = False, terminal_cwd: str | None = None):
        """`terminal_cwd`: a workspace carried in TERMINAL_CWD (agents older
        than per-session cwds); it is process-wide too, so it is part of
        what holders share."""
        key = (profile, terminal_cwd or None)
        with self._cond:
            while self._holders and self._profile != key:
                self._cond.wait()
            if not self._holders:
                self._saved = _apply_profile(profile)
                if terminal_cwd:
                    self._saved.setdefault("TERMINAL_CWD", os.environ.get("TERMINAL_CWD"))
                    os.environ["TERMINAL_CWD"] = terminal_cwd
                self._profile = key
            self._holders += 1
            if exec_ask:
                if not self._askers:
                    self._saved_exec_ask = os.environ.get("HERMES_EXEC_ASK")
                    # Without it hermes-agent approves dangerous commands by itself.
                    os.environ["HERMES_EXEC_ASK"] = "1"
                self._askers += 1
        try:
            yield
        finally:
            with self._cond:
                if exec_ask:
                    self._askers -= 1
                    if not self._askers:
                        _restore({"HERMES_EXEC_ASK": self._saved_exec_ask})
                self._holders -= 1
                if not self._holders:
                    _restore(self._saved)
                    self._profile = None
                    self._cond.notify_all()


GATE = ProfileGate()

# --------------------------------------------------------------------------
# Configuration, read inside the profile's environment.


def load_config(read_only: bool = False) -> dict[str, Any]:
    """The profile's config. `read_only`: hermes' own cached dict, not a deep
    copy (load_config_readonly, about half of load_config's cost, where hermes
    has it); the caller must not change it."""
    try:
        from hermes_cli import config as hermes_config
        load = getattr(hermes_config, "load_config_readonly", None) if read_only else None
        cfg = (load if callable(load) else hermes_config.load_config)()
        return cfg if isinstance(cfg, dict) else {}
    except Exception:
        pass
    try:
        import yaml  # Debian's python3-yaml, when hermes' own loader is missing
        path = Path(os.environ.get("HERMES_HOME", "~/.hermes")).expanduser() / "config.yaml"
        return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.exists() else {}
    except Exception:
        return {}


def section(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    value = cfg.get(name)
    return value if isinstance(value, dict) else {}


def model_from(cfg: dict[str, Any]) -> str:
    env = os.environ.get("HERMES_MODEL", "") or os.environ.get("HERMES_INFERENCE_MODEL", "")
    if env.strip():
        return env.strip()
    model = cfg.get("model", "")
    if isinstance(model, dict):
        return str(model.get("default") or "").strip()
    return model.strip() if isinstance(model, str) else ""


def max_iterations_for(cfg: dict[str, Any]) -> int:
    try:
        from_env = int(os.environ.get("HERMES_BRIDGE_MAX_TURNS", "") or 0)
    except ValueError:
        from_env = 0
    if from_env > 0:
        return from_env
    try:
        return int(section(cfg, "agent").get("max_turns") or cfg.get("max_turns") or 90)
    except (TypeError, ValueError):
        return 90


def platform_name() -> str:
    return os.environ.get("HERMES_AGENT_BRIDGE_PLATFORM", "cli").strip() or "cli"


def toolsets_for(cfg: dict[str, Any]) -> list[str] | None:
    raw = os.environ.get("HERMES_BRIDGE_TOOLSETS", "").strip()
    if raw:
        names = [part.strip() for part in raw.split(",") if part.strip()]
        return None if any(n in ("all", "*") for n in names) else (names or None)
    try:
        from hermes_cli.tools_config import _get_platform_tools
        from toolsets import resolve_toolset
        platform = platform_name()
        enabled = sorted(_get_platform_tools(cfg, platform, include_default_mcp_servers=True))
        if platform != "cli":
            tools: set[str] = set()
            for name in enabled:
                with contextlib.suppress(Exception):
                    tools.update(resolve_toolset(name))
            if not tools:  # a platform with no usable tools falls back to the CLI's
                enabled = sorted(_get_platform_tools(cfg, "cli", include_default_mcp_servers=True))
        return enabled or None
    except Exception:
        return None


def reasoning_config_for(cfg: dict[str, Any]) -> Any:
    try:
        from hermes_constants import parse_reasoning_effort
        return parse_reasoning_effort(str(section(cfg, "agent").get("reasoning_effort", "") or "").strip())
    except Exception:
        return None


def service_tier_for(cfg: dict[str, Any]) -> str | None:
    tier = str(section(cfg, "agent").get("service_tier", "") or "").strip().lower()
    return "priority" if tier in ("fast", "priority", "on") else None


def gateway_timeout_s(cfg: dict[str, Any]) -> float:
    try:
        value = float(section(cfg, "approvals").get("timeout") or DEFAULT_GATEWAY_TIMEOUT_S)
        return value if value > 0 else DEFAULT_GATEWAY_TIMEOUT_S
    except (TypeError, ValueError):
        return DEFAULT_GATEWAY_TIMEOUT_S


_hints_suppressed = False


def suppress_platform_hints() -> None:
    global _hints_suppressed
    if _hints_suppressed:
        return
    _hints_suppressed = True
    raw = os.environ.get("HERMES_BRIDGE_SUPPRESS_PLATFORM_HINT", "cli").strip()
    if raw.lower() in ("0", "false", "no", "off"):
        return
    targets = {t.strip().lower() for t in raw.split(",") if t.strip()}
    tables = []
    with contextlib.suppress(Exception):
        from agent import prompt_builder
        tables.append(prompt_builder.PLATFORM_HINTS)
    hints = getattr(sys.modules.get("run_agent"), "PLATFORM_HINTS", None)
    if isinstance(hints, dict):
        tables.append(hints)
    for table in tables:
        for target in targets:
            table.pop(target, None)
