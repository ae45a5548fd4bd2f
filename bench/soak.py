#!/usr/bin/python3
"""Soak: many tiny jobs through one running traind, with the queue and watchers busy.

One traind (--slots cpu=2, so both cores train) takes `--jobs` tiny training jobs (an MLP on
64 generated 8x8 images, a step event every batch). A submitter keeps `--queue-depth` jobs queued;
`--watchers` clients each follow every Nth job from before it starts to its end, timing every step
event from the worker's own timestamp (JobEvent.time) to its receipt. Every `--sample-every`
finished jobs it samples traind's resident memory, threads and open files, and times
`trainctl list` and a ListJobs call. At the end it stops traind (whose log then states the
latency to each point inside the daemon: pipe, store commit, watcher wake-up, gRPC write),
restarts it on the same state and times how long until it answers.

Targets (issue 18): memory flat after warm-up, `list` < 100 ms, restart < 2 s, event delivery p99
< 50 ms with both cores busy. Prints markdown; exit 1 if a target is missed or a watcher saw a
gap in a job's events.

  bench/soak.py --bin build/bin [--jobs 10000] [--watchers 4] [--queue-depth 50]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# The build generates the gRPC code into BUILD_DIR/python (traind's Python package).
sys.path.insert(0, os.path.join(HERE, "..", os.environ.get("BUILD_DIR", "build"), "python"))
import grpc  # noqa: E402
from traind.client import pb, pb_grpc  # noqa: E402

TERMINAL = {pb.Job.SUCCEEDED, pb.Job.FAILED, pb.Job.CANCELLED}


def proc_status(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def cpu_busy():
    """(busy, total) jiffies of all CPUs since boot."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def percentile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


class Daemon:
    def __init__(self, bin_dir, state, extra):
        self.bin_dir, self.state, self.extra = bin_dir, state, extra
        self.env = dict(os.environ, TRAINCTL_ADDR=f"unix:{state}/traind.sock",
                        TRAINCTL_CONFIG=os.path.join(state, "none.toml"))
        self.proc = None

    def start(self):
        """Starts traind; returns seconds until a ListJobs call is answered."""
        log = open(os.path.join(self.state, "traind.log"), "ab")
        began = time.monotonic()
        self.proc = subprocess.Popen(
            [os.path.join(self.bin_dir, "traind"), "--state-dir", self.state, *self.extra],
            stdout=log, stderr=log)
        while True:
            # A new channel each try, with subchannels of its own, so that it cannot inherit a
            # failed try's reconnect back-off (1 s, then 1.6x: gRPC may share subchannels between
            # channels to one target). Side by side on a 300-job state it made no difference
            # (docs/benchmarks-history.md, soak, session 12).
            channel = grpc.insecure_channel(f"unix:{self.state}/traind.sock",
                                            options=[("grpc.use_local_subchannel_pool", 1)])
            stub = pb_grpc.TrainerStub(channel)
            try:
                stub.ListJobs(pb.ListJobsRequest(page_size=1), timeout=1, wait_for_ready=False)
                return time.monotonic() - began, channel, stub
            except grpc.RpcError:
                channel.close()
                if self.proc.poll() is not None or time.monotonic() - began > 60:
                    raise SystemExit("traind did not come up; see " + log.name)
                time.sleep(0.005)

    def stop(self):
        subprocess.run([os.path.join(self.bin_dir, "trainctl"), "shutdown"], env=self.env,
                       capture_output=True, timeout=120)
        self.proc.wait(timeout=120)

    def trainctl(self, *args):
        return subprocess.run([os.path.join(self.bin_dir, "trainctl"), *args], env=self.env,
                              capture_output=True, text=True, timeout=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--watchers", type=int, default=4)
    parser.add_argument("--queue-depth", type=int, default=50)
    parser.add_argument("--sample-every", type=int, default=1000)
    parser.add_argument("--traind-arg", action="append", default=[],
                        help="extra traind flag (repeatable), e.g. --traind-arg=--warm-workers=0")
    parser.add_argument("--keep", action="store_true", help="keep the state directory")
    parser.add_argument("--measure-after", type=int, default=0,
                        help="time events of jobs from the Nth on (the machine busy with "
                             "something else before)")
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin)
    state = tempfile.mkdtemp(prefix="traind-soak.")
    daemon = Daemon(bin_dir, state, ["--slots", "cpu=2", *args.traind_arg])
    startup, channel, stub = daemon.start()
    print(f"traind up in {startup:.2f} s; state in {state}", file=sys.stderr)

    spec = pb.JobSpec(model="mlp", dataset="fake", num_samples=64, image_size=8, channels=1,
                      batch_size=16, epochs=1, log_every=1, device="cpu", threads=1,
                      name="soak")
    lock = threading.Condition()
    submitted, finished = [], set()   # job ids
    latencies_ms = []                 # every live step event: worker stamp -> receipt
    slowest = []                      # (ms, job id, seq, stamped): the tail, to look into
    gaps, failed = [], []
    stop = threading.Event()

    def submitter():
        while len(submitted) < args.jobs and not stop.is_set():
            with lock:
                lock.wait_for(lambda: len(submitted) - len(finished) < args.queue_depth
                              or stop.is_set())
            if stop.is_set():
                return
            job = stub.SubmitJob(pb.SubmitJobRequest(spec=spec), timeout=30)
            with lock:
                submitted.append(job.id)
                lock.notify_all()

    def watcher(index):
        for n in range(index, args.jobs, args.watchers):
            with lock:
                lock.wait_for(lambda: len(submitted) > n or stop.is_set())
                if stop.is_set():
                    return
                job_id = submitted[n]
            watch_began = time.time()
            seqs, mine, slow, state = [], [], [], None
            for event in stub.WatchJob(pb.WatchJobRequest(id=job_id), timeout=600):
                received = time.time()
                seqs.append(event.seq)
                stamped = event.time.seconds + event.time.nanos / 1e9
                if event.HasField("step") and stamped > watch_began:
                    mine.append((received - stamped) * 1000)
                    if mine[-1] >= 100:
                        slow.append((mine[-1], job_id, event.seq, stamped))
                if event.HasField("state_change"):
                    state = event.state_change.state
            with lock:
                if seqs != list(range(1, len(seqs) + 1)):
                    gaps.append(job_id)
                if state != pb.Job.SUCCEEDED:
                    failed.append(job_id)
                if n >= args.measure_after:
                    latencies_ms.extend(mine)
                    slowest.extend(slow)
                # Jobs end in order of id within a watcher's share, and every job is someone's.
                finished.add(job_id)
                lock.notify_all()

    samples = []

    def sample(done):
        before = time.monotonic()
        listed = daemon.trainctl("list")
        list_ms = (time.monotonic() - before) * 1000
        before = time.monotonic()
        stub.ListJobs(pb.ListJobsRequest(), timeout=30)
        rpc_ms = (time.monotonic() - before) * 1000
        pid = daemon.proc.pid
        samples.append(dict(done=done, rss_mib=proc_status(pid, "VmRSS") / 1024,
                            threads=proc_status(pid, "Threads"),
                            fds=len(os.listdir(f"/proc/{pid}/fd")),
                            list_ms=list_ms, rpc_ms=rpc_ms, list_ok=listed.returncode == 0))
        s = samples[-1]
        print(f"{done} jobs: traind {s['rss_mib']:.1f} MiB, {s['threads']} threads, "
              f"{s['fds']} fds; trainctl list {list_ms:.0f} ms, ListJobs {rpc_ms:.1f} ms",
              file=sys.stderr)

    busy0, total0 = cpu_busy()
    began = time.monotonic()
    threads = [threading.Thread(target=submitter)] + [
        threading.Thread(target=watcher, args=(i,)) for i in range(args.watchers)]
    for t in threads:
        t.start()
    try:
        next_sample = args.sample_every
        while True:
            with lock:
                lock.wait_for(lambda: len(finished) >= min(next_sample, args.jobs), timeout=600)
                done = len(finished)
            if done >= min(next_sample, args.jobs):
                sample(done)
                next_sample += args.sample_every
            if done >= args.jobs:
                break
            if not any(t.is_alive() for t in threads):
                raise SystemExit("the clients stopped early")
    finally:
        stop.set()
        with lock:
            lock.notify_all()
        for t in threads:
            t.join(timeout=60)
    elapsed = time.monotonic() - began
    busy1, total1 = cpu_busy()
    busy_share = (busy1 - busy0) / max(1, total1 - total0)

    channel.close()
    log_path = os.path.join(state, "traind.log")
    log_size = os.path.getsize(log_path)
    daemon.stop()
    with open(log_path) as f:
        f.seek(log_size)
        stages = [line.strip() for line in f if "step events, worker to" in line]
    restarts = []
    for _ in range(3):
        seconds, channel, stub = daemon.start()
        restarts.append(seconds)
        before = time.monotonic()
        daemon.trainctl("list")
        after_restart_list_ms = (time.monotonic() - before) * 1000
        channel.close()
        daemon.stop()
    disk_mib = int(subprocess.run(["du", "-sm", state], capture_output=True, text=True)
                   .stdout.split()[0])

    warm = [s for s in samples if s["done"] >= min(2000, args.jobs)]
    rss_growth = warm[-1]["rss_mib"] - warm[0]["rss_mib"] if warm else float("nan")
    list_max = max(s["list_ms"] for s in samples)
    p50, p99 = percentile(latencies_ms, 0.5), percentile(latencies_ms, 0.99)
    print(f"\n{args.jobs} jobs in {elapsed / 60:.1f} min ({args.jobs / elapsed:.1f} jobs/s), "
          f"CPUs {busy_share * 100:.0f}% busy, {args.watchers} watchers, queue depth "
          f"{args.queue_depth}; state {disk_mib} MiB on disk\n")
    print("| jobs done | traind RSS MiB | threads | open fds | `trainctl list` ms | ListJobs ms |")
    print("|---|---|---|---|---|---|")
    for s in samples:
        print(f"| {s['done']} | {s['rss_mib']:.1f} | {s['threads']} | {s['fds']} | "
              f"{s['list_ms']:.0f} | {s['rpc_ms']:.1f} |")
    print(f"\nStep events of jobs {args.measure_after} and later, worker's timestamp to a watcher's receipt: {len(latencies_ms)} events, "
          f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, max {max(latencies_ms, default=0):.1f} ms")
    over = lambda ms: sum(1 for x in latencies_ms if x >= ms)
    print(f"  {over(100)} events took 100 ms or more, {over(1000)} a second or more" +
          ("; the slowest: " if slowest else "") + ", ".join(f"{ms:.0f} ms (job {job} seq {seq}, stamped {time.strftime('%H:%M:%S', time.gmtime(t))} UTC)"
                    for ms, job, seq, t in sorted(slowest, reverse=True)[:5]))
    print("Inside traind (cumulative, from its log when it stopped):")
    for line in stages:
        print("  " + line.replace("traind: ", ""))
    print(f"Restart on {args.jobs} jobs: " + ", ".join(f"{r:.2f} s" for r in restarts) +
          f" until ListJobs answers; `trainctl list` right after: {after_restart_list_ms:.0f} ms")

    missed = []
    if warm and rss_growth > max(10, 0.1 * warm[0]["rss_mib"]):
        missed.append(f"memory grew {rss_growth:.1f} MiB after warm-up")
    if list_max >= 100:
        missed.append(f"`trainctl list` took {list_max:.0f} ms")
    if max(restarts) >= 2:
        missed.append(f"restart took {max(restarts):.2f} s")
    if p99 >= 50:
        missed.append(f"event delivery p99 {p99:.1f} ms")
    if gaps:
        missed.append(f"{len(gaps)} watchers saw a gap in a job's events (e.g. job {gaps[0]})")
    if failed:
        missed.append(f"{len(failed)} jobs did not succeed (e.g. job {failed[0]})")
    print("\nTargets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
    if not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
