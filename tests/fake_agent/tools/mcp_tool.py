"""MCP servers (tools/mcp_tool.py): a process-global table of connected
servers, each a task object with the real private attributes bridges read
(_tools, _registered_tool_names, _task, _error, _config) and an async
shutdown() run on the MCP event loop.

No real MCP here: a server's config may list its tools as
`"fake_tools": [{"name", "description"}]`; a server whose config has
`"fake_fail": "<message>"` fails to connect with that error. As the real
module: `_load_mcp_config()` fills in `${VAR}`s (and is empty in safe
mode), which discover_mcp_tools connects with; register_mcp_servers takes
configs as given.
"""

import asyncio
import os
import re
import threading
from types import SimpleNamespace

_lock = threading.Lock()
_servers: dict = {}
_loop = None
_loop_lock = threading.Lock()


def _mcp_loop():
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, daemon=True, name="mcp-loop").start()
        return _loop


def _run_on_mcp_loop(coro_factory, timeout=30):
    future = asyncio.run_coroutine_threadsafe(coro_factory(), _mcp_loop())
    return future.result(timeout)


class _ServerTask:
    def __init__(self, name, config):
        self.name = name
        self._config = dict(config)
        self._error = None
        self._tools = [SimpleNamespace(name=t.get("name", "?"), description=t.get("description", ""),
                                       inputSchema=t.get("input_schema", {"type": "object"}))
                       for t in config.get("fake_tools", []) if isinstance(t, dict)]
        self._registered_tool_names = [f"mcp_{name}_{t.name}" for t in self._tools]
        self._task = _run_on_mcp_loop(self._start)

    async def _start(self):
        return asyncio.get_running_loop().create_task(asyncio.sleep(3600))

    async def shutdown(self):
        if self._task is not None:
            self._task.cancel()


def register_mcp_servers(servers: dict) -> list:
    registered = []
    for name, config in (servers or {}).items():
        if not isinstance(config, dict) or config.get("enabled") is False:
            continue
        if config.get("fake_fail"):
            continue  # the real one logs the connection error and skips the server
        task = _ServerTask(name, config)
        with _lock:
            _servers[name] = task
        registered += task._registered_tool_names
    return registered


def _interpolate_env_vars(value):
    """`${VAR}` (or `${env:VAR}`) from the environment; an unset one stays as written."""
    if isinstance(value, str):
        return re.sub(r"\$\{(?:env:)?([^}]+)\}", lambda m: os.environ.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {k: _interpolate_env_vars(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate_env_vars(v) for v in value]
    return value


def _load_mcp_config() -> dict:
    """config.yaml's `mcp_servers`, placeholders filled in; none in safe mode."""
    from hermes_cli.config import load_config

    if os.environ.get("HERMES_SAFE_MODE", "").lower() in ("1", "true", "yes"):
        return {}
    servers = load_config().get("mcp_servers") or {}
    return {name: _interpolate_env_vars(cfg) for name, cfg in servers.items() if isinstance(cfg, dict)}


def discover_mcp_tools() -> list:
    servers = _load_mcp_config()
    with _lock:
        missing = {n: c for n, c in servers.items() if n not in _servers}
    register_mcp_servers(missing)
    with _lock:
        return [n for t in _servers.values() for n in t._registered_tool_names]
