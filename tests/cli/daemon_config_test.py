#!/usr/bin/env python3
"""traind's config file through the real binary: a traind started from a TOML file serves where
the file says, the command line overrides the file, --print-config says where each value came
from, and each kind of mistake refuses the start naming the file, line and key, before anything
is created (nothing starts half-configured). Run:
  /usr/bin/python3 tests/cli/daemon_config_test.py build/bin
"""
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

BIN = pathlib.Path(sys.argv.pop(1) if len(sys.argv) > 1 else "build/bin").resolve()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DaemonConfigTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="traind-config-"))
        self.state = self.dir / "state"
        self.config = self.dir / "traind.toml"
        self.env = dict(os.environ, HOME=str(self.dir), XDG_CONFIG_HOME=str(self.dir / "xdg"))
        self.env.pop("TRAIND_CONFIG", None)
        self.env.pop("XDG_STATE_HOME", None)
        self.daemon = None

    def tearDown(self):
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            self.daemon.wait(timeout=60)
        subprocess.run(["rm", "-rf", str(self.dir)], check=False)

    def write(self, text, path=None, mode=0o600):
        path = path or self.config
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
        return path

    def traind(self, *args):
        return subprocess.run([str(BIN / "traind"), *args], env=self.env, capture_output=True,
                              text=True, timeout=60)

    def trainctl(self, *args):
        return subprocess.run([str(BIN / "trainctl"), *args], env=self.env, capture_output=True,
                              text=True, timeout=60)

    def test_a_traind_started_from_the_file_serves_where_it_says(self):
        sock = self.dir / "from-config.sock"
        self.write(f'state-dir = "{self.state}"\nlisten = ["unix:{sock}"]\n'
                   f'http = "127.0.0.1:{free_port()}"\nwarm-workers = 0\n')
        log = self.dir / "traind.log"
        with open(log, "w") as out:
            self.daemon = subprocess.Popen([str(BIN / "traind"), "--config", str(self.config)],
                                           env=self.env, stdout=out, stderr=out)
        for _ in range(600):
            if sock.exists() and self.trainctl("--addr", f"unix:{sock}", "devices").returncode == 0:
                break
            if self.daemon.poll() is not None:
                self.fail(f"traind exited: {log.read_text()}")
            time.sleep(0.1)
        devices = self.trainctl("--addr", f"unix:{sock}", "devices", "--output", "json")
        self.assertEqual(devices.returncode, 0, devices.stderr)
        self.assertIn("cpu", json.dumps(json.loads(devices.stdout)))
        self.assertTrue((self.state / "traind.db").exists())

    def test_print_config_names_each_source_and_the_command_line_wins(self):
        self.write(f'# a comment\nstate-dir = "{self.state}"\nwarm-workers = 3\n'
                   'data-root = ["/srv/a", "/srv/b"]\n')
        shown = self.traind("--config", str(self.config), "--warm-workers", "1", "--print-config")
        self.assertEqual(shown.returncode, 0, shown.stderr)
        lines = {line.split(" ")[0]: line for line in shown.stdout.splitlines()}
        self.assertRegex(lines["state-dir"], rf'= "{self.state}" +# {self.config}:2$')
        self.assertRegex(lines["warm-workers"], r"= 1 +# command line$")
        self.assertRegex(lines["data-root"], rf'= \["/srv/a", "/srv/b"\] +# {self.config}:4$')
        self.assertRegex(lines["checkpoint-minutes"], r"= 10 +# default$")
        self.assertIn("# listen is not set: unix:<state-dir>/traind.sock", shown.stdout)
        self.assertFalse(self.state.exists(), "--print-config created the state directory")

    def test_the_default_file_is_read_where_it_exists(self):
        shown = self.traind("--print-config")
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn(f"no config file ({self.dir}/xdg/traind/traind.toml does not exist)",
                      shown.stdout)
        default = self.write("warm-workers = 2\n", self.dir / "xdg" / "traind" / "traind.toml")
        shown = self.traind("--print-config")
        self.assertRegex(shown.stdout, rf"\nwarm-workers = 2 +# {default}:1\n")
        # TRAIND_CONFIG names a file that must exist.
        self.env["TRAIND_CONFIG"] = str(self.dir / "missing.toml")
        missing = self.traind("--print-config")
        self.assertEqual(missing.returncode, 2)
        self.assertEqual(missing.stderr,
                         f"traind: {self.dir}/missing.toml: cannot read: No such file or directory\n")

    def test_mistakes_refuse_the_start_naming_file_line_and_key(self):
        state = f'state-dir = "{self.state}"\n'
        cases = [
            (state + "warm-worker = 1\n",
             ":2: warm-worker: unknown key; the keys are traind's flags without their dashes "
             "(`traind --help`); did you mean warm-workers?"),
            (state + "\n\nmax-queued-per-token = \"lots\"\n",
             ":4: max-queued-per-token: expected a number, not a string (lots)"),
            (state + "warm-workers = 2\nwarm-workers = 3\n", ":3: "),
            (state + "worker-nice = 40\n", ":2: worker-nice: Value 40 not in range 0 to 19"),
            (state + "checkpoint-minutes = -1\n",
             ":2: checkpoint-minutes: must be 0 or more, got -1"),
            (state + "insecure-loopback = 1\n",
             ":2: insecure-loopback: --insecure-loopback is a switch: true or false, not an "
             "integer"),
            (state + "tls-cert = \"/nonexistent/cert.pem\"\n", ":2: tls-cert: "),
            (state + "print-config = true\n",
             ":2: print-config: only the command line takes --print-config"),
            (state + "state-dir = \"/elsewhere\"\n", ":2: "),
            ("state-dir = \"unterminated\n", ":1: "),
        ]
        for text, message in cases:
            with self.subTest(text=text):
                self.write(text)
                refused = self.traind("--config", str(self.config))
                self.assertEqual(refused.returncode, 2, refused.stderr)
                self.assertTrue(refused.stderr.startswith(f"traind: {self.config}{message}"),
                                refused.stderr)
                self.assertEqual(len(refused.stderr.strip().splitlines()), 1, refused.stderr)
                self.assertFalse(self.state.exists(), "a refused start created its state")

    def test_files_others_may_write_or_read_none_are_refused(self):
        self.write(f'state-dir = "{self.state}"\n', mode=0o666)
        refused = self.traind("--config", str(self.config))
        self.assertEqual(refused.returncode, 2)
        self.assertIn("others than its owner may write it (mode 0666)", refused.stderr)
        self.assertIn(f"chmod go-w {self.config}", refused.stderr)
        if os.geteuid() != 0:  # root reads a file of mode 0000
            self.write(f'state-dir = "{self.state}"\n', mode=0o000)
            refused = self.traind("--config", str(self.config))
            self.assertEqual(refused.stderr,
                             f"traind: {self.config}: cannot read: Permission denied\n")
        self.assertFalse(self.state.exists())

    def test_lines_carry_their_priority_where_journald_reads_them(self):
        """Under systemd, stderr is journald's stream, named by JOURNAL_STREAM=DEVICE:INODE; a
        leading <N> is then the line's priority (journalctl -p). Elsewhere lines stay plain."""
        self.write("warm-worker = 1\n")
        err_path = self.dir / "stderr"
        with open(err_path, "w") as err:
            info = os.fstat(err.fileno())
            env = dict(self.env, JOURNAL_STREAM=f"{info.st_dev}:{info.st_ino}")
            code = subprocess.run([str(BIN / "traind"), "--config", str(self.config)], env=env,
                                  stderr=err, timeout=60).returncode
        self.assertEqual(code, 2)
        self.assertTrue(err_path.read_text().startswith(f"<3>traind: {self.config}:1: warm-worker"),
                        err_path.read_text())
        # The variable names another stream: plain lines.
        refused = subprocess.run([str(BIN / "traind"), "--config", str(self.config)],
                                 env=dict(self.env, JOURNAL_STREAM="1:2"), capture_output=True,
                                 text=True, timeout=60)
        self.assertTrue(refused.stderr.startswith("traind: "), refused.stderr)

    def test_man_page_comes_from_the_flag_table(self):
        page = self.traind("--man-page")
        self.assertEqual(page.returncode, 0, page.stderr)
        self.assertTrue(page.stdout.startswith(".\\\" Written by traind"), page.stdout[:80])
        # Every visible flag of --help is in it.
        help_text = self.traind("--help").stdout
        for word in help_text.split():
            if word.startswith("--") and word.rstrip(",").isascii():
                flag = word.rstrip(",").split("=")[0]
                self.assertIn(flag.replace("-", "\\-"), page.stdout, flag)
        self.assertNotIn("man\\-page", page.stdout)  # the hidden flag


if __name__ == "__main__":
    unittest.main(verbosity=2)
