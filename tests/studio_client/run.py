#!/usr/bin/env python3
"""Hermes Studio's own bridge client and manager, unchanged, against our daemon.

Extracts packages/server/src/services/hermes/agent-bridge/{client,manager}.ts
from a bare mirror of EKKOLearnAI/hermes-studio (nothing of Studio's is kept in
this repository), puts this folder's stubs (stubs/) in place of the four
modules they import from outside that folder, bundles them with esbuild
(installed on first use into ~/.cache/hermes-bridge/npm) and runs driver.mjs:
Studio's AgentBridgeManager starts hermes-bridge the way Studio starts its
Python bridge, Studio's AgentBridgeClient drives every user flow the way
run-chat/*.ts does, then the manager stops it.

Exit status: 0 every flow passed, 1 a flow failed, 77 skipped (no mirror, no
node, no esbuild). One line per flow on stdout.

Environment:
  HERMES_BRIDGE_BIN     the daemon (default <repo>/build/hermes-bridge)
  STUDIO_MIRROR         bare mirror (default /*/.mirror/EKKOLearnAI+hermes-studio/repo)
  STUDIO_REV            Studio commit (default 18618ad8)
  STUDIO_CLIENT_NPM     esbuild cache dir (default ~/.cache/hermes-bridge/npm)
  STUDIO_CLIENT_FLOWS   comma list: run only these flows
  STUDIO_CLIENT_KEEP=1  keep the temporary directory (logs: studio.log, agent.log)
  STUDIO_CLIENT_DAEMON_LOG=1  keep the daemon's stderr in daemon.log (the
                        manager discards it; a wrapper script execs the binary)
  STUDIO_CLIENT_AGAINST=python  calibration: run the same flows against Studio's
                        own Python bridge (from the mirror) instead of the daemon
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
REV = os.environ.get("STUDIO_REV", "18618ad8")
SUB = "packages/server/src/services/hermes/agent-bridge"
ESBUILD_VERSION = "0.24.2"
SKIP = 77
GIT = "git"
PYTHON_FILES = ("hermes_bridge.py", "bridge_broker.py", "bridge_pool.py", "bridge_runtime.py",
                "bridge_server.py", "bridge_transport.py")


def skip(reason: str) -> None:
    print(f"SKIP studio_client: {reason}", flush=True)
    sys.exit(SKIP)


def find_mirror() -> str | None:
    explicit = os.environ.get("STUDIO_MIRROR")
    if explicit:
        return explicit
    found = sorted(glob.glob("/*/.mirror/EKKOLearnAI+hermes-studio/repo"))
    return found[0] if found else None


def git_show(mirror: str, path: str) -> str | None:
    try:
        out = subprocess.run([GIT, f"--git-dir={mirror}", "show", f"{REV}:{path}"],
                             capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.decode("utf-8") if out.returncode == 0 else None


def find_esbuild(node: str) -> str | None:
    cache = Path(os.environ.get("STUDIO_CLIENT_NPM")
                 or Path.home() / ".cache" / "hermes-bridge" / "npm")
    binary = cache / "node_modules" / ".bin" / "esbuild"
    if binary.exists():
        return str(binary)
    npm = shutil.which("npm") or ("/usr/bin/npm" if os.path.exists("/usr/bin/npm") else None)
    if not npm:
        return None
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "package.json").exists():
        (cache / "package.json").write_text('{"name": "hb-studio-client-cache", "private": true}\n')
    try:
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent",
                        f"esbuild@{ESBUILD_VERSION}"], cwd=cache, capture_output=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return str(binary) if binary.exists() else None


def kill_leftovers(tmp: Path, binary: str) -> None:
    """Processes this run started and that are still there: daemons the driver
    did not stop (e.g. it timed out), and any process whose command line names
    this run's private temporary directory (Studio's Python workers in the
    calibration mode outlive a SIGKILLed broker for a while)."""
    real = os.path.realpath(binary)
    pids = tmp / "pids"
    for line in (pids.read_text().split() if pids.exists() else []):
        try:
            pid = int(line)
            if os.path.realpath(f"/proc/{pid}/exe") == real:
                os.kill(pid, 9)
        except (ValueError, OSError):
            pass
    marker = str(tmp).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker in f.read():
                    os.kill(int(entry), 9)
        except OSError:
            pass


def main() -> int:
    node = shutil.which("node") or ("/usr/bin/node" if os.path.exists("/usr/bin/node") else None)
    if not node:
        skip("node not found")
    global GIT
    GIT = shutil.which("git") or ("/usr/bin/git" if os.path.exists("/usr/bin/git") else "")
    if not GIT:
        skip("git not found (needed to read the mirror)")
    mirror = find_mirror()
    if not mirror or not os.path.isdir(mirror):
        skip("no mirror of EKKOLearnAI/hermes-studio (fetch github:EKKOLearnAI/hermes-studio)")
    sources = {name: git_show(mirror, f"{SUB}/{name}") for name in ("client.ts", "manager.ts")}
    missing = [name for name, text in sources.items() if text is None]
    if missing:
        skip(f"mirror {mirror} has no {', '.join(missing)} at {REV}")
    esbuild = find_esbuild(node)
    if not esbuild:
        skip("esbuild not available (npm install esbuild failed)")

    against_python = os.environ.get("STUDIO_CLIENT_AGAINST") == "python"
    binary = os.environ.get("HERMES_BRIDGE_BIN") or str(REPO / "build" / "hermes-bridge")
    if not against_python and not os.access(binary, os.X_OK):
        print(f"FAIL studio_client: daemon binary {binary} not found", flush=True)
        return 1

    # Short path: the ipc socket lives in it (sun_path is 108 bytes).
    tmp = Path(tempfile.mkdtemp(prefix="hb-sc-", dir="/tmp"))
    keep = os.environ.get("STUDIO_CLIENT_KEEP") == "1"
    try:
        src = tmp / "src"
        bridge_dir = src / "services" / "hermes" / "agent-bridge"
        bridge_dir.mkdir(parents=True)
        for name, text in sources.items():
            (bridge_dir / name).write_text(text, encoding="utf-8")
        stubs = HERE / "stubs"
        shutil.copy(stubs / "logger.ts", src / "services" / "logger.ts")
        for name in ("hermes-profile.ts", "hermes-path.ts", "mcp-types.ts"):
            shutil.copy(stubs / name, src / "services" / "hermes" / name)
        shutil.copy(stubs / "entry.ts", src / "entry.ts")

        dist = tmp / "dist"
        bundle = dist / "studio-bridge.cjs"
        build = subprocess.run([esbuild, str(src / "entry.ts"), "--bundle", "--platform=node",
                                "--format=cjs", "--target=node20", "--log-level=warning",
                                f"--outfile={bundle}"], capture_output=True, text=True, timeout=120)
        if build.returncode != 0:
            print(f"FAIL studio_client: esbuild failed: {build.stderr.strip()}", flush=True)
            return 1
        # manager.ts looks for <__dirname>/agent-bridge/python/hermes_bridge.py and
        # passes it as the first argument; hermes-bridge ignores a leading *.py.
        placeholder = dist / "agent-bridge" / "python" / "hermes_bridge.py"
        placeholder.parent.mkdir(parents=True)
        if against_python:
            # Calibration: Studio's own Python bridge in the daemon's place.
            for name in PYTHON_FILES:
                text = git_show(mirror, f"{SUB}/python/{name}")
                if text is None:
                    skip(f"mirror has no {SUB}/python/{name} at {REV}")
                (placeholder.parent / name).write_text(text, encoding="utf-8")
            binary = "/usr/bin/python3"
        else:
            placeholder.write_text("# placeholder: the daemon is hermes-bridge\n")

        home = tmp / "home"
        home.mkdir()
        config = {
            "model": {"default": "fake-model", "provider": "fake"},
            "approvals": {"timeout": 5},
            "mcp_servers": {"fakesrv": {"command": "fake-mcp",
                                        "fake_tools": [{"name": "lookup", "description": "look up"}]}},
        }
        (home / "config.yaml").write_text(json.dumps(config) + "\n")
        work = home / "profiles" / "work"
        work.mkdir(parents=True)
        (work / "config.yaml").write_text(json.dumps({
            "model": {"default": "work-model", "provider": "fake"}, "approvals": {"timeout": 5}}) + "\n")
        skill = home / "skills" / "demo-skill"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: demo-skill\ndescription: a demo skill\n---\nDo the demo.\n")

        if os.environ.get("STUDIO_CLIENT_DAEMON_LOG") == "1" and not against_python:
            # Debugging aid: the manager discards the bridge's stdio; this
            # wrapper execs the same binary (same pid) with stderr kept.
            wrapper = tmp / "hermes-bridge-logged"
            wrapper.write_text(f'#!/bin/sh\nexec "{binary}" "$@" 2>>"{tmp}/daemon.log"\n')
            wrapper.chmod(0o755)
            binary_for_manager = str(wrapper)
        else:
            binary_for_manager = binary
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("HERMES_") and key != "HERMES_BRIDGE_BIN":
                env.pop(key)
        env.update({
            "HERMES_AGENT_BRIDGE_PYTHON": binary_for_manager,
            "HERMES_AGENT_BRIDGE_ENDPOINT": f"ipc://{tmp}/bridge.sock",
            "HERMES_HOME": str(home),
            "HERMES_AGENT_ROOT": str(REPO / "tests" / "fake_agent"),
            "HERMES_BIN": str(tmp / "no-hermes-bin"),
            "HERMES_AGENT_BRIDGE_STARTUP_TIMEOUT_MS": "30000",
            "HERMES_AGENT_BRIDGE_ATTACH_RETRY_MS": "200",
            "HERMES_AGENT_BRIDGE_RECOVERY_EXIT_TIMEOUT_MS": "1500",
            "STUDIO_BUNDLE": str(bundle),
            "STUDIO_TMP": str(tmp),
            "STUDIO_CLIENT_LOG": str(tmp / "studio.log"),
            "FAKE_AGENT_LOG": str(tmp / "agent.log"),
        })
        try:
            proc = subprocess.run([node, str(HERE / "driver.mjs")], cwd=tmp, env=env, timeout=540)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            print("FAIL studio_client: driver timed out after 540 s", flush=True)
            rc = 1
        kill_leftovers(tmp, binary)
        if rc != 0 and not keep:
            log = tmp / "studio.log"
            if log.exists():
                lines = log.read_text(errors="replace").splitlines()
                print("--- last lines of the Studio client log ---")
                print("\n".join(line[:300] for line in lines[-15:]))
        return 0 if rc == 0 else 1
    finally:
        if keep:
            print(f"kept {tmp}", flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
