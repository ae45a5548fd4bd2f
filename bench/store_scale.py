#!/usr/bin/python3
"""Whether a request's cost grows with the store (issue 57): upload, ListJobs and GetJob latency
against a traind whose store holds 100,000 uploaded blobs and 10,000 jobs, side by side with one
whose store is empty (but for one page of 50 jobs, so that both ListJobs replies are alike). Both serve a token over loopback TCP (a token's upload is the one whose
storage quota is checked); the blobs and jobs belong to that token's owner, the worst case for
the quota check. Rounds alternate between the two trainds; each round makes `--calls` calls of
each kind and keeps its median; the report gives the median of those [min-max] and full/empty.

  bench/store_scale.py [--blobs 100000] [--jobs 10000] [--rounds 5] [--calls 20]
Environment: BUILD_DIR (default build).

The blobs are written into the state directory before traind starts, as traind writes them
(content named by its digest, a description beside it): uploading 100,000 files one by one
would take longer than the measurement. The jobs are a sweep of 10,000 members submitted with
the queue paused and cancelled, so every one is an ended job of that owner.
"""
import argparse
import hashlib
import os
import pathlib
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = ROOT / os.environ.get("BUILD_DIR", "build")
sys.path.insert(0, str(BUILD / "python"))
from traind.client import Client, pb  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_blobs(state, count, owner):
    """`count` small blobs of `owner`, as BlobStore stores them: sha256/HEX and HEX.blob."""
    folder = state / "blobs" / "sha256"
    folder.mkdir(parents=True)
    for i in range(count):
        content = f"blob {i}\n".encode()
        digest = hashlib.sha256(content).hexdigest()
        (folder / digest).write_bytes(content)
        os.chmod(folder / digest, 0o400)
        description = pb.Blob(digest=f"sha256:{digest}", size_bytes=len(content), kind="source",
                              name=f"file{i}.py", owner=owner, owners=[owner])
        (folder / f"{digest}.blob").write_bytes(description.SerializeToString())


class Daemon:
    def __init__(self, root, blobs, jobs):
        self.root = root
        self.state = root / "state"
        self.state.mkdir(parents=True)
        os.chmod(self.state, 0o700)
        if blobs:
            write_blobs(self.state, blobs, "alice")
        tokens = root / "tokens"
        tokens.write_text(f"{TOKEN} alice user\n")
        tokens.chmod(0o600)
        (root / "token").write_text(TOKEN + "\n")
        self.port = free_port()
        self.log = open(root / "traind.log", "w")
        self.process = subprocess.Popen(
            [str(BUILD / "bin" / "traind"), "--state-dir", str(self.state), "--listen",
             f"unix:{self.state}/traind.sock", "--listen", f"127.0.0.1:{self.port}",
             "--insecure-loopback", "--token-file", str(tokens), "--max-queued-per-token",
             str(max(jobs, 1000) + 10)], stdout=self.log, stderr=subprocess.STDOUT)
        self.client = Client(f"127.0.0.1:{self.port}", token_file=str(root / "token"),
                             timeout=600)
        deadline = time.monotonic() + 600
        while True:
            try:
                self.client.devices()
                break
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    sys.exit(f"traind did not start: {root / 'traind.log'}")
                time.sleep(0.1)
        self.local = Client(f"unix:{self.state}/traind.sock", timeout=600)
        self.local.stub.SetQueueState(pb.SetQueueStateRequest(
            action=pb.SetQueueStateRequest.PAUSE))
        if jobs:
            self.add_jobs(jobs)
        self.newest = self.client.submit(model="mlp", dataset="fake", epochs=1).id

    def add_jobs(self, count):
        """`count` ended jobs of alice's: a sweep submitted with the queue paused, cancelled."""
        sweep = self.client.stub.SubmitSweep(pb.SubmitSweepRequest(spec=pb.SweepSpec(
            base=pb.JobSpec(model="mlp", dataset="fake", epochs=1),
            axes=[pb.SweepAxis(field="seed", values=[str(i) for i in range(count)])])),
            metadata=self.client._metadata, timeout=600)
        for job in self.local.list(sweep_id=sweep.id):
            self.local.cancel(job.id)

    def upload(self, index):
        content = f"a new upload {index} {time.time_ns()}\n".encode().ljust(64, b".")
        digest = "sha256:" + hashlib.sha256(content).hexdigest()
        header = pb.BlobHeader(digest=digest, size_bytes=len(content), kind="data",
                               name="small.bin")
        requests = iter([pb.UploadBlobRequest(header=header),
                         pb.UploadBlobRequest(chunk=content)])
        self.client.stub.UploadBlob(requests, metadata=self.client._metadata, timeout=600)

    def list_jobs(self, _):
        self.client.stub.ListJobs(pb.ListJobsRequest(page_size=50),
                                  metadata=self.client._metadata, timeout=600)

    def get_job(self, _):
        self.client.show(self.newest)

    def stop(self):
        self.client.close()
        self.local.close()
        self.process.terminate()
        self.process.wait()


def timed(call, calls, offset):
    seconds = []
    for i in range(calls):
        start = time.perf_counter()
        call(offset + i)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def summary(values):
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):.2f} ms [{min(ms):.2f}-{max(ms):.2f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blobs", type=int, default=100000)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="store-scale.", dir="/tmp"))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE).stdout.strip()
    print(f"commit {commit}, {os.cpu_count()} CPUs; full store: {args.blobs} blobs, {args.jobs} "
          f"jobs; {args.rounds} rounds of {args.calls} calls each, alternating")
    started = time.monotonic()
    # The empty store holds one page of jobs, so that both ListJobs replies are the same size.
    daemons = {"empty": Daemon(work / "empty", 0, 50),
               "full": Daemon(work / "full", args.blobs, args.jobs)}
    print(f"set up in {time.monotonic() - started:.0f} s")
    results = {(side, kind): [] for side in daemons for kind in ("upload", "list", "get")}
    try:
        for round_number in range(args.rounds):
            order = ("empty", "full") if round_number % 2 == 0 else ("full", "empty")
            for side in order:
                daemon = daemons[side]
                offset = round_number * args.calls
                results[(side, "upload")].append(timed(daemon.upload, args.calls, offset))
                results[(side, "list")].append(timed(daemon.list_jobs, args.calls, offset))
                results[(side, "get")].append(timed(daemon.get_job, args.calls, offset))
    finally:
        for daemon in daemons.values():
            daemon.stop()
        shutil.rmtree(work, ignore_errors=True)
    for kind, what in (("upload", "upload of 64 bytes (quota checked)"),
                       ("list", "ListJobs, a page of 50"), ("get", "GetJob")):
        empty, full = results[("empty", kind)], results[("full", kind)]
        ratio = statistics.median(full) / statistics.median(empty)
        print(f"{what}: empty {summary(empty)}, full {summary(full)}; full/empty {ratio:.2f}")


if __name__ == "__main__":
    main()
