"""What the Python tests share to drive the real trainctl binary (found on PATH, as the tests'
wrappers tests/python/with_daemon.sh and tests/dashboard/with_dashboard.sh set it): run a verb,
read a job, wait for a state, and type into a terminal (a pty) as a user would."""
import json
import os
import select
import shutil
import subprocess
import time
import pty


def trainctl(*args, check=True, timeout=900):
    """trainctl ARGS; its CompletedProcess (text). `check`: an exit code other than 0 fails."""
    result = subprocess.run(["trainctl", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"trainctl {args} exited {result.returncode}: {result.stderr}")
    return result


def show(job_id):
    """The job as `trainctl -o json show` prints it."""
    return json.loads(trainctl("--output", "json", "show", job_id).stdout)


def wait_until(what, predicate, seconds=600):
    """predicate()'s first true value, asked every 50 ms; a failure naming `what` after `seconds`
    (an upper bound for a broken run, not a duration any test relies on)."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Terminal:
    """A command typed at a shell prompt, in a pseudo-terminal: it draws for a terminal, and
    Ctrl-C is a keystroke (the line discipline turns it into SIGINT for its process group)."""

    def __init__(self, *args, cwd=None):
        # args[0] is the program ("trainctl"). PATH may name the build's bin relatively: it is
        # resolved before the chdir.
        found = shutil.which(args[0])
        if found is None:
            raise AssertionError(f"no {args[0]} on PATH")
        program = os.path.abspath(found)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: never returns into the test
            try:
                if cwd:
                    os.chdir(cwd)
                os.execv(program, list(map(str, args)))
            finally:
                os._exit(127)
        self.screen = b""

    def read_until(self, text, seconds=300):
        """The screen so far, once `text` is on it."""
        deadline = time.monotonic() + seconds
        while text.encode() not in self.screen:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; the terminal shows "
                                     f"{self.screen[-2000:]!r}")
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    self.screen += os.read(self.fd, 65536)
                except OSError:  # the child ended: no more output
                    break
        return self.text()

    def text(self):
        return self.screen.decode(errors="replace").replace("\r", "")

    def ctrl_c(self):
        os.write(self.fd, b"\x03")

    def finish(self):
        """The command's exit status as a shell reports it (128 + N for signal N), once it ends;
        the rest of its output is read first, so that it is never blocked writing."""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.screen += chunk
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)
