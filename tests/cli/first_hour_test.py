#!/usr/bin/env python3
"""The first hour on the command line, as a user meets it: a real traind (tests/python/with_daemon.sh
starts one), the real trainctl binary, real Python programs, and Ctrl-C typed into a real terminal
(a pty: the terminal's line discipline turns it into SIGINT for trainctl's process group).

Each test waits for states, never for durations: a program that must still be running when the
test looks waits for a file the test writes. Run:
  tests/python/with_daemon.sh build/bin /usr/bin/python3 tests/cli/first_hour_test.py
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "lib"))
from trainctl_cli import Terminal, show, trainctl, wait_until  # noqa: E402

# A program that prints an epoch line, then waits until the test lets it go on (its `go` file).
WAITING_PROGRAM = """\
import os, sys, time
lr = sys.argv[sys.argv.index("--lr") + 1] if "--lr" in sys.argv else "0.001"
print(f"epoch 1 loss 0.6867 acc 0.7557 val_acc 0.7835 lr {lr}", flush=True)
while not os.path.exists("GO_FILE"):
    time.sleep(0.02)
print("epoch 2 loss 0.5 acc 0.8 val_acc 0.81", flush=True)
"""


def sweep_members(sweep_id):
    jobs = json.loads(trainctl("--output", "json", "list", "--sweep", sweep_id).stdout)
    return sorted(jobs.get("jobs", []), key=lambda job: int(job["id"]))


class FirstHourTest(unittest.TestCase):
    def setUp(self):
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="first_hour_test.", dir="/tmp"))
        self.go = self.work / "go"
        (self.work / "train.py").write_text(WAITING_PROGRAM.replace("GO_FILE", str(self.go)))

    def tearDown(self):
        # Whatever this test left queued or running is cancelled, and the folder goes only once
        # every job has ended, so that none holds the queue for the next test.
        self.go.touch()
        left = lambda: json.loads(trainctl("--output", "json", "list", "--state", "queued",
                                           "--state", "running").stdout).get("jobs", [])
        for job in left():
            trainctl("cancel", job["id"], check=False)
        wait_until("this test's jobs to end", lambda: not left())
        shutil.rmtree(self.work, ignore_errors=True)

    def run_waiting_program(self, *flags):
        return trainctl("run", "-C", self.work, "--device", "cpu", *flags, "--",
                        "python3", "train.py").stdout.strip()

    def test_a_typo_is_named_and_nothing_is_queued(self):
        before = trainctl("--output", "json", "list").stdout
        for args, message in [
            (["submit", "--modle", "mlp", "--dataset", "fashion-mnist"],
             "trainctl: submit: unknown option --modle; did you mean --model?\n"),
            (["sbumit", "--model", "mlp"], "trainctl: unknown command 'sbumit'; did you mean 'submit'?\n"),
            (["list", "--stat", "running"], "trainctl: list: unknown option --stat; did you mean --state?\n"),
            (["run", "python3", "train.py", "--epochs", "3"],
             "trainctl: run: unknown option --epochs; a program's own options go after --, e.g. "
             "trainctl run -- python3 train.py --epochs ...\n"),
        ]:
            result = trainctl(*args, check=False)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertEqual(result.stderr, message)
        self.assertEqual(trainctl("--output", "json", "list").stdout, before)

    def test_ctrl_c_in_watch_leaves_the_job_running_and_says_so(self):
        job = self.run_waiting_program()
        terminal = Terminal("trainctl", "watch", job)
        terminal.read_until("epoch 1")
        terminal.ctrl_c()
        self.assertEqual(terminal.finish(), 130)
        screen = terminal.screen.decode(errors="replace")
        self.assertIn(f"job {job} keeps running: `trainctl watch {job}` follows it again, "
                      f"`trainctl cancel {job}` stops it", screen)
        self.assertEqual(show(job)["state"], "RUNNING")
        self.go.touch()
        wait_until(f"job {job} to succeed", lambda: show(job)["state"] == "SUCCEEDED")

    def test_ctrl_c_in_run_watch_says_the_job_goes_on(self):
        terminal = Terminal("trainctl", "run", "-C", self.work, "--device", "cpu", "--watch", "--",
                            "python3", "train.py")
        screen = terminal.read_until("epoch 1")
        # The upload's note comes first (stderr, on the same terminal), then the job's id alone.
        ids = [line.strip() for line in screen.splitlines() if line.strip().isdigit()]
        self.assertTrue(ids, screen)
        job = ids[0]
        terminal.ctrl_c()
        self.assertEqual(terminal.finish(), 130)
        self.assertIn(f"job {job} keeps running", terminal.screen.decode(errors="replace"))
        self.assertEqual(show(job)["state"], "RUNNING")
        self.assertIn(f"job {job}: stopping", trainctl("cancel", job).stdout)
        wait_until(f"job {job} to end", lambda: show(job)["state"] == "CANCELLED")

    def test_a_param_given_twice_sweeps_both_values_and_cancel_sweep_stops_them(self):
        sweep = trainctl("sweep", "-C", self.work, "--device", "cpu", "--param", "lr=1e-3",
                         "--param", "lr=1e-2", "--", "python3", "train.py", "--lr", "{lr}").stdout.strip()
        members = sweep_members(sweep)
        self.assertEqual(len(members), 2, members)
        self.assertEqual(sorted(m["spec"]["script"]["params"]["lr"] for m in members), ["1e-2", "1e-3"])

        terminal = Terminal("trainctl", "watch", "--sweep", sweep)
        terminal.read_until(f"sweep {sweep}")
        terminal.ctrl_c()
        self.assertEqual(terminal.finish(), 130)
        self.assertIn(f"sweep {sweep}'s jobs keep running", terminal.screen.decode(errors="replace"))

        cancelled = trainctl("cancel", "--sweep", sweep).stdout
        for member in members:
            self.assertIn(f"job {member['id']}: ", cancelled)
        wait_until("every member to end", lambda: all(
            m["state"] == "CANCELLED" for m in sweep_members(sweep)))
        again = trainctl("cancel", "--sweep", sweep)
        self.assertIn("every member had already ended", again.stderr)
        missing = trainctl("cancel", "--sweep", "999999", check=False)
        self.assertEqual(missing.returncode, 2, missing.stderr)  # an unknown id, as for jobs
        self.assertEqual(missing.stderr, "trainctl: sweep 999999 not found\n")

    def test_wait_blocks_until_the_jobs_end_and_exits_by_their_outcome(self):
        job = self.run_waiting_program()
        waiter = subprocess.Popen(["trainctl", "wait", job], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        wait_until(f"job {job} to run", lambda: show(job)["state"] == "RUNNING")
        self.assertIsNone(waiter.poll())  # the job waits for its go file: so does `wait`
        timed_out = trainctl("wait", job, "--timeout", "0.2", check=False)
        self.assertEqual(timed_out.returncode, 4, timed_out.stderr)
        self.go.touch()
        _, err = waiter.communicate(timeout=300)
        self.assertEqual(waiter.returncode, 0, err)
        self.assertEqual(show(job)["state"], "SUCCEEDED")

        (self.work / "fail.py").write_text("raise SystemExit(3)\n")
        failing = trainctl("run", "-C", self.work, "--device", "cpu", "--", "python3",
                           "fail.py").stdout.strip()
        result = trainctl("wait", job, failing, check=False)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(result.stderr, f"trainctl: job {failing} FAILED\n")

    def test_logs_tail_prints_only_the_last_lines(self):
        (self.work / "count.py").write_text("for i in range(50):\n    print(f'line {i}')\n")
        job = trainctl("run", "-C", self.work, "--device", "cpu", "--", "python3",
                       "count.py").stdout.strip()
        self.assertEqual(trainctl("wait", job, check=False).returncode, 0)
        tail = trainctl("logs", job, "--tail", "3").stdout.splitlines()
        self.assertEqual(len(tail), 3, tail)
        self.assertIn("line 49", "\n".join(tail))
        self.assertGreater(len(trainctl("logs", job).stdout.splitlines()), 50)

    def test_the_morning_after_a_sweep_is_found_by_name_and_says_which_run_won(self):
        (self.work / "lr.py").write_text(
            "import sys\n"
            "lr = float(sys.argv[sys.argv.index('--lr') + 1])\n"
            "for epoch in (1, 2):\n"
            "    print(f'epoch {epoch} loss {1 / (epoch + lr):.4f} val_acc {0.5 + lr / 2 + epoch / 100:.4f}')\n")
        sweep = trainctl("sweep", "-C", self.work, "--device", "cpu", "--name", "lr-search",
                         "--param", "lr=0.1,0.5", "--", "python3", "lr.py", "--lr", "{lr}").stdout.strip()
        self.assertEqual(trainctl("wait", "--sweep", "lr-search", check=False).returncode, 0)

        listed = trainctl("sweeps").stdout.splitlines()
        self.assertTrue(listed[0].startswith("ID "), listed)
        row = next(line for line in listed[1:] if line.split()[0] == sweep)
        self.assertIn("lr-search", row)
        self.assertIn("2 succeeded", row)
        self.assertIn("param.lr=0.1,0.5", row)

        report = trainctl("report", "lr-search").stdout
        self.assertIn("Best by best validation accuracy: lr.py param.lr=0.5 on cpu, 77.00%", report)
        best_rows = [line for line in report.splitlines() if line.startswith("* ")]
        self.assertEqual(len(best_rows), 1, report)
        self.assertIn("param.lr=0.5", best_rows[0])
        self.assertNotIn("0.00%", report)  # the program printed no test accuracy: "-", not 0

        trainctl("sweep", "-C", self.work, "--device", "cpu", "--name", "lr-search",
                 "--param", "lr=0.2", "--", "python3", "lr.py", "--lr", "{lr}")
        twice = trainctl("report", "lr-search", check=False)
        self.assertEqual(twice.returncode, 2, twice.stderr)
        self.assertIn("2 sweeps are named 'lr-search': give one by its id: ", twice.stderr)
        missing = trainctl("report", "no-such-sweep", check=False)
        self.assertEqual(missing.returncode, 2, missing.stderr)
        self.assertEqual(missing.stderr, "trainctl: no sweep is named 'no-such-sweep' "
                                         "(`trainctl sweeps` lists them, with their ids)\n")

    def test_a_time_limit_fails_a_hung_program_and_the_queue_moves_on(self):
        # The program waits for a file nobody writes: only its one-second limit ends it.
        job = self.run_waiting_program("--time", "0:01")
        wait_until(f"job {job} to end", lambda: show(job)["state"] in ("FAILED", "SUCCEEDED"))
        ended = show(job)
        self.assertEqual(ended["state"], "FAILED")
        self.assertIn("stopped: it reached its time limit (--time 0:01)", ended["result"]["error"])
        after = self.run_waiting_program()  # the queue is free again
        wait_until(f"job {after} to run", lambda: show(after)["state"] == "RUNNING")

        refused = trainctl("run", "-C", self.work, "--time", "1h", "--", "python3", "train.py",
                           check=False)
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn("time_limit: '1h': minutes (30), MM:SS, H:MM:SS or D-HH[:MM[:SS]]",
                      refused.stderr)

    def test_retry_with_changed_flags_and_defaults_from_the_config_file(self):
        first = trainctl("submit", "--model", "mlp", "--dataset", "fashion-mnist", "--device", "cpu",
                         "--epochs", "1", "--limit-train", "640", "--limit-test", "100").stdout.strip()
        self.assertEqual(trainctl("wait", first, check=False).returncode, 0)
        again = trainctl("retry", first, "--lr", "0.01", "--epochs", "2").stdout.strip()
        spec = show(again)["spec"]
        self.assertEqual((spec["learningRate"], spec["epochs"], spec["model"]), (0.01, 2, "mlp"))
        self.assertEqual(show(again)["retryOf"], first)
        bad = trainctl("retry", first, "--lr", "-1", check=False)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("learning_rate", bad.stderr)
        trainctl("cancel", again, check=False)  # it may have ended already

        # [defaults.run] in the config file: every run gets them unless it gives them itself.
        config = self.work / "config.toml"
        config.write_text('[defaults.run]\ndevice = "cpu"\nname = "from-defaults"\n')
        env = dict(os.environ, TRAINCTL_CONFIG=str(config))
        run = subprocess.run(["trainctl", "run", "-C", str(self.work), "--name", "mine", "--",
                              "python3", "train.py"], env=env, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, check=True)
        job = show(run.stdout.strip())
        self.assertEqual((job["spec"]["device"], job["spec"]["name"]), ("cpu", "mine"))
        config.write_text('[defaults.run]\ndevcie = "cpu"\n')
        typo = subprocess.run(["trainctl", "list"], env=env, text=True, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        self.assertEqual(typo.returncode, 2, typo.stderr)
        self.assertEqual(typo.stderr, f"trainctl: {config}:2: defaults.run.devcie: run has no "
                                      "option --devcie (did you mean device?)\n")

    def test_a_programs_steps_are_timed_from_their_lines(self):
        # Its steps come apart in time (it waits for the test between them), so each step after the
        # first has a time of its own, and with the batch size it gave, samples a second.
        (self.work / "timed.py").write_text(
            "import os, time, traind\n"
            f"go = {str(self.go)!r}\n"
            "for step in range(1, 5):\n"
            "    traind.report(step=step, loss=1.0 / step, batch_size=32)\n"
            "    while not os.path.exists(f'{go}.{step}'):\n"
            "        time.sleep(0.01)\n")
        job = trainctl("run", "-C", self.work, "--device", "cpu", "--", "python3",
                       "timed.py").stdout.strip()
        for step in range(1, 5):
            wait_until(f"step {step}", lambda: any(
                json.loads(line).get("batch") == step for line in
                trainctl("export", job, "--format", "jsonl").stdout.splitlines()))
            pathlib.Path(f"{self.go}.{step}").touch()
        self.assertEqual(trainctl("wait", job, check=False).returncode, 0)
        steps = [json.loads(line) for line in trainctl("export", job, "--format", "jsonl").stdout
                 .splitlines() if json.loads(line)["kind"] == "step"]
        self.assertEqual(len(steps), 4, steps)
        self.assertNotIn("step_seconds", steps[0])  # its window would be the program's start
        for step in steps[1:]:
            self.assertGreater(step["step_seconds"], 0, step)
            self.assertAlmostEqual(step["samples_per_second"], 32 / step["step_seconds"], places=6)

    def test_impossible_values_a_program_prints_are_not_stored(self):
        (self.work / "wild.py").write_text(
            "print('epoch 1 loss 0.5 acc 150 val_acc 0.8')\n"
            "print('Test accuracy 197%')\n")
        job = trainctl("run", "-C", self.work, "--device", "cpu", "--", "python3",
                       "wild.py").stdout.strip()
        self.assertEqual(trainctl("wait", job, check=False).returncode, 0)
        epochs = [json.loads(line) for line in trainctl("export", job, "--format", "jsonl").stdout
                  .splitlines() if json.loads(line)["kind"] == "epoch"]
        self.assertEqual(len(epochs), 1, epochs)
        self.assertNotIn("accuracy", epochs[0])  # 150%: not stored
        self.assertEqual(epochs[0]["validation_accuracy"], 0.8)
        shown = trainctl("show", job).stdout
        self.assertIn("accuracy  best validation 80.00% (epoch 1)", shown)
        self.assertNotIn("197", shown)

    def test_a_value_twice_on_an_axis_is_refused(self):
        result = trainctl("sweep", "-C", self.work, "--device", "cpu", "--param", "lr=1e-3,1e-3",
                          "--", "python3", "train.py", "--lr", "{lr}", check=False)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stderr,
                         "trainctl: --param lr: 1e-3 is given twice (each value makes one member)\n")


if __name__ == "__main__":
    unittest.main(verbosity=2)
