"""traind's side of a training program run as a job (`trainctl run`, docs/scripts.md).

A program needs none of this to run under traind: its prints become the job's curves. This
package adds what prints cannot do, with only the standard library (torch is used when present):

    import traind
    state = traind.load_checkpoint()            # None on a first start
    start = state["epoch"] + 1 if state else 1
    for epoch in range(start, epochs + 1):
        for batch, (x, y) in enumerate(loader):
            ...
            traind.report(epoch=epoch, epochs=epochs, batch=batch, batches=len(loader), loss=loss)
            if traind.should_stop():            # cancel, or traind shutting down / killed
                traind.save_checkpoint({"epoch": epoch - 1, "model": model.state_dict(), ...})
                raise SystemExit(0)
        traind.save_checkpoint({"epoch": epoch, "model": model.state_dict(), ...})
        traind.report(epoch=epoch, epochs=epochs, val_accuracy=accuracy)
    traind.report(test_accuracy=test_accuracy)

Outside traind every call still works: report() prints, checkpoints go to ./checkpoints, and
SIGTERM keeps Python's default (the program ends). A search's trial with early stopping
(`trainctl sweep --search ... --early-stop asha -- python3 train.py`) pauses in report() at its
rung's epoch, after the checkpoint that loop saves, and later resumes from it like any restart.
"""
import json
import math
import os
import signal
import sys
import tempfile
import threading

__all__ = ["under_traind", "device", "report", "should_stop", "checkpoint_dir", "output_dir",
           "save_checkpoint", "load_checkpoint", "resumed"]

_stop = threading.Event()


def _on_stop(signum, frame):  # noqa: ARG001  (a signal handler's signature)
    _stop.set()


def under_traind():
    """Whether this program runs as a traind job."""
    return "TRAIND_JOB_ID" in os.environ


# Under traind, SIGTERM (cancel, shutdown, traind killed) asks the program to stop where it can
# save its state; traind sends SIGKILL a few seconds later. Only the main thread may set handlers.
if under_traind() and threading.current_thread() is threading.main_thread():
    signal.signal(signal.SIGTERM, _on_stop)


def should_stop():
    """True once traind asked the program to stop (save a checkpoint and exit)."""
    return _stop.is_set()


def device():
    """The device traind chose: "cpu", "cuda" or "mps" (outside traind: the best available)."""
    chosen = os.environ.get("TRAIND_DEVICE")
    if chosen:
        return chosen
    try:
        import torch
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
    except ImportError:
        pass
    return "cpu"


def _directory(variable, default):
    path = os.environ.get(variable) or default
    os.makedirs(path, exist_ok=True)
    return path


def checkpoint_dir():
    """Where checkpoints survive a restart of the job (TRAIND_CHECKPOINT_DIR; ./checkpoints)."""
    return _directory("TRAIND_CHECKPOINT_DIR", "checkpoints")


def output_dir():
    """Where files the job keeps go (TRAIND_OUTPUT_DIR; ./outputs)."""
    return _directory("TRAIND_OUTPUT_DIR", "outputs")


def resumed():
    """True when this start continues an earlier one of the same job (traind restarted it)."""
    return os.environ.get("TRAIND_RESUMED") == "1"


def save_checkpoint(state, name="checkpoint.pt"):
    """Writes `state` (torch.save) whole or not at all: a temporary file, fsynced, renamed."""
    global _saved_since_epoch
    import torch
    directory = checkpoint_dir()
    fd, temporary = tempfile.mkstemp(dir=directory, prefix="." + name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, os.path.join(directory, name))
        _saved_since_epoch = True
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return os.path.join(directory, name)


def load_checkpoint(name="checkpoint.pt", map_location="cpu"):
    """The state last saved by save_checkpoint(name), or None."""
    path = os.path.join(checkpoint_dir(), name)
    if not os.path.exists(path):
        return None
    import torch
    return torch.load(path, map_location=map_location)


def _number(value):
    if hasattr(value, "item"):  # a tensor
        value = value.item()
    value = float(value)
    return value if math.isfinite(value) else str(value)  # JSON has no NaN: "nan" is read


def _memory():
    """The device memory of this process, as traind's built-in jobs report it."""
    torch = sys.modules.get("torch")  # only if the program uses it: never import it here
    if torch is None:
        return {}
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return {"current_allocated_bytes": torch.cuda.memory_allocated(),
                    "driver_allocated_bytes": torch.cuda.memory_reserved()}
        mps = getattr(torch, "mps", None)
        if mps is not None and hasattr(mps, "current_allocated_memory") \
                and torch.backends.mps.is_available():
            return {"current_allocated_bytes": mps.current_allocated_memory(),
                    "driver_allocated_bytes": mps.driver_allocated_memory()}
    except Exception:  # noqa: BLE001  (memory is a nicety: never fail a report for it)
        pass
    return {}


def report(step=None, epoch=None, epochs=None, batch=None, batches=None, loss=None,
           accuracy=None, val_loss=None, val_accuracy=None, test_loss=None, test_accuracy=None,
           lr=None, **anything):
    """Reports metrics as one line traind reads (docs/scripts.md): a step (with loss), an epoch
    (with accuracy or val_accuracy), or the result (test_accuracy). Accuracies are fractions
    (0.91) or percentages (91.0). Device memory is added for CUDA and MPS."""
    line = {}
    if epoch is not None:
        line["epoch"] = f"{int(epoch)}/{int(epochs)}" if epochs else int(epoch)
    if batch is not None:
        line["batch"] = f"{int(batch)}/{int(batches)}" if batches else int(batch)
    if step is not None:
        line["step"] = int(step)
    for key, value in (("loss", loss), ("train_accuracy", accuracy), ("val_loss", val_loss),
                       ("val_accuracy", val_accuracy), ("test_loss", test_loss),
                       ("test_accuracy", test_accuracy), ("lr", lr)):
        if value is not None:
            line[key] = _number(value)
    for key, value in anything.items():
        line[key] = _number(value) if isinstance(value, (int, float)) or hasattr(value, "item") \
            else str(value)
    if loss is not None:
        line.update(_memory())
    summary = epoch is not None and batch is None and step is None and any(
        value is not None for value in (accuracy, val_accuracy, val_loss))
    pause = summary and _pauses_after(int(epoch))
    if pause:
        # Marked before the line: traind reads the line, then finds the mark when the program
        # has ended (script/script_run.cc), and the job is PAUSED rather than stopped.
        with open(os.path.join(checkpoint_dir(), _PAUSED_MARK), "w") as f:
            f.write(f"{int(epoch)}\n")
    print("[traind] " + json.dumps(line), flush=True)
    if summary:
        _end_epoch(pause, int(epoch))


# A search's trial under traind pauses at its rung (TRAIND_PAUSE_AFTER_EPOCH): after the epoch's
# report, if a checkpoint was saved since the last one (the loop above: save_checkpoint, then
# report), the program exits and its trial waits, PAUSED, to be resumed from that checkpoint or
# ended. A program that saves none cannot pause: traind stops it at its rung instead.
_PAUSED_MARK = ".traind-paused"  # common/artifact_names.h kScriptPausedMark
_saved_since_epoch = False


def _pauses_after(epoch):
    rung = os.environ.get("TRAIND_PAUSE_AFTER_EPOCH", "")
    return under_traind() and rung.isdigit() and epoch >= int(rung) > 0 and _saved_since_epoch


def _end_epoch(pause, epoch):
    global _saved_since_epoch
    _saved_since_epoch = False
    if pause:
        print(f"traind: paused after epoch {epoch}, its rung", file=sys.stderr, flush=True)
        raise SystemExit(0)
