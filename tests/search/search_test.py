#!/usr/bin/env python3
"""Searches end to end: a real traind (started here, so that it can be killed with SIGKILL), the
real trainctl, real training of LeNet5 on Fashion-MNIST's first images.

- A random search with ASHA whose traind is killed (SIGKILL) in the middle of a trial's epoch:
  restarted, it continues with the trials it had proposed, trains no finished epoch again (the
  killed trial resumes from its checkpoint, mid-epoch unless it reached the epoch's end before
  the kill landed), and finishes; a second search with the same
  seed proposes the same trials.
- A cancelled search stops proposing; resumed (`sweep --resume`), its trials cancelled in flight
  run again and it goes on to its trials; extended (`extend --trials`), it proposes more.
- A program's search with early stopping: a program using the traind package's checkpoint
  contract pauses at its rungs and the promoted trials resume from their checkpoints; one that
  does not is stopped at its rung, and says so.
- What a user gets wrong is refused with exit code 2 and one line naming the field.

Every wait is for a state; the trials' steps are slowed (debug.step_delay_ms) only so that a
trial is surely mid-epoch when the test looks. Run: tests/search/search_test.py BIN_DIR
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "lib"))
from trainctl_cli import trainctl, wait_until  # noqa: E402

BIN = None  # the build's bin directory (argv[1])
PYTHON = "/usr/bin/python3"  # what traind runs programs with (Debian's: torch for checkpoints)

# A program that trains nothing, deterministically: its accuracy grows by its --lr each epoch.
# With the traind package's checkpoint contract (save_checkpoint, then the epoch's report) it
# pauses at its rung; without it (SAVE False) traind stops it there.
PROGRAM = """\
import sys
import traind
SAVE = {save}
lr = float(sys.argv[sys.argv.index("--lr") + 1])
state = traind.load_checkpoint() if SAVE else None
start = state["epoch"] + 1 if state else 1
accuracy = state["accuracy"] if state else 0.3
print(f"starting at epoch {{start}}", flush=True)
for epoch in range(start, 4):
    accuracy = min(0.99, accuracy + lr)
    traind.report(epoch=epoch, epochs=3, batch=0, batches=1, loss=1 - accuracy)
    if SAVE:
        traind.save_checkpoint({{"epoch": epoch, "accuracy": accuracy}})
    traind.report(epoch=epoch, epochs=3, val_accuracy=accuracy)
traind.report(test_accuracy=accuracy)
"""

SEARCH_FILE = """\
name: {name}
base:
  model: lenet5
  dataset: fashion-mnist
  device: cpu
  epochs: 3
  limit_train: 1280
  limit_test: 500
  batch_size: 64
  optimizer: sgd
  threads: 1
  log_every: 1
{debug}
search:
  method: random
  trials: 5
  seed: 7
  early_stop: asha
  parallel: 1
  params:
    learning_rate: "loguniform:1e-3:1e-1"
    momentum: "uniform:0.5:0.95"
"""


def report(sweep_id):
    return json.loads(trainctl("--output", "json", "report", sweep_id).stdout)


def trial_params(sweep_id):
    return [trial.get("params", {}) for trial in report(sweep_id)["search"].get("trials", [])]


def events(job_id):
    """Every stored event of a job that has ended, as `trainctl watch --output json` prints them."""
    out = trainctl("watch", job_id, "--output", "json").stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


class SearchTest(unittest.TestCase):
    def setUp(self):
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="search_test.", dir="/tmp"))
        os.environ["XDG_STATE_HOME"] = str(self.work / "state")
        os.environ["PATH"] = f"{BIN}:{os.environ['PATH']}"
        self.traind = None
        self.start_traind()

    def tearDown(self):
        if self.traind is not None and self.traind.poll() is None:
            self.traind.terminate()
            self.traind.wait(timeout=120)
        shutil.rmtree(self.work, ignore_errors=True)

    def start_traind(self):
        socket = self.work / "state" / "traind" / "traind.sock"
        if socket.exists():
            socket.unlink()
        log = open(self.work / "traind.log", "ab")
        self.traind = subprocess.Popen([f"{BIN}/traind", "--enable-fault-injection", "--python",
                                        f"python3={PYTHON}"], stdout=log, stderr=log)
        wait_until("traind's socket", lambda: socket.exists() or self.traind.poll() is not None)
        self.assertIsNone(self.traind.poll(), (self.work / "traind.log").read_text())

    def submit(self, name, step_delay_ms=0):
        debug = f"  debug:\n    step_delay_ms: {step_delay_ms}" if step_delay_ms else ""
        path = self.work / f"{name}.yaml"
        path.write_text(SEARCH_FILE.format(name=name, debug=debug))
        return trainctl("sweep", path).stdout.strip()

    def jobs(self, sweep_id):
        return json.loads(trainctl("--output", "json", "list", "--sweep", sweep_id).stdout).get(
            "jobs", [])

    def test_a_search_killed_mid_epoch_continues_with_its_trials_and_no_epoch_again(self):
        sweep_id = self.submit("killed", step_delay_ms=20)

        # A trial paused at its rung, and the one running is in the middle of an epoch.
        def mid_search():
            jobs = self.jobs(sweep_id)
            paused = [job for job in jobs if job["state"] == "PAUSED"]
            running = [job for job in jobs if job["state"] == "RUNNING" and
                       6 <= int(job.get("latestStep", {}).get("batch", 0)) <= 14]
            return paused and running and running[0]["id"]
        killed_job = wait_until("a trial paused and another mid-epoch", mid_search)
        before = trial_params(sweep_id)
        self.traind.send_signal(signal.SIGKILL)
        self.traind.wait()
        self.start_traind()

        wait_until("the search to end", lambda: report(sweep_id)["search"].get("done"))
        after = report(sweep_id)["search"]
        self.assertEqual([t.get("params", {}) for t in after["trials"]][:len(before)], before)
        self.assertEqual(len(after["trials"]), 5)
        resumed = False
        for trial in after["trials"]:
            stored = events(trial["jobId"])
            epochs = [e["epochSummary"]["epoch"] for e in stored if "epochSummary" in e]
            self.assertEqual(len(epochs), len(set(epochs)),
                             f"job {trial['jobId']} trained an epoch twice: {epochs}")
            self.assertEqual(epochs, list(range(1, trial["epochs"] + 1)))
            logs = [e["log"]["text"] for e in stored if "log" in e]
            if trial["jobId"] == killed_job:
                # Mid-epoch ("at epoch E, batch B") when the kill found it where the test saw
                # it; "after epoch E" when, on a loaded machine, it had reached the epoch's end
                # by then. Either way from its checkpoint, and no finished epoch again (above).
                resumed = any(text.startswith("Resumed from the checkpoint") for text in logs)
        self.assertTrue(resumed, f"job {killed_job} did not resume from its checkpoint")
        # Promoted trials trained their first rung once: none re-trained on promotion.
        self.assertGreater(int(after["epochsFull"]), int(after["epochsSpent"]))

        # The same seed, no kill: the same trials.
        again = self.submit("again")
        wait_until("the second search to end", lambda: report(again)["search"].get("done"))
        self.assertEqual(trial_params(again), trial_params(sweep_id))

    def test_cancel_sweep_stops_the_search_and_wait_returns(self):
        sweep_id = self.submit("cancelled", step_delay_ms=20)
        wait_until("a trial running", lambda: any(
            job["state"] == "RUNNING" for job in self.jobs(sweep_id)))
        waiter = subprocess.Popen(["trainctl", "wait", "--sweep", sweep_id],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        cancelled = trainctl("cancel", "--sweep", sweep_id)
        self.assertIn(f"search {sweep_id}: proposes no more trials", cancelled.stderr)
        wait_until("every trial to end", lambda: all(
            job["state"] in ("CANCELLED", "SUCCEEDED", "FAILED") for job in self.jobs(sweep_id)))
        waiter.communicate(timeout=600)  # it returns: the search proposes nothing more
        trials = len(self.jobs(sweep_id))
        self.assertTrue(report(sweep_id)["search"].get("done"))
        self.assertLess(trials, 5)
        # The driver looks again on every job's end and every 2 s: still no new trial after one
        # more job has run to its end.
        other = trainctl("submit", "--model", "lenet5", "--dataset", "fashion-mnist",
                         "--limit-train", "640").stdout.strip()
        trainctl("wait", other)
        self.assertEqual(len(self.jobs(sweep_id)), trials)

        # Resumed: the trials cancelled in flight run again (from their last finished epoch's
        # checkpoint), and the search goes on to its 5 trials; none trained a finished epoch twice.
        was_cancelled = {job["id"] for job in self.jobs(sweep_id) if job["state"] == "CANCELLED"}
        self.assertTrue(was_cancelled)
        resumed = trainctl("sweep", "--resume", sweep_id)
        self.assertIn(f"search {sweep_id}: goes on, 5 trials planned", resumed.stdout)
        trainctl("wait", "--sweep", sweep_id)
        after = report(sweep_id)["search"]
        self.assertTrue(after.get("done"))
        self.assertEqual(len(after["trials"]), 5)
        jobs = {job["id"]: job for job in self.jobs(sweep_id)}
        for job_id in was_cancelled:
            self.assertIn(jobs[job_id]["state"], ("SUCCEEDED", "PAUSED"))
        for trial in after["trials"]:
            epochs = [e["epochSummary"]["epoch"] for e in events(trial["jobId"])
                      if "epochSummary" in e]
            self.assertEqual(len(epochs), len(set(epochs)), f"job {trial['jobId']}: {epochs}")

        # Extended: more trials; fewer than planned is refused naming the field.
        fewer = trainctl("extend", sweep_id, "--trials", "4", check=False)
        self.assertNotEqual(fewer.returncode, 0)
        self.assertIn("trials: at least the 5 planned so far", fewer.stderr)
        trainctl("extend", sweep_id, "--trials", "7")
        trainctl("wait", "--sweep", sweep_id)
        self.assertEqual(len(report(sweep_id)["search"]["trials"]), 7)
        # Over by itself, with nothing left to promote: a budget alone is refused, saying so.
        budget_only = trainctl("extend", sweep_id, "--device-hours", "1", check=False)
        self.assertEqual(budget_only.returncode, 1, budget_only.stderr)
        self.assertIn(f"search {sweep_id} is over: all 7 trials ran and none can go further; "
                      "give more --trials", budget_only.stderr)

    def test_what_a_search_cannot_be_is_refused_naming_the_field(self):
        before = trainctl("--output", "json", "sweeps").stdout
        base = ["sweep", "--model", "lenet5", "--dataset", "fashion-mnist"]
        for args, message in [
            (["--search", "random", "--trials", "4", "--lr", "loguniform:0:1"],
             "--lr: loguniform needs 0 < low < high"),
            (["--search", "random", "--trials", "4", "--lr", "uniform:0.1:0.01"], "--lr:"),
            (["--search", "random", "--trials", "4", "--batch-size", "int:1.5:3"],
             "--batch-size:"),
            (["--search", "random", "--trials", "4", "--batch-size", "choice:"],
             "--batch-size:"),
            (["--search", "random", "--lr", "loguniform:1e-4:1e-1"], "--trials N"),
            (["--trials", "4"], "--trials is for a search"),
            (["--search", "random", "--trials", "4", "--epochs", "int:1:5", "--early-stop",
              "asha"], "epochs cannot vary under early stopping"),
            (["--search", "random", "--trials", "4", "--optimizer", "sgd", "--momentum",
              "uniform:0.5:1"], "momentum"),
        ]:
            result = trainctl(*base, *args, check=False)
            self.assertEqual(result.returncode, 2, f"{args}: {result.stderr}")
            self.assertIn(message, result.stderr, args)
            self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
        self.assertEqual(trainctl("--output", "json", "sweeps").stdout, before)


    def program_search(self, save):
        workdir = self.work / ("with-checkpoints" if save else "without")
        workdir.mkdir()
        (workdir / "train.py").write_text(PROGRAM.format(save=save))
        sweep = subprocess.run(
            ["trainctl", "sweep", "--search", "random", "--trials", "4", "--search-seed", "3",
             "--epochs", "3", "--early-stop", "asha", "--param", "lr=uniform:0.01:0.2",
             "--", "python3", "train.py", "--lr", "{lr}"],
            cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(sweep.returncode, 0, sweep.stderr)
        sweep_id = sweep.stdout.strip()
        trainctl("wait", "--sweep", sweep_id)
        return sweep_id, report(sweep_id)["search"]

    def test_a_programs_trials_pause_at_their_rungs_through_the_package(self):
        sweep_id, search = self.program_search(save=True)
        self.assertTrue(search.get("done"))
        self.assertEqual(len(search["trials"]), 4)
        furthest = max(search["trials"], key=lambda t: int(t.get("epochs", 0)))
        self.assertEqual(int(furthest["epochs"]), 3, search)  # promoted to the last rung
        stored = events(furthest["jobId"])
        logs = [e["log"]["text"] for e in stored if "log" in e]
        self.assertTrue(any(t.startswith("Paused after epoch 1, its rung") for t in logs), logs)
        epochs = [e["epochSummary"]["epoch"] for e in stored if "epochSummary" in e]
        self.assertEqual(epochs, [1, 2, 3], "no epoch trained twice after the pauses")
        output = trainctl("logs", furthest["jobId"]).stdout
        self.assertIn("starting at epoch 2", output)  # resumed from its checkpoint
        # The best of its rung resumed; the others waited, PAUSED, then ended there.
        ended = [t for t in search["trials"] if int(t.get("epochs", 0)) == 1]
        self.assertTrue(ended)
        job = json.loads(trainctl("--output", "json", "show", ended[0]["jobId"]).stdout)
        self.assertEqual(job["state"], "SUCCEEDED")
        self.assertIn("is over: stopped after epoch 1, its rung", job["result"]["stopped"]["reason"])

    def test_a_program_without_the_checkpoint_contract_is_stopped_at_its_rung(self):
        sweep_id, search = self.program_search(save=False)
        self.assertTrue(search.get("done"))
        self.assertEqual(len(search["trials"]), 4)
        for trial in search["trials"]:
            self.assertEqual(trial["status"], "stopped", search)
            self.assertEqual(int(trial["epochs"]), 1)
            job = json.loads(trainctl("--output", "json", "show", trial["jobId"]).stdout)
            self.assertIn("the program cannot pause there", job["result"]["stopped"]["reason"])


if __name__ == "__main__":
    BIN = os.path.abspath(sys.argv.pop(1))
    unittest.main()
