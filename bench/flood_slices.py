#!/usr/bin/env python3
"""What traind's reading of a flooding program's output costs it, measured inside one run (issue
35's flood bar, beside `bench/script_jobs.py --only flood`):

The program prints about 100,000 lines a second or more while it computes, as the flood does,
but in blocks of four slices of equal work: the first and last slice print to its standard
output, the middle two to a file (block-buffered, as a shell's `> file`). Under traind the output
slices feed traind (the pipe, the runner, the store, a watcher) and the file slices do not, in
the same process, environment and moment. A block's ratio, the file slices' time over the output
slices' time, is then traind's speed against a file with the host's drift cancelled: the slices
are a fraction of a second apart and in mirrored order. The host's speed swings that make the
flood's whole-run ratio wander by 20-60% (docs/benchmarks-history.md) touch both halves of a block alike.
Each slice ends with a flush and then, untimed, a wait until the output's reader has taken every
byte (a pipe holds a whole slice), so that traind's reading of a slice does not fall into the
next one, and its lag is not charged to the program, which would not wait for it.
The first blocks of a run, while traind stores a job's first lines and steps at once, are
reported apart: their output slices' extra time is a cost paid once a job, not a rate.

With one busy thread the program leaves the machine's other CPUs to traind. `--busy N` has it
start N processes that spin for the whole run (inside the job, at its nice value, and from the
shell alike): a program using every core, where traind's own CPU time competes with it.

The same program run from a shell with its standard output sent to a file is the control: both
halves then write to files, and its ratio shows what the method itself reads as a difference.

Under traind the program also reads the CPU time of its reader (its parent: the runner,
traind-script) and of the reader's parent (traind) over the run, from /proc: the CPU each spends
per million lines of output, the cost that competes with the program when no CPU is free.

  bench/flood_slices.py [--rounds 3] [--blocks 100] [--lines-per-slice 25000]
                        [--work-per-line 100] [--busy 0] [--raw FILE]
Environment: BUILD_DIR (default build), PYTHON (the program's interpreter; default
/usr/bin/python3).
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

from script_jobs import Daemon, median_interval, settle, summary

PROGRAM = """import fcntl, os, struct, subprocess, sys, termios, time
blocks, per_slice, work, file_path, busy, report = sys.argv[1:7]
blocks, per_slice, work, busy = int(blocks), int(per_slice), int(work), int(busy)
to_file = open(file_path, "w")
def waiting():  # seconds the main thread was runnable but waiting for a CPU
    with open("/proc/self/schedstat") as f:
        ran, waited, _ = map(int, f.read().split())
    return waited / 1e9 if ran else float("nan")  # 0 0 0: no scheduler statistics
def cpu_seconds(pid):  # a process's user + system CPU, its ended threads' included, and its parent
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan"), 0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), int(fields[1])
def drained(sink):  # until its reader has taken every byte (a pipe holds a whole slice)
    while struct.unpack("i", fcntl.ioctl(sink.fileno(), termios.FIONREAD, b"0000"))[0] > 0:
        time.sleep(0.0005)
rows, line, total = [], 0, 0
# --busy: processes that keep the other CPUs busy for the whole run, as a program using every core
spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
# The reader's CPU (under traind: the runner, traind-script) and its parent's (traind).
reader = os.getppid()
reader_cpu0, daemon = cpu_seconds(reader)
daemon_cpu0, _ = cpu_seconds(daemon)
try:
    for block in range(blocks):
        for sink_name in ("output", "file", "file", "output"):
            sink = sys.stdout if sink_name == "output" else to_file
            start, on_cpu, waited = time.perf_counter(), time.thread_time(), waiting()
            for _ in range(per_slice):
                for k in range(work):
                    total += k * k
                print(f"Epoch 1, Batch {line}: loss {1.0 / (line + 1):.4f}", file=sink)
                line += 1
            sink.flush()
            rows.append(f"{block} {sink_name} {time.perf_counter() - start:.6f} "
                        f"{time.thread_time() - on_cpu:.6f} {waiting() - waited:.6f}")
            drained(sink)  # not timed: a program does not wait for its reader, nor the next slice
finally:
    for spinner in spinners:
        spinner.kill()
time.sleep(0.1)  # the reader's handling of the last lines it read
rows.append(f"cpu {cpu_seconds(reader)[0] - reader_cpu0:.3f} {cpu_seconds(daemon)[0] - daemon_cpu0:.3f}")
with open(report, "w") as f:  # not printed: the store keeps only a budget of lines
    f.write("\\n".join(rows) + "\\n")
"""

WARM_UP_BLOCKS = 2  # left out of each run: traind stores a job's first lines and steps at once


def block_figures(report, lines_per_slice):
    """Per block: (file time / output time, file CPU / output CPU, the output slices' and the file
    slices' shares of their time spent waiting for a CPU in %, output time - file time in s, the
    output slices' lines a second), as two lists: the warm-up blocks and the rest."""
    blocks = {}
    for row in report.read_text().split("\n"):
        if row and not row.startswith("cpu "):
            block, sink, elapsed, on_cpu, waited = row.split()
            sums = blocks.setdefault(int(block), {"output": [0, 0, 0], "file": [0, 0, 0]})[sink]
            for i, value in enumerate(map(float, (elapsed, on_cpu, waited))):
                sums[i] += value
    figures = []
    for block in sorted(blocks):
        out, to_file = blocks[block]["output"], blocks[block]["file"]
        figures.append((to_file[0] / out[0], to_file[1] / out[1], 100 * out[2] / out[0],
                        100 * to_file[2] / to_file[0], out[0] - to_file[0],
                        2 * lines_per_slice / out[0]))
    return figures[:WARM_UP_BLOCKS], figures[WARM_UP_BLOCKS:]


def reader_cpu(report, output_lines):
    """The CPU seconds per million output lines of the program's reader and of the reader's parent
    over the run (under traind: the runner and traind; from a shell: the bench itself)."""
    for row in report.read_text().split("\n"):
        if row.startswith("cpu "):
            return tuple(1e6 * float(v) / output_lines for v in row.split()[1:])
    sys.exit(f"{report} has no cpu row")


def describe(name, runs):
    """runs: each run's steady blocks' figures."""
    figures = [f for run in runs for f in run]
    speed = [f[0] for f in figures]
    low, high = median_interval(speed)
    cpu_low, cpu_high = median_interval([f[1] for f in figures])
    per_run = ", ".join(f"{statistics.median(f[0] for f in run):.4f}" for run in runs)
    rate = statistics.median(f[5] for f in figures)
    return (f"{name}: {len(figures)} blocks, the output slices printing {rate:,.0f} lines/s; "
            f"output slices' speed against file slices {summary(speed, '{:.4f}')}, the median's "
            f"95% bootstrap interval {low:.4f}-{high:.4f} (the blocks taken as independent); each "
            f"run's median {per_run}; on-CPU time, file / output "
            f"{summary([f[1] for f in figures], '{:.4f}')} (median's interval "
            f"{cpu_low:.4f}-{cpu_high:.4f}); waiting for a CPU, mean [max]: output slices "
            f"{statistics.fmean(f[2] for f in figures):.2f}% [{max(f[2] for f in figures):.2f}], "
            f"file slices {statistics.fmean(f[3] for f in figures):.2f}% "
            f"[{max(f[3] for f in figures):.2f}]")


def run_job(daemon, directory, program_args):
    job_id = daemon.ctl("run", "-C", directory, "--device", "cpu", "--", "python3", "slices.py",
                        *program_args).stdout.strip()
    daemon.wait(job_id)


def run_shell(work, directory, program_args):
    with open(work / "shell.out", "w") as out:
        if subprocess.run([os.environ.get("PYTHON", "/usr/bin/python3"), "slices.py",
                           *map(str, program_args)], cwd=directory, stdout=out).returncode != 0:
            sys.exit("slices.py from the shell failed")


def print_results(args, runs, warm_up, cpu):
    print(f"{args.rounds} rounds of {args.blocks} blocks (4 slices of {args.lines_per_slice} "
          f"lines, --work-per-line {args.work_per_line}, --busy {args.busy}); the first "
          f"{WARM_UP_BLOCKS} blocks of each run reported apart")
    print(describe("under traind (output to traind, file slices to a file)", runs["traind"]))
    print(describe("from a shell, the control (both to files)", runs["shell"]))
    print(f"CPU seconds per million output lines, each run: the runner (traind-script) "
          f"{summary([c[0] for c in cpu], '{:.2f}')}, traind {summary([c[1] for c in cpu], '{:.2f}')}")
    for side, figures in warm_up.items():
        print(f"{side}, the first {WARM_UP_BLOCKS} blocks of each run: output slices' speed "
              f"against file slices {summary([f[0] for f in figures], '{:.4f}')}, the output "
              f"slices' time beyond the file slices' "
              f"{summary([1000 * f[4] for f in figures], '{:.1f}')} ms a block")
    if args.raw:
        with open(args.raw, "w") as f:
            f.write("side run speed cpu_ratio output_waiting_% file_waiting_% "
                    "output_extra_s output_lines_per_s\n")
            for side, side_runs in runs.items():
                for number, figures in enumerate(side_runs, 1):
                    f.writelines(f"{side} {number} " + " ".join(f"{v:.6f}" for v in figure)
                                 + "\n" for figure in figures)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs on each side, alternating")
    parser.add_argument("--blocks", type=int, default=100)
    parser.add_argument("--lines-per-slice", type=int, default=25000)
    parser.add_argument("--work-per-line", type=int, default=100,
                        help="loop iterations between lines: sets the rate")
    parser.add_argument("--busy", type=int, default=0,
                        help="processes the program starts to keep the other CPUs busy (on both "
                             "sides): a machine with no core to spare")
    parser.add_argument("--raw", metavar="FILE", help="write every block's figures to FILE")
    args = parser.parse_args()
    if (args.rounds < 1 or args.blocks < WARM_UP_BLOCKS + 2 or args.lines_per_slice < 1
            or args.work_per_line < 0 or args.busy < 0):
        parser.error(f"--rounds takes 1 or more, --blocks {WARM_UP_BLOCKS + 2} or more (the "
                     f"first {WARM_UP_BLOCKS} are left out), --lines-per-slice 1 or more, "
                     "--work-per-line and --busy 0 or more")
    return args


def main():
    os.environ.pop("PYTHONUNBUFFERED", None)  # as bench/script_jobs.py: a user's shell lacks it
    args = parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="slices-bench.", dir="/tmp"))
    directory = work / "program"  # uploaded for each job: the program alone
    directory.mkdir()
    (directory / "slices.py").write_text(PROGRAM)
    daemon = Daemon(work)
    # The file slices write outside the uploaded folder (and the file is new each run).
    program_args = [args.blocks, args.lines_per_slice, args.work_per_line, work / "slices.out",
                    args.busy]
    runs = {"traind": [], "shell": []}
    warm_up = {"traind": [], "shell": []}
    cpu = []  # per traind run: the runner's and traind's CPU seconds per million output lines
    try:
        settle()
        for _ in range(args.rounds):
            for side in ("traind", "shell"):
                report = work / f"{side}.report"
                if side == "traind":
                    run_job(daemon, directory, [*program_args, report])
                else:
                    run_shell(work, directory, [*program_args, report])
                first, steady = block_figures(report, args.lines_per_slice)
                if side == "traind":
                    cpu.append(reader_cpu(report, 2 * args.blocks * args.lines_per_slice))
                warm_up[side] += first
                runs[side].append(steady)
                settle()
        print_results(args, runs, warm_up, cpu)
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
