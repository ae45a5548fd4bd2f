#!/usr/bin/env python3
"""What traind's reading of a flooding program's output costs it, measured inside one run (issue
35's flood bar, beside `bench/script_jobs.py --only flood`):

The program prints about 100,000 lines a second while it computes, as the flood does, but in
blocks of four slices of equal work: the first and last slice print to its standard output, the
middle two to a file of its own (block-buffered, as a shell's `> file`). Under traind the output
slices feed traind (the pipe, the runner, the store, a watcher) and the file slices do not, in
the same process, environment and moment. A block's ratio, the file slices' time over the output
slices' time, is then traind's speed against a file with the host's drift cancelled: the slices
are a fraction of a second apart and in mirrored order. The host's speed swings that make the
flood's whole-run ratio wander by 20-60% (docs/benchmarks.md) touch both halves of a block alike.
Each slice ends with a flush, so that no output is left for the next slice's time. The first
blocks of a run, while traind stores a job's first lines and steps at once, are reported apart:
their output slices' extra time is a cost paid once a job, not a rate.

The same program run from a shell with its standard output sent to a file is the control: both
halves then write to files, and its ratio shows what the method itself reads as a difference.

  bench/flood_slices.py [--rounds 3] [--blocks 100] [--lines-per-slice 25000]
                        [--work-per-line 100] [--raw FILE]
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

PROGRAM = """import sys, time
blocks, per_slice, work, report = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
to_file = open("slices.out", "w")
def waiting():  # seconds the main thread was runnable but waiting for a CPU
    with open("/proc/self/schedstat") as f:
        ran, waited, _ = map(int, f.read().split())
    return waited / 1e9 if ran else float("nan")  # 0 0 0: no scheduler statistics
rows, line, total = [], 0, 0
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
        if row:
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


def describe(name, figures):
    speed = [f[0] for f in figures]
    cpu = [f[1] for f in figures]
    low, high = median_interval(speed)
    cpu_low, cpu_high = median_interval(cpu)
    mean = statistics.fmean(speed)
    half = 1.96 * statistics.stdev(speed) / len(speed) ** 0.5
    rate = statistics.median(f[5] for f in figures)
    return (f"{name}: {len(figures)} blocks, the output slices printing {rate:,.0f} lines/s; "
            f"output slices' speed against file slices {summary(speed, '{:.4f}')}, the median's "
            f"95% bootstrap interval {low:.4f}-{high:.4f}, mean {mean:.4f} (95% t interval "
            f"{mean - half:.4f}-{mean + half:.4f}); on-CPU time, file / output "
            f"{summary(cpu, '{:.4f}')} (median's interval {cpu_low:.4f}-{cpu_high:.4f}); "
            f"waiting for a CPU: output slices {summary([f[2] for f in figures], '{:.2f}')}%, "
            f"file slices {summary([f[3] for f in figures], '{:.2f}')}%")


def add(warm_up, steady, figures):
    warm_up += figures[0]
    steady += figures[1]


def main():
    os.environ.pop("PYTHONUNBUFFERED", None)  # as bench/script_jobs.py: a user's shell lacks it
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="runs on each side, alternating")
    parser.add_argument("--blocks", type=int, default=100)
    parser.add_argument("--lines-per-slice", type=int, default=25000)
    parser.add_argument("--work-per-line", type=int, default=100,
                        help="loop iterations between lines: sets the rate")
    parser.add_argument("--raw", metavar="FILE", help="write every block's figures to FILE")
    args = parser.parse_args()
    if args.rounds < 1 or args.blocks < WARM_UP_BLOCKS + 2 or args.lines_per_slice < 1:
        parser.error(f"--rounds takes 1 or more, --blocks {WARM_UP_BLOCKS + 2} or more "
                     f"(the first {WARM_UP_BLOCKS} are left out), --lines-per-slice 1 or more")
    work = pathlib.Path(tempfile.mkdtemp(prefix="slices-bench.", dir="/tmp"))
    directory = work / "program"
    directory.mkdir()
    (directory / "slices.py").write_text(PROGRAM)
    daemon = Daemon(work)
    program_args = [args.blocks, args.lines_per_slice, args.work_per_line]
    sides = {"traind": [], "shell": []}
    warm_up = {"traind": [], "shell": []}
    try:
        settle()
        for _ in range(args.rounds):
            report = work / "traind.report"
            job_id = daemon.ctl("run", "-C", directory, "--device", "cpu", "--", "python3",
                                "slices.py", *program_args, report).stdout.strip()
            daemon.wait(job_id)
            add(warm_up["traind"], sides["traind"], block_figures(report, args.lines_per_slice))
            settle()
            report = work / "shell.report"
            with open(work / "shell.out", "w") as out:
                if subprocess.run([os.environ.get("PYTHON", "/usr/bin/python3"), "slices.py",
                                   *map(str, program_args), report], cwd=directory,
                                  stdout=out).returncode != 0:
                    sys.exit("slices.py from the shell failed")
            add(warm_up["shell"], sides["shell"], block_figures(report, args.lines_per_slice))
            settle()
        print(f"{args.rounds} rounds of {args.blocks} blocks (4 slices of {args.lines_per_slice} "
              f"lines, --work-per-line {args.work_per_line}); the first {WARM_UP_BLOCKS} blocks "
              "of each run left out")
        print(describe("under traind (output to traind, file slices to a file)", sides["traind"]))
        print(describe("from a shell, the control (both to files)", sides["shell"]))
        for side, figures in warm_up.items():
            print(f"{side}, the first {WARM_UP_BLOCKS} blocks of each run: output slices' speed "
                  f"against file slices {summary([f[0] for f in figures], '{:.4f}')}, the output "
                  f"slices' time beyond the file slices' "
                  f"{summary([1000 * f[4] for f in figures], '{:.1f}')} ms a block")
        if args.raw:
            with open(args.raw, "w") as f:
                f.write("side speed cpu_ratio output_waiting_% file_waiting_% output_extra_s "
                        "output_lines_per_s\n")
                for side, figures in sides.items():
                    f.writelines(f"{side} " + " ".join(f"{v:.6f}" for v in figure) + "\n"
                                 for figure in figures)
    finally:
        daemon.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
