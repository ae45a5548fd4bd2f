#!/usr/bin/python3
"""Load: do 50 open dashboard tabs on a running job slow it down, and does every tab see every event?

The twin of bench/watch_load.py over HTTP. Side by side in one run, alternating so machine noise
hits both alike: the same training job (LeNet5 on Fashion-MNIST, one epoch, a step event every
`--log-every` batches) with no dashboard open, and with `--tabs` clients that each do what the job
page (web/app.js) does: GetJob, then the job's event stream (GET /api/v1/jobs/ID/events?from_seq=1,
Server-Sent Events) until its end, then GetJob again, all with the session cookie of one login (the
tabs of one browser share it). `--queue-tabs N` makes N of them also poll ListJobs every 2 s, as
the queue page does. Reports the median epoch time of each, the median of the per-round ratios,
traind's CPU time, and checks that every client received the job's events 1..last_seq exactly
once.

Each client is a thread with its own HTTP connection in one Python process, pinned to the second
half of the CPUs (traind and its worker to the first): 50 real Chromium tabs would measure
Chromium on a 2-core machine, not traind, and one browser would share 6 connections per host
among them. What traind serves is the same either way: one event stream and a few API calls per
tab.

  bench/dashboard_load.py --bin build/bin [--rounds 3] [--tabs 50] [--log-every 5]
Prints a markdown table; exit 1 if a tab missed or duplicated an event.
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

from alternating import Rounds, cpu_seconds, split_cpus


class Tab:
    """One dashboard tab on the job page: logged in with its own session cookie."""

    def __init__(self, host, port, session, queue_page):
        self.host, self.port, self.queue_page = host, port, queue_page
        self.cookie, self.csrf = session
        self.seqs = []
        self.error = None

    def api(self, conn, method, body):
        # The server closes an idle keep-alive connection after 5 s (and after 5 requests); like
        # a browser, open a new one and send again.
        for attempt in (1, 2):
            try:
                conn.request("POST", "/api/v1/" + method, body=json.dumps(body),
                             headers={"Cookie": self.cookie, "X-CSRF-Token": self.csrf,
                                      "Content-Type": "application/json"})
                response = conn.getresponse()
                data = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                if attempt == 2:
                    raise
        assert response.status == 200, (response.status, data)
        return json.loads(data)

    def follow(self, job, stop):
        try:
            self._follow(job, stop)
        except Exception:  # reported with the round, as a tab that missed events
            self.error = traceback.format_exc().strip().splitlines()
            self.error = " / ".join(self.error[-3:])

    def _follow(self, job, stop):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=300)
        api_conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        poller = None
        if self.queue_page:
            def poll():
                c = http.client.HTTPConnection(self.host, self.port, timeout=60)
                while not stop.wait(2.0):
                    self.api(c, "ListJobs", {"pageSize": 200})
                c.close()
            poller = threading.Thread(target=poll)
            poller.start()
        self.api(api_conn, "GetJob", {"id": job})
        conn.request("GET", f"/api/v1/jobs/{job}/events?from_seq=1",
                     headers={"Cookie": self.cookie, "Accept": "text/event-stream"})
        response = conn.getresponse()
        assert response.status == 200, response.status
        for raw in response:
            line = raw.decode().rstrip("\n")
            if line.startswith("id: "):
                self.seqs.append(int(line[4:]))
            elif line == "event: end":
                break
        conn.close()
        self.api(api_conn, "GetJob", {"id": job})  # the page's final refresh
        api_conn.close()
        if poller:
            poller.join()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tabs", type=int, default=50)
    parser.add_argument("--log-every", type=int, default=5)
    parser.add_argument("--queue-tabs", type=int, default=0,
                        help="how many of the tabs also poll ListJobs every 2 s (the queue page)")
    parser.add_argument("--model", default="lenet5")
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin)
    state = tempfile.mkdtemp(prefix="traind-dashboard-load.")
    env = dict(os.environ, TRAINCTL_ADDR=f"unix:{state}/traind.sock",
               TRAINCTL_CONFIG=os.path.join(state, "none.toml"))
    log_path = os.path.join(state, "traind.log")
    log = open(log_path, "wb")
    daemon_cpus, client_cpus = split_cpus()
    daemon = subprocess.Popen([os.path.join(bin_dir, "traind"), "--state-dir", state,
                               "--http", "127.0.0.1:0"], stdout=log, stderr=log,
                              preexec_fn=lambda: os.sched_setaffinity(0, daemon_cpus))
    os.sched_setaffinity(0, client_cpus)
    print(f"traind on CPUs {sorted(daemon_cpus)}, clients on {sorted(client_cpus)}", file=sys.stderr)

    def trainctl(*a):
        return subprocess.run([os.path.join(bin_dir, "trainctl"), *a], env=env,
                              capture_output=True, text=True)

    url = None
    for _ in range(200):
        text = open(log_path).read()
        found = re.search(r"^traind: dashboard: http://([\d.]+):(\d+)/login", text, re.M)
        if found:
            url = found
            break
        time.sleep(0.1)
    assert url, "traind printed no dashboard link"
    host, port = url.group(1), int(url.group(2))
    token = open(os.path.join(state, "http.token")).read().strip()
    # One login, as a browser whose tabs share its cookie: the local user's token in the form.
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("POST", "/login", body="token=" + token,
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    response = conn.getresponse()
    response.read()
    assert response.status == 303, response.status
    cookie = response.getheader("Set-Cookie").split(";")[0]
    conn.close()
    conn = http.client.HTTPConnection(host, port, timeout=60)
    conn.request("GET", "/api/v1/session", headers={"Cookie": cookie})
    session = (cookie, json.loads(conn.getresponse().read())["csrfToken"])
    conn.close()

    def train_once(loaded):
        job = trainctl("submit", "--model", args.model, "--dataset", "fashion-mnist", "--epochs",
                       "1", "--log-every", str(args.log_every)).stdout.strip()
        tabs, threads, stop = [], [], threading.Event()
        cpu_before = cpu_seconds(daemon.pid)
        if loaded:
            tabs = [Tab(host, port, session, queue_page=(i < args.queue_tabs))
                    for i in range(args.tabs)]
            threads = [threading.Thread(target=t.follow, args=(job, stop)) for t in tabs]
            for t in threads:
                t.start()
        trainctl("watch", job)  # until it ends
        stop.set()
        for t in threads:
            t.join(timeout=120)
        daemon_cpu = cpu_seconds(daemon.pid) - cpu_before
        shown = json.loads(trainctl("show", job, "-o", "json").stdout)
        last_seq = int(shown["lastSeq"])
        complete = sum(t.seqs == list(range(1, last_seq + 1)) for t in tabs)
        for t in tabs:
            if t.seqs != list(range(1, last_seq + 1)):
                print(f"  a tab got {len(t.seqs)} of {last_seq} events"
                      f"{' (' + t.error + ')' if t.error else ''}", file=sys.stderr)
        return shown["result"]["epochSecondsNoEval"][0], complete, len(tabs), last_seq, daemon_cpu

    try:
        rounds = Rounds(args.rounds, train_once, "tabs")
    finally:
        daemon.terminate()
        daemon.wait()
        subprocess.run(["rm", "-rf", state])
    q, l = statistics.median(rounds.quiet), statistics.median(rounds.loaded)
    print(f"| job | events | epoch s, alone | epoch s, {args.tabs} tabs | slowdown (median of "
          f"ratios) | traind CPU s, alone / loaded | tabs that missed an event |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.model} 1 epoch, log every {args.log_every} | {rounds.events} | {q:.2f} | "
          f"{l:.2f} | {(statistics.median(rounds.ratios) - 1) * 100:+.1f}% | "
          f"{statistics.median(rounds.quiet_cpu):.2f} / {statistics.median(rounds.loaded_cpu):.2f} | "
          f"{rounds.misses} of {rounds.clients} |")
    sys.exit(1 if rounds.misses else 0)


if __name__ == "__main__":
    main()
