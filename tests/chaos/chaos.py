#!/usr/bin/env python3
"""Chaos test: SIGKILL traind and its workers at random moments while a queue of short jobs runs.

Each round waits a random while, sometimes submits or cancels jobs, then kills the daemon and every
worker with SIGKILL (a power cut, as far as the state directory can tell) and starts traind again.
A `trainctl watch` runs across all of it and must see one job's events without a gap. At the end
it waits for the queue to drain and checks the promises of issue 5:

  - every acknowledged submission exists, exactly once (clients resubmit with an idempotency key
    until acknowledged, so a lost acknowledgement never makes a duplicate);
  - every job SUCCEEDED, except the ones whose cancel was acknowledged: those are CANCELLED;
  - nothing is RUNNING without a worker; every job's events are seq 1..last_seq, dense;
  - a result seen once never changes afterwards (finished jobs stay intact);
  - the long watcher's stream is the job's full event list, in order.

  tests/chaos/chaos.py --bin build/bin [--rounds 20] [--seed N] [--keep]
Exit 0 when every invariant holds; prints each violation otherwise.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


class Chaos:
    def __init__(self, bin_dir, state, rng):
        self.bin = bin_dir
        self.state = state
        self.rng = rng
        self.env = dict(os.environ, TRAINCTL_ADDR=f"unix:{state}/traind.sock",
                        TRAINCTL_CONFIG=os.path.join(state, "no-config.toml"))
        self.daemon = None
        self.log = open(os.path.join(state, "traind.log"), "ab")
        self.acked = {}           # idempotency key -> job id
        self.cancelled = set()    # job ids whose cancel was acknowledged
        self.cancelled_running = set()  # ... while running: it may also have finished first
        self.results = {}         # job id -> result first seen when SUCCEEDED
        self.violations = []
        self.kills = 0

    # --- the daemon -------------------------------------------------------------------------
    def start(self):
        self.daemon = subprocess.Popen(
            [os.path.join(self.bin, "traind"), "--state-dir", self.state, "--cancel-grace", "2",
             "--slots", "cpu=2"], stdout=self.log, stderr=self.log)
        for _ in range(200):
            if self.trainctl("devices").returncode == 0:
                return
            time.sleep(0.1)
        raise SystemExit("traind did not come up; see " + self.log.name)

    def children(self, pid):
        kids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) == pid:
                        kids.append(int(entry))
                except (OSError, IndexError, ValueError):
                    pass
        return kids

    def kill_everything(self):
        """SIGKILL traind first (so nobody records the workers' deaths), then its workers."""
        workers = self.children(self.daemon.pid)
        os.kill(self.daemon.pid, signal.SIGKILL)
        self.daemon.wait()
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in workers:  # gone before the next traind looks at the jobs
            while os.path.exists(f"/proc/{pid}") and "Z" not in self.proc_state(pid):
                time.sleep(0.01)
        self.kills += 1

    @staticmethod
    def proc_state(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            return "Z"

    # --- the client -------------------------------------------------------------------------
    def trainctl(self, *args, timeout=60):
        return subprocess.run([os.path.join(self.bin, "trainctl"), *args], env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def submit(self, key, epochs):
        """At-least-once from the client, exactly-once by the key: retry until acknowledged."""
        while True:
            r = self.trainctl("submit", "--model", self.rng.choice(["lenet5", "mlp"]),
                              "--dataset", "fashion-mnist", "--epochs", str(epochs),
                              "--limit-train", "1500", "--limit-test", "300",
                              "--checkpoint-every", "1", "--idempotency-key", key)
            if r.returncode == 0 and r.stdout.strip().isdigit():
                job_id = int(r.stdout.strip())
                if key in self.acked and self.acked[key] != job_id:
                    self.violations.append(f"key {key}: acknowledged as job {self.acked[key]}, "
                                           f"then as job {job_id}")
                self.acked[key] = job_id
                return job_id
            if r.returncode == 2:
                raise SystemExit(f"submit refused: {r.stderr}")
            time.sleep(0.2)  # daemon down or restarting

    def show(self, job_id):
        r = self.trainctl("show", str(job_id), "--output", "json")
        return json.loads(r.stdout) if r.returncode == 0 else None

    def events(self, job_id):
        r = self.trainctl("watch", str(job_id), "--output", "json", timeout=120)
        return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]

    def remember_results(self):
        for key, job_id in self.acked.items():
            job = self.show(job_id)
            if job and job.get("state") == "SUCCEEDED":
                result = job.get("result", {})
                if job_id in self.results and self.results[job_id] != result:
                    self.violations.append(f"job {job_id}: its result changed after it finished")
                self.results.setdefault(job_id, result)

    # --- one run ----------------------------------------------------------------------------
    def run(self, rounds):
        self.start()
        for i in range(12):
            self.submit(f"initial-{i}", epochs=self.rng.choice([2, 3]))
        watched = self.acked["initial-0"]
        watcher = subprocess.Popen(
            [os.path.join(self.bin, "trainctl"), "watch", str(watched), "--output", "json"],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for round_number in range(rounds):
            time.sleep(self.rng.uniform(0.2, 2.5))
            action = self.rng.random()
            if action < 0.55:
                self.submit(f"round-{round_number}", epochs=2)
            elif action < 0.7:
                self.cancel_one()
            self.kill_everything()
            if round_number % 5 == 4:
                time.sleep(0.5)  # now and then a daemon-less pause: clients must wait it out
            self.start()
            self.remember_results()
            print(f"round {round_number + 1}/{rounds}: killed traind and its workers; "
                  f"{len(self.acked)} jobs, {len(self.results)} finished", flush=True)
        self.wait_for_the_queue()
        watched_stream, _ = watcher.communicate(timeout=300)
        self.check(watched, [json.loads(l) for l in watched_stream.splitlines() if l.startswith("{")])
        self.kill_everything()

    def cancel_one(self):
        candidates = [j for j in self.acked.values() if j not in self.cancelled]
        if not candidates:
            return
        job_id = self.rng.choice(candidates)
        r = self.trainctl("cancel", str(job_id))
        if r.returncode == 0:
            self.cancelled.add(job_id)
            if "stopping" in r.stdout:
                self.cancelled_running.add(job_id)

    def wait_for_the_queue(self, limit=600):
        deadline = time.time() + limit
        while time.time() < deadline:
            states = [(self.show(j) or {}).get("state") for j in self.acked.values()]
            if all(s in TERMINAL for s in states):
                return
            time.sleep(1)
        self.violations.append(f"the queue did not drain in {limit} s")

    def check(self, watched, watched_events):
        self.remember_results()
        listed = self.trainctl("list", "--all", "--output", "json")
        jobs = json.loads(listed.stdout).get("jobs", []) if listed.returncode == 0 else []
        ids = sorted(int(j["id"]) for j in jobs)
        if ids != sorted(self.acked.values()):
            self.violations.append(f"stored jobs {ids} != acknowledged {sorted(self.acked.values())}")
        keys = [j.get("idempotencyKey") for j in jobs]
        if len(keys) != len(set(keys)):
            self.violations.append("an idempotency key is stored twice")
        for job in jobs:
            job_id, state = int(job["id"]), job["state"]
            expected = "CANCELLED" if job_id in self.cancelled else "SUCCEEDED"
            # A cancel that reached a running job may lose the race with its last step; one that
            # reached a finished job is refused, never acknowledged.
            if state != expected and not (job_id in self.cancelled_running and state == "SUCCEEDED"):
                reason = job.get("result", {}).get("error", "")
                self.violations.append(f"job {job_id}: {state}, expected {expected} {reason}")
            events = self.events(job_id)
            seqs = [int(e["seq"]) for e in events]
            if seqs != list(range(1, int(job["lastSeq"]) + 1)):
                self.violations.append(f"job {job_id}: events {seqs[:5]}... not 1..{job['lastSeq']}")
            if job_id == watched and [int(e["seq"]) for e in watched_events] != seqs:
                self.violations.append(
                    f"job {job_id}: the watcher that lived through {self.kills} kills saw "
                    f"{len(watched_events)} events, the store has {len(seqs)}")
        print(f"checked {len(jobs)} jobs after {self.kills} SIGKILLs of traind and its workers: "
              f"{sum(j['state'] == 'SUCCEEDED' for j in jobs)} succeeded, "
              f"{len(self.cancelled)} cancelled on request, {len(self.violations)} violations")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="directory with traind, trainctl, traind-worker")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--keep", action="store_true", help="keep the state directory")
    args = parser.parse_args()
    print(f"chaos: {args.rounds} rounds, seed {args.seed} (rerun with --seed to repeat)")
    state = tempfile.mkdtemp(prefix="traind-chaos.")
    chaos = Chaos(os.path.abspath(args.bin), state, random.Random(args.seed))
    try:
        chaos.run(args.rounds)
    finally:
        if chaos.daemon and chaos.daemon.poll() is None:
            chaos.kill_everything()
        if not args.keep:
            subprocess.run(["rm", "-rf", state])
        else:
            print("state kept in", state)
    for violation in chaos.violations:
        print("VIOLATION:", violation)
    sys.exit(1 if chaos.violations else 0)


if __name__ == "__main__":
    main()
