#!/usr/bin/python3
"""Load: does watching a job slow it down, and does every watcher see every event?

Side by side in one run, alternating so machine noise hits both alike: the same training job
(LeNet5 on Fashion-MNIST, one epoch, a step event every `--log-every` batches) with no watchers,
and with `--watchers` concurrent WatchJob streams plus one stalled stream (opened and never read,
so gRPC flow control backs it up) and a stream of submissions (one every `--submit-every` s,
queued behind the job). Reports the median epoch time of each, their ratio, traind's own CPU
time during each run, and checks that every live watcher received the job's events
1..last_seq exactly.

The clients would be on other machines; here they share one, so they are one Python process
(threads on gRPC streams through the traind package's client, whose code the build generates
from proto/ into build/python; Debian's python3-grpcio) pinned to the second half of the CPUs, and traind with its workers to the first.

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

HERE = os.path.dirname(os.path.abspath(__file__))
# The build's traind package (its client's generated code): BUILD_DIR, default build.
sys.path.insert(0, os.path.join(HERE, "..", os.environ.get("BUILD_DIR", "build"), "python"))
from alternating import Rounds, cpu_seconds, split_cpus  # noqa: E402
import grpc  # noqa: E402
from traind.client import pb, pb_grpc  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--watchers", type=int, default=50)
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--model", default="lenet5")
    parser.add_argument("--submit-every", type=float, default=0.2,
                        help="seconds between submissions while loaded; 0: none")
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin)
    state = tempfile.mkdtemp(prefix="traind-load.")
    env = dict(os.environ, TRAINCTL_ADDR=f"unix:{state}/traind.sock",
               TRAINCTL_CONFIG=os.path.join(state, "none.toml"))
    log = open(os.path.join(state, "traind.log"), "wb")
    daemon_cpus, client_cpus = split_cpus()
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

    channel = grpc.insecure_channel(f"unix:{state}/traind.sock")
    stub = pb_grpc.TrainerStub(channel)

    def train_once(loaded):
        job = trainctl("submit", "--model", args.model, "--dataset", "fashion-mnist", "--epochs",
                       "1", "--log-every", str(args.log_every)).stdout.strip()
        watchers, stalled, submitter, stop = [], None, None, threading.Event()
        seen = []
        cpu_before = cpu_seconds(daemon.pid)
        if loaded:
            def watch(index):
                for event in stub.WatchJob(pb.WatchJobRequest(id=int(job))):
                    seen[index].append(event.seq)
            seen = [[] for _ in range(args.watchers)]
            watchers = [threading.Thread(target=watch, args=(i,)) for i in range(args.watchers)]
            for w in watchers:
                w.start()
            # Opened and never read: flow control backs it up once its window is full.
            stalled = stub.WatchJob(pb.WatchJobRequest(id=int(job)))

            def submit_stream():
                spec = pb.JobSpec(model="mlp", dataset="fashion-mnist", epochs=1, limit_train=100)
                while not stop.is_set():
                    stub.SubmitJob(pb.SubmitJobRequest(spec=spec, after=[int(job)]))
                    stop.wait(args.submit_every)
            if args.submit_every > 0:
                submitter = threading.Thread(target=submit_stream)
                submitter.start()
        trainctl("watch", job)  # until it ends
        stop.set()
        if submitter:
            submitter.join()
        daemon_cpu = cpu_seconds(daemon.pid) - cpu_before
        shown = json.loads(trainctl("show", job, "-o", "json").stdout)
        last_seq = int(shown["lastSeq"])
        for w in watchers:
            w.join(timeout=120)
        complete = sum(s == list(range(1, last_seq + 1)) for s in seen)
        if stalled:
            stalled.cancel()
        # The queued submissions depend on this job; clear them before the next round.
        queued = json.loads(trainctl("list", "--state", "queued", "--all", "-o", "json").stdout)
        ids = [j["id"] for j in queued.get("jobs", [])]
        if ids:
            trainctl("cancel", *ids)
        trainctl("drain")
        trainctl("resume")
        return shown["result"]["epochSecondsNoEval"][0], complete, len(watchers), last_seq, daemon_cpu

    try:
        rounds = Rounds(args.rounds, train_once, "watchers")
    finally:
        daemon.terminate()
        daemon.wait()
        subprocess.run(["rm", "-rf", state])
    q, l = statistics.median(rounds.quiet), statistics.median(rounds.loaded)
    load = f"{args.watchers} watchers + 1 stalled" + (
        f" + a submission every {args.submit_every} s" if args.submit_every > 0 else "")
    print(f"| job | events | epoch s, alone | epoch s, {load} | slowdown | traind CPU s, alone "
          f"/ loaded | watchers that missed an event |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.model} 1 epoch, log every {args.log_every} | {rounds.events} | {q:.2f} | "
          f"{l:.2f} | {(l / q - 1) * 100:+.1f}% | {statistics.median(rounds.quiet_cpu):.2f} / "
          f"{statistics.median(rounds.loaded_cpu):.2f} | {rounds.misses} of {rounds.clients} |")
    sys.exit(1 if rounds.misses else 0)


if __name__ == "__main__":
    main()
