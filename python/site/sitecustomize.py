"""Under traind only (traind-script puts this folder on a program's PYTHONPATH and sets
TRAIND_STDOUT_FLUSH_MS): the program's stdout reaches traind through a pipe, so Python buffers
it in blocks, and a line printed once a minute would wait in the buffer. Line by line
(PYTHONUNBUFFERED) costs a program printing 100,000 lines a second a write(2) per line. So stdout
stays buffered and a daemon thread flushes it every TRAIND_STDOUT_FLUSH_MS: a line is at traind
within that time, at any rate of printing. stderr is Python's own: line by line.

Then the sitecustomize this one shadows (Debian's, which installs apport's hook) runs as it would
have.
"""
import os
import sys


def _flush_stdout_periodically(interval):
    import threading
    import time

    lock = threading.Lock()  # held by the flusher while it flushes

    def flusher():
        while True:
            time.sleep(interval)
            with lock:
                try:
                    sys.stdout.flush()
                except Exception:  # noqa: BLE001  (closed, replaced, a broken pipe: not ours)
                    pass

    # A fork (a DataLoader's workers) must not happen mid-flush: the child would inherit the
    # buffer's lock held by a thread it does not have.
    os.register_at_fork(before=lock.acquire, after_in_parent=lock.release,
                        after_in_child=lock.release)
    # Nor may the interpreter shut down mid-flush: a daemon thread frozen holding the buffer's
    # lock makes Python's own last flush abort ("could not acquire lock ... at interpreter
    # shutdown"). At exit the flusher is stopped (its lock kept) before that flush.
    import atexit
    atexit.register(lock.acquire)
    threading.Thread(target=flusher, name="traind-stdout-flush", daemon=True).start()


def _run_shadowed_sitecustomize():
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        path = os.path.join(entry or os.getcwd(), "sitecustomize.py")
        if os.path.abspath(entry or os.getcwd()) == here or not os.path.isfile(path):
            continue
        spec = importlib.util.spec_from_file_location("_shadowed_sitecustomize", path)
        try:
            spec.loader.exec_module(importlib.util.module_from_spec(spec))
        except Exception:  # noqa: BLE001  (as site.py does: a broken sitecustomize is not fatal)
            pass
        return


_milliseconds = os.environ.get("TRAIND_STDOUT_FLUSH_MS")
if _milliseconds and _milliseconds.isdigit() and int(_milliseconds) > 0:
    _flush_stdout_periodically(int(_milliseconds) / 1000)
_run_shadowed_sitecustomize()
