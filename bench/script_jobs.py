#!/usr/bin/env python3
"""Script jobs (`trainctl run`, docs/scripts.md) against the same program run from a shell, side
by side, rounds alternating, medians [min-max] (issue 35's benchmarks):

  start     from invoking `trainctl run` to the program's first line, less the same from invoking
            the interpreter in a shell: traind's overhead (upload check, queue, runner, working
            copy) beyond the interpreter's own start.
  flood     a program printing about 100,000 lines a second while it computes (--work-per-line
            sets the rate): its own run time under traind against a shell with its output to a
            file, block-buffered (the ratio; 1.00 = as fast), the share of its run time its main
            thread spent blocked or waiting for a CPU on each side (/proc/self/schedstat: how a
            reader of its output could slow it, measured without the core speed's noise), and
            traind's peak resident memory before and after.
  resubmit  a 500 MB working directory sent once, then again after a one-file edit: what the
            second run sent.
  sandbox   what running programs in the bubblewrap sandbox (traind --script-sandbox, docs/
            security.md) adds to a program's start: two trainds, one sandboxing and one not, a
            job on each in turn; from the runner's "Running ..." event (the program started) to
            the program's first line, and from invoking `trainctl run` to that line.

  bench/script_jobs.py [--rounds 5] [--only start,flood,resubmit,sandbox]
                       [--pin-cpu N | --at-once A,B]
                       [--raw FILE]
Environment: BUILD_DIR (default build), PYTHON (the interpreter of the program; default
/usr/bin/python3), TRAIND_FLAGS (more traind flags, e.g. "--worker-nice 0").
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

NAN = float("nan")

ROOT = pathlib.Path(__file__).resolve().parents[1]
BIN = ROOT / os.environ.get("BUILD_DIR", "build") / "bin"
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")

FIRST_LINE = "import time\nprint(f'T {time.time():.6f}', flush=True)\n"
FLOOD = """import os, sys, time
lines, work, report = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
if len(sys.argv) > 4:  # --pin-cpu: the same core on both sides, one nothing else is given
    os.sched_setaffinity(0, {int(sys.argv[4])})
def schedstat():  # the main thread's seconds on a CPU, and runnable but waiting for one
    with open("/proc/self/schedstat") as f:  # the thread group's leader: this thread
        ran, waiting, _ = map(int, f.read().split())
    # A kernel without scheduler statistics says 0 0 0.
    return time.thread_time(), waiting / 1e9 if ran else float("nan")
start = time.perf_counter()
on_cpu0, waiting0 = schedstat()
total = 0
for i in range(lines):
    for k in range(work):
        total += k * k
    print(f"Epoch 1, Batch {i}: loss {1.0 / (i + 1):.4f}")
sys.stdout.flush()
elapsed = time.perf_counter() - start
on_cpu, waiting = schedstat()
cpu = time.process_time()
with open(report, "w") as f:  # not printed: the store keeps only a budget of lines
    f.write(f"{elapsed:.6f} {cpu:.6f} {total} {on_cpu - on_cpu0:.6f} {waiting - waiting0:.6f}")
"""


def settle(busy_below=0.1, window=0.5, give_up=30):
    """Waits until the machine's CPUs are idle, busy for less than busy_below of a window (from
    /proc/stat), and returns the seconds it waited: traind's warm worker loads LibTorch after the
    daemon starts, which would slow the first round's program."""
    start = time.monotonic()
    def busy_and_total():
        with open("/proc/stat") as f:
            ticks = list(map(int, f.readline().split()[1:]))
        idle = ticks[3] + ticks[4]  # idle, iowait
        return sum(ticks) - idle, sum(ticks)
    deadline = time.monotonic() + give_up
    while time.monotonic() < deadline:
        busy0, total0 = busy_and_total()
        time.sleep(window)
        busy1, total1 = busy_and_total()
        if busy1 - busy0 < busy_below * max(1, total1 - total0):
            break
    return time.monotonic() - start


def summary(values, fmt="{:.3f}"):
    values = [v for v in values if v == v]  # NaN: not known
    if not values:
        return "n/a"
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-" \
           f"{fmt.format(max(values))}]"


def median_interval(values, confidence=0.95, resamples=10000):
    """A bootstrap interval for the median (percentile method, fixed seed): how far the median
    itself could move with other rounds, which min-max does not say."""
    import random
    rng = random.Random(1)
    medians = sorted(statistics.median(rng.choices(values, k=len(values)))
                     for _ in range(resamples))
    tail = (1 - confidence) / 2
    return medians[int(tail * resamples)], medians[int((1 - tail) * resamples) - 1]


class Daemon:
    def __init__(self, root, cpus=None, flags=()):
        self.state = root / "state"
        self.log = open(root / "traind.log", "w")
        self.process = subprocess.Popen(
            [str(BIN / "traind"), "--state-dir", str(self.state), "--python",
             f"python3={PYTHON}", "--slots", "cpu=1",
             *os.environ.get("TRAIND_FLAGS", "").split(), *flags], stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
        self.addr = f"unix:{self.state}/traind.sock"
        while self.ctl("devices", check=False).returncode != 0:
            if self.process.poll() is not None:
                sys.exit(f"traind did not start: {root / 'traind.log'}")
            time.sleep(0.1)

    def ctl(self, *args, check=True):
        result = subprocess.run([str(BIN / "trainctl"), "--addr", self.addr, *map(str, args)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if check and result.returncode != 0:
            sys.exit(f"trainctl {args}: {result.stderr}")
        return result

    def wait(self, job_id):
        self.ctl("watch", job_id, "--output", "json", check=False)
        job = json.loads(self.ctl("show", job_id, "--output", "json").stdout)
        if job["state"] != "SUCCEEDED":
            sys.exit(f"job {job_id}: {job}")
        return [json.loads(line) for line in
                self.ctl("logs", job_id, "--output", "json").stdout.splitlines() if line]

    def peak_rss_mib(self):
        with open(f"/proc/{self.process.pid}/status") as f:
            return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1)) / 1024

    def cpu_seconds(self):
        """traind's own CPU time so far (user + system), from /proc."""
        with open(f"/proc/{self.process.pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.process.terminate()
        self.process.wait()


def bench_start(daemon, work, rounds):
    directory = work / "start"
    directory.mkdir()
    (directory / "first.py").write_text(FIRST_LINE)
    traind, shell = [], []
    for _ in range(rounds):
        begin = time.time()
        job_id = daemon.ctl("run", "-C", directory, "--device", "cpu", "--", "python3",
                            "first.py").stdout.strip()
        texts = [e["log"]["text"] for e in daemon.wait(job_id) if "log" in e]
        traind.append(float(next(t for t in texts if t.startswith("T ")).split()[1]) - begin)
        begin = time.time()
        out = subprocess.run([PYTHON, "first.py"], cwd=directory, stdout=subprocess.PIPE,
                             text=True).stdout
        shell.append(float(out.split()[1]) - begin)
    overhead = [t - s for t, s in zip(traind, shell)]
    print(f"start: to the first line: traind {summary(traind)} s, shell {summary(shell)} s; "
          f"traind's overhead {summary(overhead)} s ({rounds} rounds)")


def bench_sandbox(work, rounds):
    directory = work / "sandbox"
    directory.mkdir()
    (directory / "first.py").write_text(FIRST_LINE)
    sides = {}
    for mode in ("bubblewrap", "none"):
        root = work / f"daemon-{mode}"
        root.mkdir()
        sides[mode] = (Daemon(root, flags=("--script-sandbox", mode)), [], [])
    try:
        for round_number in range(rounds):
            # Alternating which goes first, so that neither always runs on a warmer machine.
            order = ("bubblewrap", "none") if round_number % 2 == 0 else ("none", "bubblewrap")
            for mode in order:
                daemon, from_start, from_run = sides[mode]
                begin = time.time()
                job_id = daemon.ctl("run", "-C", directory, "--device", "cpu", "--", "python3",
                                    "first.py").stdout.strip()
                events = daemon.wait(job_id)
                first = float(next(e["log"]["text"] for e in events if "log" in e and
                                   e["log"]["text"].startswith("T ")).split()[1])
                running = next(e for e in events if "log" in e and
                               e["log"]["text"].startswith("Running "))
                seconds, _, fraction = running["time"].rstrip("Z").partition(".")
                started = time.mktime(time.strptime(seconds, "%Y-%m-%dT%H:%M:%S")) - time.timezone
                started += float("0." + fraction) if fraction else 0
                from_start.append(first - started)
                from_run.append(first - begin)
    finally:
        for daemon, _, _ in sides.values():
            daemon.stop()
    _, sandboxed, sandboxed_run = sides["bubblewrap"]
    _, unconfined, unconfined_run = sides["none"]
    added = [a - b for a, b in zip(sandboxed, unconfined)]
    print(f"sandbox: program started to its first line: sandboxed {summary(sandboxed)} s, "
          f"unconfined {summary(unconfined)} s; the sandbox adds {summary(added)} s "
          f"(each round's difference); ratio {statistics.median(sandboxed) / statistics.median(unconfined):.2f}")
    print(f"sandbox: `trainctl run` to the first line: sandboxed {summary(sandboxed_run)} s, "
          f"unconfined {summary(unconfined_run)} s ({rounds} rounds, alternating)")


def read_report(report):
    """(elapsed, cpu, blocked_share, waiting_share): the program's run time and CPU time, and the
    main thread's share of its run time spent neither running nor waiting (blocked: a full pipe, a
    lock, the GIL; under traind only, the GIL includes sitecustomize's flushing thread) and runnable
    but waiting for a CPU (contention). These two are how a reader of its output could slow it
    down; unlike the run time they do not move with the core's speed. Both are NaN ("n/a") where the
    kernel keeps no scheduler statistics."""
    elapsed, cpu, _, on_cpu, waiting = map(float, report.read_text().split())
    blocked = max(0.0, elapsed - on_cpu - waiting) if waiting == waiting else float("nan")
    return elapsed, cpu, blocked / elapsed, waiting / elapsed


def bench_flood(daemon, work, rounds, lines, per_line_work, pins, raw=None, settle_each=False):
    """pins: [] (the program where the scheduler puts it), [N] (on CPU N, each side in turn) or
    [A, B] (both sides at once, on A and B, swapping each round). settle_each: before each side
    (one after the other only), wait for idle CPUs, so that what the previous run left behind
    (traind storing a finished job, the bench's trainctl calls) slows neither side."""
    directory = work / "flood"
    directory.mkdir()
    (directory / "flood.py").write_text(FLOOD)
    before = daemon.peak_rss_mib()
    settle()
    traind, shell = [], []
    traind_cpu, shell_cpu, daemon_cpu = [], [], []
    traind_blocked, shell_blocked, traind_waiting, shell_waiting = [], [], [], []
    # Seconds waited for idle CPUs before each side, and traind's CPU time while waiting before
    # the job (work it did after the previous run ended).
    settled_job, settled_shell, daemon_cpu_settling = [], [], []
    job_report, shell_report = work / "flood.job", work / "flood.shell"
    for round_ in range(rounds):
        job_pin = pins[round_ % len(pins)] if pins else None
        shell_pin = pins[(round_ + 1) % len(pins)] if pins else None
        job_args = [lines, per_line_work, job_report] + ([job_pin] if pins else [])
        shell_args = [lines, per_line_work, shell_report] + ([shell_pin] if pins else [])
        with open(work / "flood.out", "w") as out:
            shell_run = lambda: subprocess.Popen([PYTHON, "flood.py", *map(str, shell_args)],
                                                 cwd=directory, stdout=out)
            # One after the other, the shell side goes first in odd rounds: what follows a job
            # in traind (its result stored, its watcher ending) then slows either side alike.
            at_once = len(pins) == 2
            settle_each = settle_each and not at_once
            shell_first = at_once or round_ % 2 == 1

            def start_shell():
                if settle_each:
                    settled_shell.append(settle())
                return shell_run()
            program = start_shell() if shell_first else None
            if shell_first and not at_once and program.wait() != 0:
                sys.exit("flood.py from the shell failed")
            if settle_each:
                cpu_before = daemon.cpu_seconds()
                settled_job.append(settle())
                daemon_cpu_settling.append(daemon.cpu_seconds() - cpu_before)
            cpu_before = daemon.cpu_seconds()
            job_id = daemon.ctl("run", "-C", directory, "--device", "cpu", "--", "python3",
                                "flood.py", *job_args).stdout.strip()
            daemon.wait(job_id)
            daemon_cpu.append(daemon.cpu_seconds() - cpu_before)
            if program is None:
                program = start_shell()
            if program.wait() != 0:
                sys.exit("flood.py from the shell failed")
        for report, times, cpus, blocked, waiting in (
                (job_report, traind, traind_cpu, traind_blocked, traind_waiting),
                (shell_report, shell, shell_cpu, shell_blocked, shell_waiting)):
            elapsed, cpu, blocked_share, waiting_share = read_report(report)
            times.append(elapsed)
            cpus.append(cpu)
            blocked.append(100 * blocked_share)
            waiting.append(100 * waiting_share)
    ratio = [s / t for t, s in zip(traind, shell)]
    low, high = median_interval(ratio)
    # What a reader can cost the program, without the core speed's noise: the share of its run
    # time it was held up (blocked or waiting for a CPU) under traind beyond that from the shell.
    held = [tb + tw - (sb + sw) for tb, tw, sb, sw in
            zip(traind_blocked, traind_waiting, shell_blocked, shell_waiting)]
    held_low, held_high = median_interval(held) if all(h == h for h in held) else (NAN, NAN)
    if raw:
        with open(raw, "w") as f:
            f.write("round traind_s shell_s traind_cpu_s shell_cpu_s traind_blocked_% "
                    "shell_blocked_% traind_waiting_% shell_waiting_%"
                    + (" settled_job_s settled_shell_s daemon_cpu_settling_s" if settled_job
                       else "") + "\n")
            settled = (zip(settled_job, settled_shell, daemon_cpu_settling) if settled_job
                       else [()] * rounds)
            for row in enumerate((a + b for a, b in zip(
                    zip(traind, shell, traind_cpu, shell_cpu, traind_blocked, shell_blocked,
                        traind_waiting, shell_waiting), settled)), 1):
                f.write(" ".join([str(row[0])] + [f"{v:.6f}" for v in row[1]]) + "\n")
    where = ("" if not pins else f", the program on CPU {pins[0]} and traind off it"
             if len(pins) == 1 else f", both sides at once on CPUs {pins[0]} and {pins[1]} "
             "(swapped each round) and traind off them")
    print(f"flood: {lines} lines, {lines / statistics.median(shell):,.0f} lines/s from the shell"
          f"{where}; run time traind {summary(traind)} s, shell (to a file) {summary(shell)} s; "
          f"traind's speed against the shell {summary(ratio, '{:.3f}')}, the median's 95% "
          f"bootstrap interval {low:.3f}-{high:.3f}; the program's own CPU "
          f"time traind {summary(traind_cpu)} s, shell {summary(shell_cpu)} s; traind's own CPU "
          f"time per job (its serving this bench's watch included) {summary(daemon_cpu)} s; "
          f"the program's main thread blocked for {summary(traind_blocked, '{:.2f}')}% of its "
          f"run time under traind, {summary(shell_blocked, '{:.2f}')}% from the shell, and "
          f"waiting for a CPU {summary(traind_waiting, '{:.2f}')}% and "
          f"{summary(shell_waiting, '{:.2f}')}%; held up under traind beyond the shell "
          f"{summary(held, '{:.2f}')}% (the median's 95% interval {held_low:.2f}-"
          f"{held_high:.2f}%); "
          + (f"waited for idle CPUs before the job {summary(settled_job, '{:.2f}')} s, before "
             f"the shell {summary(settled_shell, '{:.2f}')} s, traind's CPU time meanwhile "
             f"{summary(daemon_cpu_settling)} s; " if settled_job else "")
          + f"traind's peak RSS "
          f"{before:.0f} MiB before, {daemon.peak_rss_mib():.0f} MiB after ({rounds} rounds)")


def bench_resubmit(daemon, work, megabytes):
    directory = work / "big"
    (directory / "data").mkdir(parents=True)
    for i in range(megabytes // 10):
        (directory / "data" / f"shard{i:03d}.bin").write_bytes(os.urandom(10 << 20))
    (directory / "train.py").write_text("print('version 1')\n")
    timings, sent = [], []
    for version in (1, 2):
        if version == 2:
            (directory / "train.py").write_text("print('version 2')\n")
        begin = time.time()
        result = daemon.ctl("run", "-C", directory, "--device", "cpu", "--max-upload-mib",
                            megabytes + 10, "--", "python3", "train.py")
        timings.append(time.time() - begin)
        sent.append(re.search(r"working directory: .*", result.stderr).group(0))
        daemon.wait(result.stdout.strip())
    print(f"resubmit: {megabytes} MB working directory; first run: {sent[0]} in "
          f"{timings[0]:.2f} s; after a one-file edit: {sent[1]} in {timings[1]:.2f} s")


def main():
    # A user's shell does not set it (some tool environments do): with it the shell side would
    # write line by line and look slower than it is.
    os.environ.pop("PYTHONUNBUFFERED", None)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", default="start,flood,resubmit")
    parser.add_argument("--lines", type=int, default=500000)
    parser.add_argument("--work-per-line", type=int, default=200,
                        help="loop iterations between lines: sets the rate (~100,000 lines/s)")
    parser.add_argument("--megabytes", type=int, default=500)
    parser.add_argument("--raw", metavar="FILE",
                        help="flood: write each round's figures to FILE, one line a round")
    parser.add_argument("--pin-cpu", type=int,
                        help="flood: run the program on this CPU alone (each side in turn) and "
                             "traind, its runner and the clients on the others: takes the "
                             "scheduler's placement out of the comparison")
    parser.add_argument("--settle-each", action="store_true",
                        help="flood: before each side's run, wait for idle CPUs (and report how "
                             "long, and traind's CPU time meanwhile)")
    parser.add_argument("--at-once", metavar="A,B",
                        help="flood: run both sides at the same time, on CPUs A and B (swapped "
                             "each round), traind and the rest on the others: the host's speed "
                             "from moment to moment then hits both alike")
    args = parser.parse_args()
    pins = ([int(cpu) for cpu in args.at_once.split(",")] if args.at_once
            else [] if args.pin_cpu is None else [args.pin_cpu])
    if len(pins) > 2 or (args.at_once and len(set(pins)) != 2):
        sys.exit("--at-once takes two different CPUs, e.g. --at-once 14,15")
    work = pathlib.Path(tempfile.mkdtemp(prefix="script-bench.", dir="/tmp"))
    others = None
    if pins:
        others = os.sched_getaffinity(0) - set(pins)
        if not others:
            sys.exit("no CPU left for traind besides the program's")
        os.sched_setaffinity(0, others)  # this bench and its trainctl calls too
    daemon = Daemon(work, others)
    try:
        print(f"commit {subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, text=True, stdout=subprocess.PIPE).stdout.strip()}, "
              f"{os.cpu_count()} CPUs, {PYTHON}")
        only = args.only.split(",")
        if "start" in only:
            bench_start(daemon, work, args.rounds)
        if "flood" in only:
            bench_flood(daemon, work, args.rounds, args.lines, args.work_per_line, pins, args.raw,
                        args.settle_each)
        if "resubmit" in only:
            bench_resubmit(daemon, work, args.megabytes)
        if "sandbox" in only:
            bench_sandbox(work, args.rounds)
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
