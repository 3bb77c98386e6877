"""Which Python the worker host runs the agent on: every candidate is probed
by importing the agent, as a pyenv shim first on PATH that finds run_agent
but lacks its dependencies must not be taken (issue 25)."""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

from harness import Bridge

WORKER = ["--agent-host", "worker"]

# Makes one of the fake agent's own modules unimportable, as httpx is for an
# interpreter the real agent's dependencies were not installed for.
BLOCKER = '''
import sys
class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name == "fake_support":
            raise ModuleNotFoundError("No module named 'fake_support'", name=name)
        return None
sys.meta_path.insert(0, _Missing())
'''


def fake_pythons(where: Path, names=("python3", "python")) -> Path:
    """Interpreters that find run_agent (the agent root is on their path) but
    cannot import its dependencies."""
    blocker = where / "blocker"
    blocker.mkdir(parents=True)
    (blocker / "sitecustomize.py").write_text(BLOCKER)
    bin_dir = where / "fakebin"
    bin_dir.mkdir()
    for name in names:
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nPYTHONPATH="{blocker}${{PYTHONPATH:+:$PYTHONPATH}}" '
                          f'exec /usr/bin/python3 "$@"\n')
        script.chmod(0o755)
    return bin_dir


def env_with_path(path: str, **extra: str) -> dict[str, str]:
    # Nothing but PATH and the system's python3 may offer an interpreter.
    env = {"PATH": path, "PYTHON": "", "HERMES_AGENT_PYTHON": "", "HERMES_BIN": "/nonexistent/hermes",
           "HERMES_AGENT_BRIDGE_UV": "", "UV": ""}
    env.update(extra)
    return env


class InterpreterChoice(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="hb-pythons-"))

    def test_a_python_that_finds_run_agent_but_cannot_import_it_is_skipped(self):
        fake = fake_pythons(self.tmp)
        with Bridge(args=WORKER, env=env_with_path(f"{fake}:/usr/bin:/bin")) as b:
            done = b.chat("s", "hello", wait=True)
            self.assertEqual((done["status"], done["output"]), ("complete", "echo: hello"), done)
            health = b.request({"action": "health"})
            self.assertEqual(health["status"], "ok", health)
            agent = health["agent"]
            self.assertEqual(agent["python_command"], "/usr/bin/python3")
            first, *rest = agent["candidates"]
            self.assertEqual((first["python"], first["source"], first["ok"]), (str(fake / "python3"), "PATH", False))
            self.assertIn("No module named 'fake_support'", first["reason"])
            taken = [c for c in agent["candidates"] if c["ok"]]
            self.assertEqual([c["python"] for c in taken], ["/usr/bin/python3"], agent["candidates"])
            # Tried in PATH order; /bin/python3 is /usr/bin/python3 by its real path, listed once.
            pythons = [c["python"] for c in agent["candidates"]]
            self.assertEqual(pythons[:2], [str(fake / "python3"), "/usr/bin/python3"])
            self.assertEqual(len(pythons), len(set(pythons)))
            ready = json.loads(b.ready_line)
            self.assertEqual(ready["agent"]["candidates"][:2], agent["candidates"][:2])
            self.assertEqual(b.request({"action": "ping"})["agent"]["candidates"], agent["candidates"])

    def test_with_only_broken_pythons_the_start_names_each_and_health_is_degraded(self):
        fake = fake_pythons(self.tmp)
        blocker = self.tmp / "blocker"  # for /usr/bin/python3 as well, through PYTHONPATH
        with Bridge(args=WORKER, env=env_with_path(f"{fake}:/usr/bin:/bin", PYTHONPATH=str(blocker))) as b:
            stderr = b.stderr()
            self.assertIn("agent.unavailable", stderr)
            for python in (fake / "python3", fake / "python", "/usr/bin/python3"):
                self.assertIn(str(python), stderr)
            health = b.request({"action": "health"})
            self.assertEqual(health["status"], "degraded", health)
            agent = health["agent"]
            self.assertIsNone(agent["python"])
            self.assertEqual([c["ok"] for c in agent["candidates"]], [False] * len(agent["candidates"]))
            # Every python3 on PATH, then every python.
            self.assertEqual([c["python"] for c in agent["candidates"]][:3],
                             [str(fake / "python3"), "/usr/bin/python3", str(fake / "python")])
            for c in agent["candidates"]:
                self.assertIn("No module named 'fake_support'", c["reason"], c)
            reply = b.chat("s", "hello")
            self.assertFalse(reply["ok"])
            for python in (fake / "python3", fake / "python", "/usr/bin/python3"):
                self.assertIn(str(python), reply["error"])
            self.assertIn("No module named 'fake_support'", reply["error"])

    def test_a_python_in_the_current_directory_comes_last(self):
        fake = fake_pythons(self.tmp)
        b = Bridge(args=WORKER)
        # An empty PATH entry is the current directory: the bridge's is its temporary dir.
        (b.dir / "python3").symlink_to(fake / "python3")
        b.env = env_with_path(f":/usr/bin:/bin")
        with b:
            agent = b.request({"action": "health"})["agent"]
            self.assertEqual(agent["python_command"], "/usr/bin/python3")
            self.assertEqual(agent["candidates"][0]["python"], "/usr/bin/python3")
            self.assertEqual((agent["candidates"][-1]["source"], agent["candidates"][-1]["ok"]),
                             ("current directory", None))

    def test_uv_is_run_offline_without_syncing_and_its_python_runs_the_agent(self):
        fake = fake_pythons(self.tmp)  # the PATH's pythons cannot import the agent
        log = self.tmp / "uv.log"
        uv = self.tmp / "uv"
        # A stand-in uv: records how it was called (up to the program it is
        # to run; the probe's script spans lines), then runs what follows
        # `python` with the system's interpreter (as `uv run ... python` would
        # with the project's environment), installing nothing.
        uv.write_text(f'#!/bin/sh\necho "$1 $2 $3 $4 $6" >> "{log}"\n'
                      'while [ "$#" -gt 0 ] && [ "$1" != python ]; do shift; done\n'
                      'shift\nexec /usr/bin/python3 "$@"\n')
        uv.chmod(0o755)
        with Bridge(args=WORKER, env=env_with_path(f"{fake}:/bin", HERMES_AGENT_BRIDGE_UV=str(uv))) as b:
            done = b.chat("s", "hello", wait=True)
            self.assertEqual((done["status"], done["output"]), ("complete", "echo: hello"), done)
            agent = b.request({"action": "health"})["agent"]
            taken = next(c for c in agent["candidates"] if c["ok"])
            self.assertTrue(taken["python"].startswith(f"{uv} run --offline --no-sync --project "), taken)
            self.assertEqual(agent["python_command"], taken["python"])
        calls = log.read_text().splitlines()
        self.assertTrue(calls, "uv was never run")
        for call in calls:
            self.assertEqual(call, "run --offline --no-sync --project python", call)


if __name__ == "__main__":
    unittest.main()
