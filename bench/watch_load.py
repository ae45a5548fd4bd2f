#!/usr/bin/env python3
"""Load: does watching a job slow it down, and does every watcher see every event?

Side by side in one run, alternating so machine noise hits both alike: the same training job
(LeNet5 on Fashion-MNIST, one epoch, a step event every `--log-every` batches) with no watchers,
and with `--watchers` concurrent `trainctl watch -o json` clients plus one stalled watcher (a
client whose output nobody reads, so its stream backs up) and a stream of submissions (one every
0.2 s, queued behind the job). Reports the median epoch time of each and their ratio, and checks
that every live watcher received the job's events 1..last_seq exactly.

The clients would be on other machines; here they share one, so they are pinned to the second
half of the CPUs and traind (with its workers) to the first half, and what the slowdown measures is
the daemon's own work — fan-out, catch-up reads, submissions — next to the training it serves.

  bench/watch_load.py --bin build/bin [--rounds 3] [--watchers 50] [--log-every 5]
Prints a markdown table; exit 1 if a watcher missed or duplicated an event.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--watchers", type=int, default=50)
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--model", default="lenet5")
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin)
    state = tempfile.mkdtemp(prefix="traind-load.")
    env = dict(os.environ, TRAINCTL_ADDR=f"unix:{state}/traind.sock",
               TRAINCTL_CONFIG=os.path.join(state, "none.toml"))
    log = open(os.path.join(state, "traind.log"), "wb")
    cpus = sorted(os.sched_getaffinity(0))
    half = max(1, len(cpus) // 2)
    daemon_cpus, client_cpus = set(cpus[:half]), set(cpus[half:] or cpus)
    daemon = subprocess.Popen([os.path.join(bin_dir, "traind"), "--state-dir", state],
                              stdout=log, stderr=log,
                              preexec_fn=lambda: os.sched_setaffinity(0, daemon_cpus))
    os.sched_setaffinity(0, client_cpus)  # this script and every client it starts
    print(f"traind on CPUs {sorted(daemon_cpus)}, clients on {sorted(client_cpus)}", file=sys.stderr)

    def trainctl(*a, **kw):
        return subprocess.run([os.path.join(bin_dir, "trainctl"), *a], env=env,
                              capture_output=True, text=True, **kw)

    for _ in range(100):
        if trainctl("devices").returncode == 0:
            break
        time.sleep(0.1)

    def train_once(loaded):
        job = trainctl("submit", "--model", args.model, "--dataset", "fashion-mnist", "--epochs",
                       "1", "--log-every", str(args.log_every)).stdout.strip()
        watchers, stalled, submitter, stop = [], None, None, threading.Event()
        if loaded:
            watchers = [subprocess.Popen([os.path.join(bin_dir, "trainctl"), "watch", job, "-o",
                                          "json"], env=env, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
                        for _ in range(args.watchers)]
            # Nobody reads this one's stdout: once the pipe is full its stream stalls.
            stalled = subprocess.Popen([os.path.join(bin_dir, "trainctl"), "watch", job, "-o",
                                        "json"], env=env, stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL)

            def submit_stream():
                while not stop.is_set():
                    trainctl("submit", "--model", "mlp", "--dataset", "fashion-mnist",
                             "--after", job, "--epochs", "1", "--limit-train", "100")
                    stop.wait(0.2)
            submitter = threading.Thread(target=submit_stream)
            submitter.start()
        trainctl("watch", job)  # until it ends
        stop.set()
        if submitter:
            submitter.join()
        shown = json.loads(trainctl("show", job, "-o", "json").stdout)
        last_seq = int(shown["lastSeq"])
        complete = 0
        for w in watchers:
            out, _ = w.communicate(timeout=120)
            seqs = [int(json.loads(l)["seq"]) for l in out.splitlines() if l.startswith("{")]
            complete += seqs == list(range(1, last_seq + 1))
        if stalled:
            stalled.kill()
            stalled.wait()
        # The queued submissions depend on this job; clear them before the next round.
        queued = json.loads(trainctl("list", "--state", "queued", "--all", "-o", "json").stdout)
        ids = [j["id"] for j in queued.get("jobs", [])]
        if ids:
            trainctl("cancel", *ids)
        trainctl("drain")
        trainctl("resume")
        return shown["result"]["epochSecondsNoEval"][0], complete, len(watchers), last_seq

    quiet, loaded, misses = [], [], 0
    events = 0
    try:
        for r in range(args.rounds):
            seconds, _, _, _ = train_once(False)
            quiet.append(seconds)
            seconds, complete, total, events = train_once(True)
            loaded.append(seconds)
            misses += total - complete
            print(f"round {r + 1}: no watchers {quiet[-1]:.2f} s, {total} watchers {seconds:.2f} s, "
                  f"{complete}/{total} watchers saw all {events} events", file=sys.stderr)
    finally:
        daemon.terminate()
        daemon.wait()
        subprocess.run(["rm", "-rf", state])
    q, l = statistics.median(quiet), statistics.median(loaded)
    print("| job | events | epoch s, no watchers | epoch s, %d watchers + 1 stalled + submissions |"
          " slowdown | watchers that missed an event |" % args.watchers)
    print("|---|---|---|---|---|---|")
    print(f"| {args.model} 1 epoch, log every {args.log_every} | {events} | {q:.2f} | {l:.2f} | "
          f"{(l / q - 1) * 100:+.1f}% | {misses} of {args.watchers * args.rounds} |")
    sys.exit(1 if misses else 0)


if __name__ == "__main__":
    main()
