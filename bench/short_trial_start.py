#!/usr/bin/env python3
"""How soon a small trial's first step comes after traind places it, on a warm CPU daemon.

A job's `RUNNING` state change is stored when the scheduler places it; its first step event when
its first batch has trained. The difference is the start of a short trial: a warm worker taking the
request, reading and preparing the data, building the model, the first step. Fashion-MNIST's
60,000 images, an MLP, one epoch of --batches batches; one job at a time on an idle daemon.

Round 1 prepares the images and keeps them in traind's cache (data/prepared_cache.h); the next
rounds map them. Prints each round and the median of rounds 2..N with min-max.

Usage: bench/short_trial_start.py BIN_DIR [--rounds 6] [--model mlp]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

from bench_cli import seconds, trainctl


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--model", default="mlp")
    args = parser.parse_args()
    state = tempfile.mkdtemp(prefix="short-start.", dir="/tmp")
    os.environ["XDG_STATE_HOME"] = state
    os.environ["PATH"] = f"{os.path.abspath(args.bin)}:{os.environ['PATH']}"
    log = open(pathlib.Path(state) / "traind.log", "w")
    traind = subprocess.Popen([f"{args.bin}/traind"], stdout=log, stderr=log)
    sock = pathlib.Path(state) / "traind" / "traind.sock"
    while not sock.exists():
        time.sleep(0.1)
    try:
        starts = []
        for round_ in range(1, args.rounds + 1):
            time.sleep(2)  # the warm worker replaced, the machine idle
            job = trainctl("submit", "--model", args.model, "--dataset", "fashion-mnist",
                           "--device", "cpu", "--epochs", "1", "--limit-test", "1000").strip()
            trainctl("wait", job)
            placed = first_step = None
            startup = ""
            for line in trainctl("watch", job, "--output", "json").splitlines():
                event = json.loads(line)
                change = event.get("stateChange", {})
                if change.get("state") == "RUNNING" and placed is None:
                    placed = seconds(event["time"])
                if "step" in event and first_step is None:
                    first_step = seconds(event["time"])
                text = event.get("log", {}).get("text", "")
                if text.startswith("Start-up:"):
                    startup = text
            start = first_step - placed
            starts.append(start)
            print(f"round {round_}: first step {start:.3f} s after placement; {startup}",
                  flush=True)
        later = starts[1:]
        print(f"rounds 2..{args.rounds}: median {statistics.median(later):.3f} s "
              f"(min {min(later):.3f}, max {max(later):.3f}); round 1 (preparing): {starts[0]:.3f} s")
    finally:
        traind.terminate()
        traind.wait()


if __name__ == "__main__":
    main()
