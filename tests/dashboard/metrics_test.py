#!/usr/bin/env python3
"""/metrics parses as Prometheus' text format and tells the truth (tests/dashboard/with_dashboard.sh).

Parsed with prometheus_client's own parser (Debian's python3-prometheus-client). While a job runs,
its device's memory gauge must be a value the job itself reported (a step's current_bytes in
`trainctl export`), and its samples/s series must exist; afterwards the job counts as succeeded.
TRAIND_TEST_DEVICE picks the device (default cpu; cuda on the GPU host).
"""
import csv
import io
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("SKIP: python3-prometheus-client is not installed (deploy/install-deps.sh --for browser installs it)")
    sys.exit(77)

BASE = os.environ["TRAIND_DASHBOARD_URL"]
TOKEN = open(os.environ["TRAIND_HTTP_TOKEN_FILE"]).read().strip()
DEVICE = os.environ.get("TRAIND_TEST_DEVICE", "cpu")


def fetch(path, token=TOKEN):
    request = urllib.request.Request(BASE + path)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.headers.get("Content-Type"), response.read().decode()


def samples():
    """Every sample of /metrics as {(name, frozenset(labels)): value}, via the reference parser."""
    status, content_type, text = fetch("/metrics")
    assert status == 200, status
    assert content_type.startswith("text/plain; version=0.0.4"), content_type
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found, name, **labels):
    return found.get((name, frozenset(labels.items())))


def trainctl(*args):
    return subprocess.run(["trainctl", *args], check=True, capture_output=True, text=True).stdout


def main():
    try:
        fetch("/metrics", token="")
        raise AssertionError("/metrics answered without a token")
    except urllib.error.HTTPError as error:
        assert error.code == 401, error.code

    idle = samples()
    for state in ("queued", "running", "succeeded", "failed", "cancelled"):
        assert value(idle, "traind_jobs", state=state) == 0, (state, idle)
    assert value(idle, "traind_queue_depth") == 0
    assert value(idle, "traind_worker_crashes_total") == 0
    assert value(idle, "traind_store_bytes", file="db") > 0
    device_name = "cuda:0" if DEVICE == "cuda" else DEVICE
    assert value(idle, "traind_device_memory_bytes", device=device_name, kind="current") == 0, idle

    job = trainctl("submit", "--model", "mlp", "--dataset", "fashion-mnist", "--device", DEVICE,
                   "--epochs", "2", "--limit-train", "12800", "--batch-size", "64",
                   "--log-every", "5").strip()
    seen = None
    deadline = time.time() + 120
    while time.time() < deadline and seen is None:
        now = samples()
        speed = next((v for (name, labels), v in now.items()
                      if name == "traind_job_samples_per_second" and ("job", job) in labels), None)
        memory = value(now, "traind_device_memory_bytes", device=device_name, kind="current")
        if speed is not None and memory:
            assert value(now, "traind_jobs", state="running") == 1
            assert speed > 0
            seen = memory
        time.sleep(0.2)
    assert seen is not None, "the running job never showed in /metrics"
    trainctl("watch", job)  # until it ends; exit 0 means it succeeded

    rows = list(csv.DictReader(io.StringIO(trainctl("export", job))))
    reported = {float(r["current_bytes"]) for r in rows if r["kind"] == "step"}
    assert seen in reported, (seen, sorted(reported)[:5])
    after = samples()
    assert value(after, "traind_jobs", state="succeeded") == 1
    assert value(after, "traind_device_memory_bytes", device=device_name, kind="current") == 0
    print(f"ok: /metrics parsed; job {job}'s {device_name} memory gauge {seen:.0f} B was one of "
          f"its {len(reported)} reported steps")


if __name__ == "__main__":
    main()
