"""MCP servers for Hermes Studio's profile page: the profile's config.yaml
`mcp_servers` and the agent's process-global server table
(`tools.mcp_tool`). Listed, added, edited, removed, tested and reloaded
through bridge_ops.profile_call (MCP_OPS), under the profile's gate.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from bridge_profiles import GATE, _profile_home


def _config_path(profile: str) -> Path:
    return _profile_home(profile) / "config.yaml"


def _read_config(profile: str) -> dict[str, Any]:
    path = _config_path(profile)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return {}
    try:
        import yaml
        data = yaml.safe_load(text)
    except ImportError:
        try:
            data = json.loads(text)  # JSON is YAML; an agent always has PyYAML
        except ValueError:
            return {}
    except Exception:
        return {}
    return data if isinstance(data, dict) else {}


def _write_config(profile: str, cfg: dict[str, Any]) -> None:
    path = _config_path(profile)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        from utils import atomic_yaml_write
        atomic_yaml_write(path, cfg, sort_keys=False)
    except Exception as exc:
        raise RuntimeError(f"Failed to save config to {path}: {exc}") from exc


def _server_configs(cfg: dict[str, Any]) -> dict[str, Any]:
    servers = cfg.get("mcp_servers") if cfg else None
    return servers if isinstance(servers, dict) else {}


def _mcp() -> Any:
    from tools import mcp_tool
    return mcp_tool


def _live_servers(mcp: Any) -> list[tuple[str, Any]]:
    with mcp._lock:
        return list(mcp._servers.items())


def _visible(tool_name: str, server_cfg: Any, raw: bool = False) -> bool:
    """The server's tools filter (include wins over exclude), unless raw."""
    filt = server_cfg.get("tools") if isinstance(server_cfg, dict) else None
    if raw or not isinstance(filt, dict):
        return True
    if "include" in filt:
        return tool_name in set(filt.get("include") or [])
    if "exclude" in filt:
        return tool_name not in set(filt.get("exclude") or [])
    return True


def _server_entry(name: str, cfg: Any, task: Any = None, server_cfg: Any = None) -> dict[str, Any]:
    cfg = cfg if isinstance(cfg, dict) else {}
    tools = list(getattr(task, "_tools", []) or []) if task is not None else []
    raw_names = [t.name for t in tools if hasattr(t, "name")]
    registered = list(getattr(task, "_registered_tool_names", None) or []) or list(raw_names)
    running = getattr(task, "_task", None)
    error = getattr(task, "_error", None)
    return {
        "name": name,
        "transport": "http" if cfg.get("url") else "stdio",
        "connected": bool(running and not running.done()),
        "tools": len(raw_names),
        "tools_registered": len(registered) if task is not None else 0,
        "tool_names": raw_names,
        "tool_names_registered": registered if task is not None else [],
        "tool_details": [{"name": getattr(t, "name", "?"), "description": getattr(t, "description", "")}
                         for t in tools if _visible(getattr(t, "name", "?"), server_cfg)],
        "error": str(error) if error else None,
        "raw_config": cfg,
    }


def _discover_in_background(profile: str, work: Any) -> None:
    """Connecting servers can take long: the answer does not wait for it."""

    def run() -> None:
        with GATE.hold(profile):
            try:
                work()
            except Exception as exc:
                print(f"hermes-bridge: MCP discovery failed: {exc}", file=__import__("sys").stderr, flush=True)

    threading.Thread(target=run, daemon=True, name="hermes-bridge-mcp").start()


def _shutdown_server(mcp: Any, name: str) -> bool:
    with mcp._lock:
        task = mcp._servers.get(name)
    if task is None:
        return False
    try:
        mcp._run_on_mcp_loop(lambda: task.shutdown(), timeout=15)
    except Exception as exc:
        print(f"hermes-bridge: MCP server {name} did not shut down: {exc}",
              file=__import__("sys").stderr, flush=True)
    finally:
        with mcp._lock:
            if mcp._servers.get(name) is task:
                mcp._servers.pop(name, None)
    return True


def _mcp_list(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    mcp = _mcp()
    configs = _server_configs(_read_config(profile))
    servers, total = [], 0
    for name, task in _live_servers(mcp):
        if name in configs:
            entry = _server_entry(name, getattr(task, "_config", {}), task, configs.get(name))
            servers.append(entry)
            total += entry["tools_registered"]
    listed = {s["name"] for s in servers}
    servers += [_server_entry(name, cfg) for name, cfg in configs.items()
                if name not in listed and isinstance(cfg, dict)]
    return {"servers": servers, "total_tools": total, "ok": True}


def _name(args: dict[str, Any]) -> str:
    return str(args.get("name") or "").strip()


def _server_edit(profile: str, args: dict[str, Any]) -> tuple[str, Any, dict[str, Any]] | dict[str, Any]:
    """(name, server config, the profile's config) for an add or an update,
    or the answer that refuses it."""
    name, config = _name(args), args.get("config", {})
    if not name or not isinstance(config, dict):
        return {"error": "name and config are required", "ok": False}
    cfg = _read_config(profile)
    if not cfg:
        return {"error": "config.yaml not found", "ok": False}
    if not isinstance(cfg.get("mcp_servers"), dict):
        cfg["mcp_servers"] = {}
    return name, config, cfg


def _mcp_server_add(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    mcp = _mcp()
    edit = _server_edit(profile, args)
    if isinstance(edit, dict):
        return edit
    name, config, cfg = edit
    if name in cfg["mcp_servers"]:
        return {"error": f"server '{name}' already exists, use update instead", "ok": False}
    cfg["mcp_servers"][name] = config
    _write_config(profile, cfg)
    _discover_in_background(profile, mcp.discover_mcp_tools)
    return {"ok": True, "name": name}


def _mcp_server_update(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    mcp = _mcp()
    edit = _server_edit(profile, args)
    if isinstance(edit, dict):
        return edit
    name, config, cfg = edit
    if name not in cfg["mcp_servers"]:
        return {"error": f"server '{name}' not found in config", "ok": False}
    cfg["mcp_servers"][name] = config
    _write_config(profile, cfg)
    _shutdown_server(mcp, name)
    _discover_in_background(profile, mcp.discover_mcp_tools)
    return {"ok": True}


def _mcp_server_remove(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    mcp = _mcp()
    name = _name(args)
    if not name:
        return {"error": "name is required", "ok": False}
    cfg = _read_config(profile)
    if name in _server_configs(cfg):
        del cfg["mcp_servers"][name]
        _write_config(profile, cfg)
    _shutdown_server(mcp, name)
    return {"ok": True}


def _mcp_server_test(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    mcp = _mcp()
    name = _name(args)
    if not name:
        return {"error": "name is required", "ok": False}
    with mcp._lock:
        task = mcp._servers.get(name)
    if not task:
        return {"error": f"server '{name}' is not connected", "ok": False}
    try:
        return {"ok": True, "tools": [t.name for t in getattr(task, "_tools", []) if hasattr(t, "name")]}
    except Exception as exc:
        return {"error": f"failed to list tools: {exc}", "ok": False}


def _mcp_tools_list(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    mcp = _mcp()
    only = str(args.get("server") or "").strip() or None
    raw = bool(args.get("raw"))
    configs = _server_configs(_read_config(profile))
    results = []
    for name, task in _live_servers(mcp):
        if name not in configs or (only and name != only):
            continue
        try:
            tools = [{"name": getattr(t, "name", "?"), "description": getattr(t, "description", ""),
                      "input_schema": getattr(t, "inputSchema", {})}
                     for t in getattr(task, "_tools", []) if _visible(getattr(t, "name", "?"), configs.get(name), raw)]
        except Exception as exc:
            results.append({"server": name, "tools": [], "error": str(exc)})
            continue
        results.append({"server": name, "tools": tools})
    return {"ok": True, "results": results}


def _mcp_reload(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    mcp = _mcp()
    target = str(args.get("server") or "").strip() or None
    configs = _server_configs(_read_config(profile))
    if target and target not in configs:
        return {"error": f"server '{target}' not found in config", "ok": False}
    for name in [target] if target else list(configs):
        _shutdown_server(mcp, name)
    if target:
        _discover_in_background(profile, lambda: _sync_server(mcp, profile, target))
    else:
        _discover_in_background(profile, mcp.discover_mcp_tools)
    return {"ok": True, "message": "MCP servers reloaded"}


def _connectable(mcp: Any, profile: str, name: str) -> Any:
    """Server `name`'s config as the agent connects it: `${VAR}`s filled in,
    nothing in safe mode or for a server it finds suspicious
    (tools.mcp_tool._load_mcp_config, which reads the profile's config under
    its gate); as config.yaml has it where the agent has no such loader."""
    load = getattr(mcp, "_load_mcp_config", None)
    if callable(load):
        return load().get(name)
    return _server_configs(_read_config(profile)).get(name)


_SYNCING = threading.Lock()  # one server brought in line at a time in this process


def _sync_server(mcp: Any, profile: str, name: str) -> None:
    """Makes this process's live server `name` what its config says: started,
    restarted with its new config, or shut down. Looked at again once a
    connect is done: the config may have changed while it connected."""
    with _SYNCING:
        wanted = _connectable(mcp, profile, name)
        for _ in range(4):
            with mcp._lock:
                task = mcp._servers.get(name)
            if (getattr(task, "_config", None) if task is not None else None) != wanted:
                _shutdown_server(mcp, name)
                if isinstance(wanted, dict):
                    mcp.register_mcp_servers({name: wanted})  # returns once connected (or failed)
            again = _connectable(mcp, profile, name)
            if again == wanted:
                return
            wanted = again


def _mcp_follow(profile: str, args: dict[str, Any]) -> dict[str, Any]:
    """Another worker of the profile added, updated or removed server `name`
    in config.yaml: this process's live server follows the file."""
    mcp, name = _mcp(), _name(args)
    if name:
        _discover_in_background(profile, lambda: _sync_server(mcp, profile, name))
    return {"ok": True}


def _mcp_op(handler: Any) -> Any:
    def run(profile: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            _mcp()
        except ImportError:
            return {"error": "MCP tool module not available", "ok": False}
        return handler(profile, args)
    return run


MCP_OPS = {
    "mcp_list": _mcp_op(_mcp_list),
    "mcp_server_add": _mcp_op(_mcp_server_add),
    "mcp_server_update": _mcp_op(_mcp_server_update),
    "mcp_server_remove": _mcp_op(_mcp_server_remove),
    "mcp_server_test": _mcp_op(_mcp_server_test),
    "mcp_tools_list": _mcp_op(_mcp_tools_list),
    "mcp_reload": _mcp_op(_mcp_reload),
    "mcp_follow": _mcp_op(_mcp_follow),  # the daemon's, for a profile's other workers; no Studio action
}
