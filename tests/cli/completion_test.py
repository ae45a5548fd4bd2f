#!/usr/bin/env python3
"""`trainctl completion bash` driven through bash itself: the script is sourced, COMP_WORDS and
COMP_CWORD are set as bash sets them for a line typed so far, and its function's COMPREPLY is
what a user's Tab would offer. Verbs, flags, model names and job ids (from a real traind:
tests/python/with_daemon.sh starts one). Run:
  tests/python/with_daemon.sh build/bin /usr/bin/python3 tests/cli/completion_test.py
"""
import os
import pathlib
import pty
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tests" / "lib"))
from trainctl_cli import trainctl  # noqa: E402


def tab(line):
    """What Tab offers after `line` (a trailing space: a new word)."""
    words = line.split(" ")
    script = (f"source <(trainctl completion bash)\n"
              f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
              f"COMP_CWORD={len(words) - 1}\n"
              "_trainctl\n"
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    out = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True)
    return [w for w in out.stdout.split("\n") if w]


def zsh_tab(setup, line, expect):
    """What zsh's completion shows after `setup` and `line` + Tab, in an interactive zsh on a pty:
    read until the regular expression `expect` matches (a state, not a duration: under load zsh's
    compinit can take seconds), or a bound that only a broken completion reaches."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp("zsh", ["zsh", "-f", "-i"])

    def read_until(done, seconds=120):
        out, end = "", time.time() + seconds
        while time.time() < end and not done(out):
            if select.select([fd], [], [], 0.1)[0]:
                try:
                    out += os.read(fd, 65536).decode(errors="replace")
                except OSError:
                    break
        return out

    try:
        os.write(fd, (setup + "; print READY\n").encode())
        read_until(lambda out: "READY\r\n" in out)
        os.write(fd, (line + "\t").encode())
        return read_until(lambda out: re.search(expect, out) is not None)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


class CompletionTest(unittest.TestCase):
    def test_verbs_and_subcommands(self):
        self.assertEqual(tab("trainctl sh"), ["show", "shutdown"])
        self.assertIn("submit", tab("trainctl "))
        self.assertNotIn("__complete", tab("trainctl "))
        self.assertEqual(tab("trainctl context a"), ["add"])

    def test_flags_and_their_values(self):
        self.assertIn("--model", tab("trainctl submit --mod"))
        self.assertIn("--epochs", tab("trainctl submit --e"))
        self.assertIn("--addr", tab("trainctl submit --ad"))  # the global ones too
        self.assertEqual(tab("trainctl submit --model lene"), ["lenet5"])
        self.assertIn("fashion-mnist", tab("trainctl submit --model mlp --dataset "))
        self.assertEqual(tab("trainctl submit --device c"), ["cpu", "cuda"])

    def test_job_ids_where_a_verb_takes_one(self):
        job = trainctl("submit", "--model", "mlp", "--dataset", "fake", "--epochs", "1",
                       "--device", "cpu").stdout.strip()
        self.assertIn(job, tab("trainctl show "))
        self.assertIn(job, tab("trainctl logs "))
        self.assertNotIn(job, tab("trainctl submit "))  # submit takes no job id

    def test_other_shells_and_a_wrong_one(self):
        self.assertTrue(trainctl("completion", "zsh").stdout.startswith("#compdef trainctl\n"))
        self.assertIn("complete -c trainctl", trainctl("completion", "fish").stdout)
        wrong = trainctl("completion", "tcsh", check=False)
        self.assertEqual(wrong.returncode, 2, wrong.stderr)


    @unittest.skipIf(shutil.which("zsh") is None, "zsh is not installed")
    def test_zsh_sourced_and_from_fpath(self):
        with tempfile.TemporaryDirectory() as fpath:
            pathlib.Path(fpath, "_trainctl").write_text(trainctl("completion", "zsh").stdout)
            compinit = "PS1='> '; autoload -U compinit; compinit -u"
            sourced = zsh_tab(f"{compinit}; source <(trainctl completion zsh)", "trainctl sh",
                              r"show +shutdown")
            self.assertRegex(sourced, r"show +shutdown")
            from_fpath = zsh_tab(f"fpath=({fpath} $fpath); {compinit}",
                                 "trainctl submit --model lene", "trainctl submit --model lenet5")
            self.assertIn("trainctl submit --model lenet5", from_fpath)


    @unittest.skipIf(shutil.which("fish") is None, "fish is not installed")
    def test_fish(self):
        def fish_tab(line):
            script = f'trainctl completion fish | source; complete -C "{line}"'
            out = subprocess.run(["fish", "--no-config", "-c", script], check=True,
                                 capture_output=True, text=True, timeout=60)
            return out.stdout.split()
        self.assertEqual(fish_tab("trainctl sh"), ["show", "shutdown"])
        self.assertEqual(fish_tab("trainctl submit --model lene"), ["lenet5"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
