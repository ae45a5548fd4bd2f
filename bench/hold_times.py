#!/usr/bin/python3
"""Hold times: how long the largest requests hold traind's store and scheduler (issue 18).

One traind (one CPU slot). A prober calls GetJob (the store) and SetQueueState GET (the
scheduler's lock) back to back and records each call's latency, through two phases:
  submit   a sweep of 10,000 members (the most one sweep may have), not exclusive, while a long
           job holds the CPU;
  passes   the scheduler's passes (on every wake-up and at least every 2 s) over the 10,000
           queued members, none of which can start while the long job runs.
It reports each phase's duration and the probes' p50 / p99 / max: a request or pass that holds
the store or the scheduler for long shows as a probe max near that long.

  bench/hold_times.py --bin build/bin [--members 10000] [--passes-seconds 10]
"""
import argparse
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak import Daemon, pb, percentile  # noqa: E402  (soak generates the gRPC stubs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--members", type=int, default=10000)
    parser.add_argument("--passes-seconds", type=float, default=10)
    args = parser.parse_args()
    state = tempfile.mkdtemp(prefix="traind-hold.")
    daemon = Daemon(args.bin, state, ["--warm-workers", "0"])
    _, channel, stub = daemon.start()
    try:
        blocker = stub.SubmitJob(pb.SubmitJobRequest(spec=pb.JobSpec(
            model="lenet5", dataset="fashion-mnist", epochs=100, device="cpu", name="blocker")))
        while stub.GetJob(pb.GetJobRequest(id=blocker.id)).state != pb.Job.RUNNING:
            time.sleep(0.05)
        probes = []  # (phase, probe, ms)
        phase = {"name": None}
        stop = threading.Event()

        def prober():
            calls = (("store (GetJob)", lambda: stub.GetJob(pb.GetJobRequest(id=blocker.id))),
                     ("scheduler (queue state)", lambda: stub.SetQueueState(
                         pb.SetQueueStateRequest(action=pb.SetQueueStateRequest.GET))))
            while not stop.is_set():
                for name, call in calls:
                    now = phase["name"]
                    began = time.monotonic()
                    call()
                    if now:
                        probes.append((now, name, (time.monotonic() - began) * 1000))
                time.sleep(0.002)

        thread = threading.Thread(target=prober)
        thread.start()
        seeds = pb.SweepAxis(field="seed", values=[str(i) for i in range(1, args.members + 1)])
        spec = pb.SweepSpec(base=pb.JobSpec(model="mlp", dataset="fake", num_samples=64,
                                            image_size=8, channels=1, device="cpu"),
                            axes=[seeds], name="hold", exclusive=False)
        durations = {}
        phase["name"] = "submit"
        began = time.monotonic()
        sweep = stub.SubmitSweep(pb.SubmitSweepRequest(spec=spec), timeout=600)
        durations["submit"] = time.monotonic() - began
        phase["name"] = "passes"
        began = time.monotonic()
        time.sleep(args.passes_seconds)
        durations["passes"] = time.monotonic() - began
        phase["name"] = None
        stop.set()
        thread.join()
        print(f"A sweep of {len(sweep.job_ids)} members behind a long job: SubmitSweep "
              f"{durations['submit'] * 1000:.0f} ms, then {durations['passes']:.1f} s of "
              f"scheduler passes over them.")
        print()
        print("| phase | probe | calls | p50 ms | p99 ms | max ms |")
        print("|---|---|---|---|---|---|")
        for which in ("submit", "passes"):
            for name in ("store (GetJob)", "scheduler (queue state)"):
                v = [ms for p, n, ms in probes if p == which and n == name]
                print(f"| {which} | {name} | {len(v)} | {percentile(v, 0.5):.2f} | "
                      f"{percentile(v, 0.99):.2f} | {max(v, default=float('nan')):.1f} |")
    finally:
        channel.close()
        daemon.stop()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
