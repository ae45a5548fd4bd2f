"""What the Python benchmarks share: trainctl's output, and the time an event's stamp names."""
import datetime
import subprocess


def trainctl(*args):
    """trainctl ARGS (trainctl on PATH); its stdout. A failure raises."""
    return subprocess.run(["trainctl", *map(str, args)], stdout=subprocess.PIPE, text=True,
                          check=True).stdout


def seconds(stamp):
    """An event's time ("2026-12-05T21:35:23.123456789Z") as Unix seconds."""
    # Nanoseconds cut to what datetime reads.
    whole, _, fraction = stamp.rstrip("Z").partition(".")
    moment = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp() + (float("0." + fraction) if fraction else 0.0)
