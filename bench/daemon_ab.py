#!/usr/bin/python3
"""The daemon itself, two builds side by side: restart and `trainctl list` on a store of 10,000
ended jobs, and the step events' latency from worker to watcher with both cores busy.

For each build a state of `--jobs` ended jobs is made with that build (a sweep submitted with the
queue paused, then cancelled: the store's rows and events, no job directories). Then, `--rounds`
times, alternating the builds (ABBA): traind started on its state until `trainctl list --limit 1`
answers (the restart), then `trainctl list` (its first page) timed `--lists` times; and a short
soak (`bench/soak.py --jobs --soak-jobs`, its own fresh state) whose step events' p99 is read from
its report. Prints each round and, per build, the medians with min-max, and B/A.

  bench/daemon_ab.py A_BIN B_BIN [--jobs 10000] [--rounds 4] [--lists 5] [--soak-jobs 200]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def trainctl(bin_dir, state, *args, check=True):
    return subprocess.run([f"{bin_dir}/trainctl", "--addr", f"unix:{state}/traind.sock",
                           *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=check)


def start(bin_dir, state):
    """traind on `state`; (process, seconds until ListJobs answered)."""
    began = time.monotonic()
    log = open(os.path.join(state, "ab.log"), "a")
    traind = subprocess.Popen([f"{bin_dir}/traind", "--state-dir", state], stdout=log,
                              stderr=log)
    while trainctl(bin_dir, state, "list", "--limit", "1", check=False).returncode != 0:
        if traind.poll() is not None:
            raise SystemExit(f"traind exited; see {state}/ab.log")
        time.sleep(0.01)
    return traind, time.monotonic() - began


def stop(traind):
    traind.terminate()
    traind.wait(timeout=120)


def make_state(bin_dir, jobs):
    state = tempfile.mkdtemp(prefix="daemon-ab.", dir="/tmp")
    traind, _ = start(bin_dir, state)
    trainctl(bin_dir, state, "pause")
    sweep_file = os.path.join(state, "sweep.yaml")
    with open(sweep_file, "w") as f:
        f.write("base: {model: mlp, dataset: fake, epochs: 1}\n")
        f.write("grid:\n  seed: [" + ", ".join(str(i) for i in range(jobs)) + "]\n")
    sweep = trainctl(bin_dir, state, "sweep", sweep_file).stdout.split()[0]
    trainctl(bin_dir, state, "cancel", "--sweep", sweep)
    trainctl(bin_dir, state, "resume")
    stop(traind)
    return state


def soak_p99(bin_dir, jobs):
    out = subprocess.run([sys.executable, os.path.join(HERE, "soak.py"), "--bin", bin_dir,
                          "--jobs", str(jobs), "--sample-every", str(jobs)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    match = re.search(r"p99 ([0-9.]+) ms", out)
    if not match:
        raise SystemExit("soak.py printed no p99:\n" + out)
    return float(match.group(1))


def summary(values):
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--lists", type=int, default=5)
    parser.add_argument("--soak-jobs", type=int, default=200)
    args = parser.parse_args()
    bins = {"A": os.path.abspath(args.a), "B": os.path.abspath(args.b)}
    states = {name: make_state(path, args.jobs) for name, path in bins.items()}
    results = {name: {"restart": [], "list": [], "p99": []} for name in bins}
    try:
        for round_ in range(args.rounds):
            order = ["A", "B"] if round_ % 2 == 0 else ["B", "A"]
            for name in order:
                traind, restart = start(bins[name], states[name])
                lists = []
                for _ in range(args.lists):
                    began = time.monotonic()
                    trainctl(bins[name], states[name], "list")
                    lists.append(time.monotonic() - began)
                stop(traind)
                p99 = soak_p99(bins[name], args.soak_jobs)
                results[name]["restart"].append(restart)
                results[name]["list"].append(statistics.median(lists))
                results[name]["p99"].append(p99)
                print(f"round {round_ + 1} {name}: restart {restart:.3f} s, list "
                      f"{1000 * statistics.median(lists):.1f} ms, event p99 {p99:.1f} ms",
                      flush=True)
        for what, unit in (("restart", "s"), ("list", "s"), ("p99", "ms")):
            a, b = results["A"][what], results["B"][what]
            print(f"{what}: A {summary(a)} {unit}, B {summary(b)} {unit}, B/A "
                  f"{statistics.median(b) / statistics.median(a):.3f}")
    finally:
        for state in states.values():
            shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
