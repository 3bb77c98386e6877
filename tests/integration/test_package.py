"""The Debian package from scripts/package, unpacked into a scratch root with
`dpkg -x` (no root needed): its dependencies, its files in the usual places,
and the installed binary answering --help, --version, doctor and a daemon's
ping and chat with the fake agent, nothing taken from the build tree.

The package is made from the build the suite tests (the directory of
HERMES_BRIDGE_BIN) without rebuilding it; `cmake --install` into a prefix is
checked the same way."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path

from harness import FAKE_AGENT, REPO, Bridge, bridge_binary


def build_dir() -> Path:
    """The CMake build directory the binary under test was built in."""
    return bridge_binary().resolve().parent


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kwargs)


class InstalledBridge(Bridge):
    """A daemon started from an installed binary rather than the build's, on a
    copy of the fake agent outside the repository."""

    def __init__(self, binary: Path, **kwargs) -> None:
        super().__init__(**kwargs)
        self.binary = binary
        self.agent_root = self.dir / "agent"
        shutil.copytree(FAKE_AGENT, self.agent_root, ignore=shutil.ignore_patterns("__pycache__"))

    def command(self) -> list[str]:
        return [str(self.binary), "--endpoint", self.endpoint, "--agent-root", str(self.agent_root),
                "--hermes-home", str(self.home)] + self.args


def unknown_option(proc: subprocess.CompletedProcess) -> bool:
    """CLI11's answer to an option or subcommand this build does not have."""
    return proc.returncode != 0 and "was not expected" in proc.stdout + proc.stderr


class DebianPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        for tool in ("cpack", "dpkg-deb"):
            if not shutil.which(tool):
                raise unittest.SkipTest(f"{tool} is not installed (apt-get install cmake dpkg)")
        cls.build = build_dir()
        cls.scratch = Path(tempfile.mkdtemp(prefix="hb-package-"))
        env = dict(os.environ, BUILD_DIR=str(cls.build), HB_PACKAGE_NO_BUILD="1",
                   HB_PACKAGE_DIR=str(cls.scratch / "out"))
        made = run([str(REPO / "scripts" / "package")], env=env)
        if made.returncode != 0:
            shutil.rmtree(cls.scratch, ignore_errors=True)
            raise AssertionError(f"scripts/package failed: {made.stderr}")
        cls.deb = Path(made.stdout.strip().splitlines()[-1])
        cls.root = cls.scratch / "root"
        unpacked = run(["dpkg-deb", "-x", str(cls.deb), str(cls.root)])
        if unpacked.returncode != 0:
            shutil.rmtree(cls.scratch, ignore_errors=True)
            raise AssertionError(f"dpkg-deb -x failed: {unpacked.stderr}")
        cls.binary = cls.root / "usr" / "bin" / "hermes-bridge"

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def field(self, name: str) -> str:
        return run(["dpkg-deb", "-f", str(self.deb), name]).stdout.strip()

    def test_the_package_declares_the_debian_packages_it_links_and_recommends_tmux(self):
        self.assertEqual(self.field("Package"), "hermes-bridge")
        depends = [d.split()[0] for d in self.field("Depends").split(", ")]
        for package in ("libcaf-core0.17", "libcaf-io0.17", "libsqlite3-0", "python3"):
            self.assertIn(package, depends)
        self.assertTrue(any(d.startswith("libpython3.") for d in depends), depends)
        self.assertIn("tmux", self.field("Recommends"))

    def test_files_are_in_the_usual_places_and_the_service_runs_the_installed_binary(self):
        usr = self.root / "usr"
        self.assertTrue(os.access(self.binary, os.X_OK))
        for path in ("lib/systemd/user/hermes-bridge.socket", "share/doc/hermes-bridge/README.md",
                     "share/doc/hermes-bridge/docs/configuration.md", "share/man/man1/hermes-bridge.1"):
            self.assertTrue((usr / path).is_file(), path)
        service = (usr / "lib/systemd/user/hermes-bridge.service").read_text()
        self.assertIn("\nExecStart=/usr/bin/hermes-bridge serve ", service)
        self.assertNotIn("@", service.replace("%", ""))  # no placeholder left unconfigured

    def test_the_installed_binary_names_no_path_in_the_source_or_build_tree(self):
        if "libasan" in self.field("Depends"):
            self.skipTest("a sanitizer build names its source files in its checks")
        data = self.binary.read_bytes()
        for tree in {str(REPO), str(self.build)}:
            self.assertNotIn(tree.encode(), data)

    def test_help_lists_the_commands(self):
        proc = run([str(self.binary), "--help"])
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for command in ("serve", "runs", "verify"):
            self.assertIn(command, proc.stdout)

    def test_version(self):
        proc = run([str(self.binary), "--version"])
        if unknown_option(proc):
            self.skipTest("this build has no --version yet (issue 25 item 3)")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(self.field("Version"), proc.stdout)

    def test_doctor_on_the_fake_agent(self):
        scratch = Path(tempfile.mkdtemp(prefix="hb-package-doctor-"))
        self.addCleanup(shutil.rmtree, scratch, True)
        (scratch / "home").mkdir()
        (scratch / "run").mkdir(mode=0o700)
        proc = run([str(self.binary), "doctor", "--agent-root", str(FAKE_AGENT),
                    "--hermes-home", str(scratch / "home"), "--endpoint", f"ipc://{scratch}/run/bridge.sock"])
        if unknown_option(proc):
            self.skipTest("this build has no doctor command yet (issue 25 item 2)")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn(str(FAKE_AGENT), proc.stdout)

    def test_a_daemon_from_the_installed_files_answers_ping_and_runs_a_chat(self):
        # its cwd, agent root and home are scratch directories: nothing names the repository
        with InstalledBridge(self.binary) as b:
            self.assertEqual(b.proc.args[0], str(self.binary))
            self.assertNotIn(str(REPO), " ".join(b.proc.args))
            ping = b.request({"action": "ping"})
            self.assertTrue(ping["ok"], ping)
            # the worker host runs the adapter the binary embeds, written out at start
            done = b.chat("s", "hello package", wait=True)
            self.assertEqual((done["status"], done["output"]), ("complete", "echo: hello package"), done)


class CmakeInstall(unittest.TestCase):
    def test_cmake_install_into_a_prefix_points_the_service_at_that_prefix(self):
        if not shutil.which("cmake"):
            self.skipTest("cmake is not installed")
        build = build_dir()
        prefix = Path(tempfile.mkdtemp(prefix="hb-install-")) / "opt" / "hb"
        self.addCleanup(shutil.rmtree, prefix.parents[1], True)
        proc = run(["cmake", "--install", str(build), "--prefix", str(prefix)])
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        service = (prefix / "lib/systemd/user/hermes-bridge.service").read_text()
        self.assertIn(f"\nExecStart={prefix}/bin/hermes-bridge serve ", service)
        for path in ("bin/hermes-bridge", "lib/systemd/user/hermes-bridge.socket",
                     "share/doc/hermes-bridge/README.md", "share/doc/hermes-bridge/docs/configuration.md",
                     "share/man/man1/hermes-bridge.1"):
            self.assertTrue((prefix / path).is_file(), path)


if __name__ == "__main__":
    unittest.main()
