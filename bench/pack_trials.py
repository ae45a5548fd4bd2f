#!/usr/bin/env python3
"""A search's small trials packed onto one GPU against the same trials one at a time.

The same random search (the same --search-seed: the same trials, whatever their results) runs twice
per training seed on one warm traind: once as traind decides (a first trial alone measures how
busy it keeps the GPU and how much memory it uses; then as many share the GPU as fit,
server/trial_packing.h) and once with --max-pack 1 (one trial per GPU). Rounds alternate which
goes first (ABBA, by the seed's parity), and each training seed (--seed, every trial's) gives one pair. Printed: each
round's wall time from submit to the search's end, how many trials ran at once at most, traind's
packing line; the ratio unpacked/packed per seed (median, min-max); and each trial's validation
accuracy packed against alone: within the seed-to-seed spread of its runs alone (max - min over
the seeds) or not; with --alone-twice each seed runs one at a time twice too, and how far a
trial's accuracy moved between those two (the GPU's own run-to-run difference)
is printed beside how far packed moved from them. Each round also says a trial's mean seconds from
placement to its first step report (start-up) and from there to its end, and the mean of the
start-up phases its worker logged ("Start-up: ... (dataset 0.43 s, ...)"), how long its worker
took to be ready and how many trials waited for theirs, and how busy the host's cores were.

With --large DATA_DIR, a search of ResNet-18 at batch 256 on the CIFAR-10 files there (real or
random: only its footprint matters) runs too, or with --large fake224 on random 224 px images;
traind must not pack one that fills the GPU.

Usage: bench/pack_trials.py BIN_DIR [--trials 24] [--seeds 3] [--first-seed 1] [--model lenet5] [--epochs 2]
                            [--large CIFAR10_DIR] [--out FILE.json] [--device cpu] [--alone-twice]
                            [--job-flags=--limit-train=2000 ...]
       bench/pack_trials.py - --combine a.json b.json   # the rounds of several runs together
"""
import argparse
import json
import os
import pathlib
import re
import statistics
import subprocess
import tempfile
import time

from bench_cli import seconds, trainctl


def run_times(job_id):
    """When the job was placed (RUNNING), when its first step report came and when it ended."""
    placed = first_step = ended = None
    for line in trainctl("watch", job_id, "--output", "json").splitlines():
        event = json.loads(line)
        state = event.get("stateChange", {}).get("state")
        if state == "RUNNING" and placed is None:
            placed = seconds(event["time"])
        if "step" in event and first_step is None:
            first_step = seconds(event["time"])
        if state in ("SUCCEEDED", "FAILED", "CANCELLED"):
            ended = seconds(event["time"])
    return placed, first_step, ended


STARTUP = re.compile(r"Start-up: ([\d.]+) s in this worker before the first step \((.*)\)")
READY = re.compile(r"the worker was ready ([\d.]+) s after it started and waited ([\d.]+) s")
SERVED = re.compile(r"the worker had run \d+ jobs? before this one .*?waited ([\d.]+) s")
PHASE = re.compile(r"(?:^|, )([A-Za-z][\w -]*?) (?:\([^)]*\) )?([\d.]+) s")


def start_up_in_worker(job_ids):
    """The mean of the trials' start-up phases in their workers, as their logs say them
    ("Start-up: 0.51 s in this worker before the first step (dataset 0.43 s, ...); the worker
    was ready 1.02 s after it started and waited 0.00 s for this job"), and how many trials found
    their worker still loading or preparing (it waited under 0.01 s: the trial waited instead;
    None where the workers do not say), and how many ran in a worker that had served a trial
    before ("the worker had run 3 jobs before this one ... and waited 0.02 s for it")."""
    sums, read, waited, served = {}, 0, 0, 0
    for job in job_ids:
        for line in trainctl("logs", job).splitlines():
            match = STARTUP.search(line)
            if not match:
                continue
            read += 1
            sums["all"] = sums.get("all", 0.0) + float(match[1])
            # "dataset (prepared, from traind's cache) 0.00 s, CUDA graph 0.14 s": each phase's
            # name and seconds, its note in parentheses left out.
            for name, value in PHASE.findall(match[2]):
                sums[name] = sums.get(name, 0.0) + float(value)
            ready = READY.search(line)
            if ready:
                sums["worker ready"] = sums.get("worker ready", 0.0) + float(ready[1])
                sums["worker idle"] = sums.get("worker idle", 0.0) + float(ready[2])
                waited += float(ready[2]) < 0.01
            served += bool(SERVED.search(line))
            break
    if not read:
        return {}, None, 0
    return ({name: total / read for name, total in sums.items()},
            waited if "worker ready" in sums else None, served)


def mean_phases(times):
    """A trial's mean start-up (placed to first step report) and the rest (to its end)."""
    whole = [t for t in times if None not in t]
    if not whole:
        return None, None
    return (statistics.mean(b - a for a, b, _ in whole), statistics.mean(c - b for _, b, c in whole))


def host_cpu_times():
    """The host's CPU time so far, in clock ticks: (busy, all), from /proc/stat (None elsewhere)."""
    try:
        with open("/proc/stat") as stat:
            ticks = [int(v) for v in stat.readline().split()[1:]]
    except OSError:
        return None
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle and iowait
    return sum(ticks) - idle, sum(ticks)


def busy_between(before, after):
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])


def most_at_once(intervals):
    edges = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    now = most = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


SMALL = ["--model", "{model}", "--dataset", "fashion-mnist", "--batch-size", "choice:64,128,256"]


def search(args, seed, packed, what=None, trials=None, epochs=None):
    what = what or [w.format(model=args.model) for w in SMALL]
    flags = ["sweep", *what, "--device", args.device, "--search", "random",
             "--trials", trials or args.trials, "--search-seed", 7, "--lr", "loguniform:1e-3:1e-1",
             "--epochs", epochs or args.epochs, "--seed", seed, *args.job_flags]
    if not packed:
        flags += ["--max-pack", 1]
    began = time.monotonic()
    submitted = time.time()  # traind stamps events with this machine's clock
    cpu_before = host_cpu_times()
    sweep = trainctl(*flags).strip().split()[0]
    trainctl("wait", "--sweep", sweep)
    wall = time.monotonic() - began
    cpu_after = host_cpu_times()
    report = json.loads(trainctl("report", sweep, "--format", "json"))["search"]
    trials = report.get("trials", [])
    times = [run_times(t["jobId"]) for t in trials]
    in_worker, waited_for_worker, served = start_up_in_worker([t["jobId"] for t in trials])
    intervals = [(a, c) for a, _, c in times]
    ran = [i for i in intervals if None not in i]
    start_up, rest = mean_phases(times)
    return {
        "seed": seed, "packed": packed, "sweep": sweep, "wall_seconds": wall,
        # From the first trial's placement to the last one's end, as traind stamped them: `wait`
        # polls at most once a second, which the wall time includes.
        "span_seconds": max(b for _, b in ran) - min(a for a, _ in ran) if ran else None,
        # From submitting the search to its last trial's end: when it finished.
        "finish_seconds": max(b for _, b in ran) - submitted if ran else None,
        "packing": report.get("packing", ""),
        "most_at_once": most_at_once(ran),
        # A trial's mean seconds from placement to its first step report, and from there to its end.
        "start_up_seconds": start_up, "training_seconds": rest,
        "times": times,  # each trial's (placed, first step report, ended), traind's clock
        "start_up_in_worker": in_worker, "waited_for_worker": waited_for_worker,
        "in_served_worker": served,  # trials run by a worker that had run one before
        # How busy the host's cores were from submit to `wait`'s return (which polls: a little
        # idle time at the end): near 100%, the host's CPU, not the GPU, bounds the round.
        "host_busy": busy_between(cpu_before, cpu_after),
        "accuracy": {int(t.get("trial", 0)): t.get("metric") for t in trials},
        "failed": [t.get("trial", 0) for t in trials if t.get("status") == "failed"],
    }


def show(result):
    kind = "packed  " if result["packed"] else "one each"
    span = result.get("span_seconds")
    span = f" (trials {span:.1f} s)" if span is not None else ""
    if result.get("finish_seconds") is not None:
        span += f", finished after {result['finish_seconds']:.2f} s"
    if result.get("start_up_seconds") is not None:
        span += (f", a trial {result['start_up_seconds']:.2f} s to its first step report and "
                 f"{result['training_seconds']:.2f} s more")
    phases = result.get("start_up_in_worker") or {}
    if phases:
        span += " (in its worker: " + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items()) + ")"
    if result.get("waited_for_worker") is not None:
        span += (f", {result['waited_for_worker']} of {len(result['accuracy'])} trials found their "
                 f"worker not ready")
    if result.get("in_served_worker"):
        span += f", {result['in_served_worker']} ran in a worker that had run a trial before"
    if result.get("host_busy") is not None:
        span += f", the host's cores {100 * result['host_busy']:.0f}% busy"
    print(f"seed {result['seed']} {kind}: {result['wall_seconds']:.1f} s{span}, at most "
          f"{result['most_at_once']} at once, failed {result['failed']}; {result['packing']}",
          flush=True)


def accuracy_of(result, k):
    """Trial k's accuracy in a round: JSON keeps the trial numbers as text, a fresh round as ints."""
    return result["accuracy"].get(str(k), result["accuracy"].get(k))


def compare_accuracy(rounds, trials):
    within = 0
    lines = []
    if len({r["seed"] for r in rounds}) < 2:
        # One seed has no spread: every packed result would count as within it.
        return 0, ["(accuracy not compared: the seed-to-seed spread needs 2 or more seeds)"]
    for k in range(trials):
        alone = [accuracy_of(r, k) for r in rounds if not r["packed"]]
        packed = [accuracy_of(r, k) for r in rounds if r["packed"]]
        if None in alone or None in packed:
            lines.append(f"trial {k}: missing a result")
            continue
        spread = max(alone) - min(alone)
        gap = abs(statistics.mean(packed) - statistics.mean(alone))
        ok = gap <= spread
        within += ok
        lines.append(f"trial {k}: alone {statistics.mean(alone):.4f} (spread {spread:.4f}), "
                     f"packed {statistics.mean(packed):.4f}: {'within' if ok else 'OUTSIDE'}")
    return within, lines


def same_seed_gaps(rounds, trials):
    """With two rounds one at a time per seed (--alone-twice): how far a trial's accuracy moved
    between them (the GPU's own run-to-run difference), against how far packed moved from them."""
    alone_gaps, packed_gaps = [], []
    for seed in sorted({r["seed"] for r in rounds}):
        alone = [r for r in rounds if r["seed"] == seed and not r["packed"]]
        packed = [r for r in rounds if r["seed"] == seed and r["packed"]]
        if len(alone) < 2 or not packed:
            continue
        for k in range(trials):
            a, b, p = (accuracy_of(r, k) for r in (alone[0], alone[1], packed[0]))
            if None in (a, b, p):
                continue
            alone_gaps.append(abs(a - b))
            packed_gaps.append(abs(p - (a + b) / 2))
    if not alone_gaps:
        return []
    return [f"same seed, a trial's accuracy one at a time twice: mean gap "
            f"{statistics.mean(alone_gaps):.4f} (max {max(alone_gaps):.4f}); packed against "
            f"their mean: {statistics.mean(packed_gaps):.4f} (max {max(packed_gaps):.4f}); "
            f"{sum(g == 0 for g in alone_gaps)} of {len(alone_gaps)} alone pairs equal bit for "
            f"bit, {sum(p == 0 for p in packed_gaps)} packed equal to their mean"]


def run_large(args, results):
    if args.large == "fake224":
        data = ["--dataset", "fake", "--image-size", "224", "--num-samples", "20480"]
    else:
        data = ["--dataset", "cifar10", "--data-dir", os.path.abspath(args.large)]
    large = search(args, 1, True, ["--model", "resnet18", *data, "--batch-size", "256"],
                   trials=3, epochs=3)
    print(f"ResNet-18 b256 ({args.large}): at most {large['most_at_once']} at once; "
          f"{large['packing']}", flush=True)
    results["large"] = large


def summarize(rounds, trials):
    ratios, span_ratios, finish_ratios = [], [], []
    for seed in sorted({r["seed"] for r in rounds}):
        pair = {r["packed"]: r for r in rounds if r["seed"] == seed}
        if len(pair) < 2:
            continue  # a round cut short
        ratios.append(pair[False]["wall_seconds"] / pair[True]["wall_seconds"])
        if pair[False].get("span_seconds") and pair[True].get("span_seconds"):
            span_ratios.append(pair[False]["span_seconds"] / pair[True]["span_seconds"])
        if pair[False].get("finish_seconds") and pair[True].get("finish_seconds"):
            finish_ratios.append(pair[False]["finish_seconds"] / pair[True]["finish_seconds"])
    if not ratios:
        print("no seed has both rounds")
        return {"ratios": [], "within": 0}
    print(f"one at a time / packed: median {statistics.median(ratios):.2f}x "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}) over {len(ratios)} seeds")
    if span_ratios:
        print(f"  by the trials' span: median {statistics.median(span_ratios):.2f}x "
              f"(min {min(span_ratios):.2f}, max {max(span_ratios):.2f})")
    if finish_ratios:
        print(f"  by when the search finished (submitted to its last trial's end, as traind "
              f"stamped it): median {statistics.median(finish_ratios):.2f}x "
              f"(min {min(finish_ratios):.2f}, max {max(finish_ratios):.2f})")
    within, lines = compare_accuracy(rounds, trials)
    print("\n".join(lines + same_seed_gaps(rounds, trials)))
    print(f"{within} of {trials} trials' accuracy packed within their seed-to-seed spread alone")
    return {"ratios": ratios, "span_ratios": span_ratios, "finish_ratios": finish_ratios,
            "within": within}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--large", help="a CIFAR-10 directory, or fake224 (random 224 px images): "
                        "ResNet-18 at batch 256 too")
    parser.add_argument("--large-first", action="store_true",
                        help="the ResNet-18 search before the small ones")
    parser.add_argument("--out")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--alone-twice", action="store_true",
                        help="each seed one at a time twice: the GPU's own run-to-run difference")
    parser.add_argument("--combine", nargs="+", metavar="FILE.json",
                        help="no run: the summary of the rounds of earlier --out files together")
    parser.add_argument("--device", default="cuda", help="cpu: try the script (nothing packs there)")
    parser.add_argument("--job-flags", action="append", default=[],
                        help="more flags for every trial, e.g. --limit-train=2000")
    parser.add_argument("--traind-flags", action="append", default=[],
                        help="more flags for traind, e.g. --mps=off")
    args = parser.parse_args()
    if args.combine:
        rounds = [r for f in args.combine for r in json.loads(pathlib.Path(f).read_text())["rounds"]]
        for result in rounds:
            show(result)
        summarize(rounds, args.trials)
        return
    state = tempfile.mkdtemp(prefix="pack-trials.", dir="/tmp")
    os.environ["PATH"] = f"{os.path.abspath(args.bin)}:{os.environ['PATH']}"
    os.environ["TRAINCTL_ADDR"] = f"unix:{state}/state/traind.sock"
    command = [f"{args.bin}/traind", "--state-dir", f"{state}/state"]
    if args.large and args.large != "fake224":
        fashion = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
        command += ["--data-root", fashion, "--data-root", os.path.abspath(args.large)]
    command += args.traind_flags
    log = open(pathlib.Path(state) / "traind.log", "w")
    traind = subprocess.Popen(command, stdout=log, stderr=log)
    sock = pathlib.Path(state) / "state" / "traind.sock"
    while not sock.exists():
        time.sleep(0.1)
    results = {"trials": args.trials, "model": args.model, "epochs": args.epochs, "rounds": []}
    try:
        if args.large and args.large_first:
            run_large(args, results)
        if args.seeds > 0:
            # Unmeasured: the daemon's first job prepares the images it keeps (traind's cache)
            # and starts the warm worker, which would count against whichever round came first.
            search(args, 0, False, trials=1, epochs=1)
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            # By the seed's parity, so runs split over several calls (--first-seed) still alternate.
            order = [True, False] if seed % 2 == 1 else [False, True]
            if args.alone_twice:
                order = [False, *order] if seed % 2 == 1 else [*order, False]
            for packed in order:
                result = search(args, seed, packed)
                show(result)
                results["rounds"].append(result)
        if results["rounds"]:
            results.update(summarize(results["rounds"], args.trials))
        if args.large and not args.large_first:
            run_large(args, results)
    finally:
        traind.terminate()
        traind.wait()
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
