#!/usr/bin/env python3
"""Your training program as a job: unmodified PyTorch programs run by a real traind
(tests/python/with_daemon.sh starts one) through the real trainctl, with real Python.

Each test waits for states, never for durations: a program that must still be running when the
test looks waits for a file the test writes. Run:
  tests/python/with_daemon.sh build/bin /usr/bin/python3 tests/scripts/script_jobs_test.py
"""
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

# The interpreter traind runs the programs with (tests/python/with_daemon.sh gives it to traind).
PYTHON = os.environ.get("TRAIND_TEST_PYTHON", "/usr/bin/python3")
HAVE_TORCHVISION = subprocess.run([PYTHON, "-c", "import torchvision"],
                                  stderr=subprocess.DEVNULL).returncode == 0

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "scripts"
sys.path.insert(0, str(ROOT / "tests" / "lib"))
from trainctl_cli import show, trainctl  # noqa: E402
FASHION = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def wait_job(job_id):
    trainctl("watch", job_id, "--output", "json", check=False)
    return show(job_id)


def wait_state(job_id, state):
    while show(job_id)["state"] != state:
        time.sleep(0.05)


def events(job_id):
    lines = trainctl("logs", job_id, "--output", "json").stdout.splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def logs(job_id):
    return [e["log"]["text"] for e in events(job_id) if "log" in e]


def pid_gone(pid):
    """True once `pid` has exited (gone, or a zombie not yet reaped by init)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return ") Z " in f.read()
    except FileNotFoundError:
        return True


def host_pids(marker):
    """The machine's pids of the processes whose command line holds `marker`."""
    found = subprocess.run(["pgrep", "-f", marker], stdout=subprocess.PIPE, text=True).stdout
    return [int(pid) for pid in found.split()]


class ScriptJobsTest(unittest.TestCase):
    def setUp(self):
        self.work = pathlib.Path(tempfile.mkdtemp(prefix="script_jobs_test.", dir="/tmp"))

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def workdir(self, files):
        """A working directory holding `files` ({relative path: text or a path to copy})."""
        for name, content in files.items():
            path = self.work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, pathlib.Path):
                shutil.copy(content, path)
            else:
                path.write_text(textwrap.dedent(content))
        return self.work

    def run_job(self, *command, flags=(), check=True):
        result = trainctl("run", "-C", self.work, *flags, "--", *command, check=check)
        return result.stdout.strip() if check else result

    def test_the_seed_lenet5_script_trains_with_live_curves(self):
        self.workdir({"lenet5_fashion.py": EXAMPLES / "lenet5_fashion.py"})
        job_id = self.run_job("python3", "lenet5_fashion.py", "--epochs", "2", "--limit-train",
                              "6000", "--limit-test", "1000", "--data-dir", FASHION,
                              "--log-every", "5", flags=("--device", "cpu"))
        job = wait_job(job_id)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        stored = events(job_id)
        steps = [e["step"] for e in stored if "step" in e]
        epochs = [e["epochSummary"] for e in stored if "epochSummary" in e]
        self.assertGreaterEqual(len(steps), 4)
        self.assertEqual([e["epoch"] for e in epochs], [1, 2])
        self.assertEqual(steps[-1]["epochs"], 2)
        self.assertGreater(epochs[-1]["validationAccuracy"], 0.5)
        self.assertGreater(job["result"]["testAccuracy"], 0.5)
        self.assertGreater(int(steps[-1].get("currentAllocatedBytes", 0)), 0)  # its RSS
        # `logs` is the program's own output, once.
        text = trainctl("logs", job_id).stdout
        self.assertEqual(text.count("Test accuracy"), 1, text)
        self.assertIn("Epoch: 002/002 | Train:", text)

    def test_the_seed_lenet5_script_on_cuda(self):
        devices = trainctl("devices").stdout
        if "cuda:0" not in devices:
            self.skipTest("no CUDA device")
        self.workdir({"lenet5_fashion.py": EXAMPLES / "lenet5_fashion.py"})
        job_id = self.run_job("python3", "lenet5_fashion.py", "--epochs", "2", "--data-dir",
                              FASHION, flags=("--device", "cuda"))
        job = wait_job(job_id)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        self.assertGreater(job["result"]["testAccuracy"], 0.8)
        self.assertEqual(len(job["result"]["epochSecondsNoEval"]), 2)
        self.assertIn("Running python3 lenet5_fashion.py", "\n".join(logs(job_id)))

    @unittest.skipUnless(HAVE_TORCHVISION, "python3-torchvision is not installed")
    def test_the_seed_resnet18_fakedata_loop(self):
        self.workdir({"resnet18_fakedata.py": EXAMPLES / "resnet18_fakedata.py"})
        job_id = self.run_job("python3", "resnet18_fakedata.py", "--epochs", "1", "--samples",
                              "320", "--batch-size", "16", "--image-size", "32",
                              flags=("--device", "cpu"))
        job = wait_job(job_id)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        steps = [e["step"] for e in events(job_id) if "step" in e]
        self.assertEqual([s["batch"] for s in steps], [10, 20])
        self.assertTrue(all(s["loss"] > 0 for s in steps))

    def test_a_torchrun_style_ddp_script_on_two_cpu_processes(self):
        self.workdir({"ddp_train.py": EXAMPLES / "ddp_train.py"})
        job_id = self.run_job("python3", "ddp_train.py", "--epochs", "2",
                              flags=("--device", "cpu", "--processes", "2"))
        job = wait_job(job_id)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        self.assertIn("world size 2", logs(job_id))
        self.assertGreater(job["result"]["testAccuracy"], 0.8)

    def test_a_failing_program_fails_with_its_exit_code_and_stderr(self):
        self.workdir({"fail.py": """
            import sys
            print("Traceback: something broke", file=sys.stderr)
            sys.exit(3)
            """})
        job = wait_job(self.run_job("python3", "fail.py", flags=("--device", "cpu")))
        self.assertEqual(job["state"], "FAILED", job)
        self.assertIn("exit code 3", job["result"]["error"])
        self.assertIn("Traceback: something broke", job["result"]["error"])

    def test_cancel_kills_the_program_and_its_children(self):
        marker = f"spawn-{self.work.name}"
        self.workdir({"spawn.py": """
            import os, time
            child = os.fork()
            if child == 0:
                time.sleep(3600)
                os._exit(0)
            print("ready", flush=True)
            time.sleep(3600)
            """})
        job_id = self.run_job("python3", "spawn.py", marker, flags=("--device", "cpu"))
        while "ready" not in logs(job_id):
            time.sleep(0.05)
        # Found by their command line: in a sandbox a program's own pids are its namespace's.
        pids = host_pids(marker)
        self.assertGreaterEqual(len(pids), 2, "the program and its child")
        trainctl("cancel", job_id)
        wait_state(job_id, "CANCELLED")
        for pid in pids:
            while not pid_gone(pid):
                time.sleep(0.05)

    def test_a_resubmit_after_a_one_file_edit_sends_one_file(self):
        files = {f"lib/module{i}.py": f"VALUE = {i}\n" for i in range(20)}
        files["main.py"] = "from lib import module3\nprint('value', module3.VALUE)\n"
        self.workdir(files)
        first = trainctl("run", "-C", self.work, "--device", "cpu", "--", "python3", "main.py")
        self.assertIn("21 files, sent", first.stderr)
        (self.work / "lib" / "module3.py").write_text("VALUE = 33\n")
        second = trainctl("run", "-C", self.work, "--device", "cpu", "--", "python3", "main.py")
        self.assertIn("21 files, sent 1 ", second.stderr)
        job = wait_job(second.stdout.strip())
        self.assertEqual(job["state"], "SUCCEEDED", job)
        self.assertIn("value 33", logs(second.stdout.strip()))

    def test_refusals_are_clear_and_exit_2(self):
        self.workdir({"train.py": "print('hi')\n"})
        result = self.run_job("python3", "absent.py", check=False)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("'absent.py' is not a file of the working directory", result.stderr)
        result = self.run_job("python9", "train.py", check=False)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("'python9' is not one this traind allows", result.stderr)
        os.symlink("/etc/hostname", self.work / "leak")
        result = self.run_job("python3", "train.py", check=False)
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("leak is a symlink that leads out of the working directory", result.stderr)
        os.unlink(self.work / "leak")
        result = self.run_job("python3", "train.py", flags=("--epochs", "3"), check=False)
        self.assertEqual(result.returncode, 2, result.stderr)

    def test_stop_at_accuracy_stops_a_program_that_would_go_on(self):
        self.workdir({"forever.py": """
            import time
            epoch = 0
            while True:
                epoch += 1
                print(f"Epoch: {epoch:03d}/100 | Train: 50.00% | Validation: {min(99, 60 + 10 * epoch)}.00% | Best Validation (Ep. {epoch:03d}): 60.00%", flush=True)
                time.sleep(0.01)
            """})
        job = wait_job(self.run_job("python3", "forever.py",
                                    flags=("--device", "cpu", "--stop-at-accuracy", "0.9")))
        self.assertEqual(job["state"], "SUCCEEDED", job)
        self.assertEqual(job["result"]["stopped"]["epoch"], 3)

    def test_a_cpu_sweep_of_a_program_reports_like_built_in_jobs(self):
        self.workdir({"lenet5_fashion.py": EXAMPLES / "lenet5_fashion.py"})
        result = trainctl("sweep", "-C", self.work, "--device", "cpu", "--param", "seed=1,2",
                          "--", "python3", "lenet5_fashion.py", "--epochs", "1",
                          "--limit-train", "3000", "--limit-test", "500", "--data-dir", FASHION,
                          "--device", "{device}", "--seed", "{seed}")
        sweep_id = result.stdout.strip()
        trainctl("watch", "--sweep", sweep_id, check=False)
        report = json.loads(trainctl("report", sweep_id, "--format", "json").stdout)
        rows = report["rows"]
        self.assertEqual(sorted(r["options"] for r in rows), ["param.seed=1", "param.seed=2"])
        for row in rows:
            self.assertEqual(row["succeeded"], 1, row)
            self.assertGreater(row["testAccuracy"], 0.3, row)
            self.assertGreater(row["epochSecondsMedian"], 0, row)
        refused = trainctl("sweep", "-C", self.work, "--param", "lr=1,2", "--", "python3",
                           "lenet5_fashion.py", check=False)
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn("'lr' is not used: put {lr} in the program's arguments", refused.stderr)

    def test_a_cpu_vs_cuda_sweep_reports_speedup_and_gpu_memory_with_no_code(self):
        if "cuda:0" not in trainctl("devices").stdout:
            self.skipTest("no CUDA device")
        self.workdir({"lenet5_fashion.py": EXAMPLES / "lenet5_fashion.py"})
        result = trainctl("sweep", "-C", self.work, "--device", "cpu,cuda", "--", "python3",
                          "lenet5_fashion.py", "--epochs", "2", "--limit-train", "12000",
                          "--limit-test", "2000", "--data-dir", FASHION, "--device", "{device}")
        sweep_id = result.stdout.strip()
        trainctl("watch", "--sweep", sweep_id, check=False)
        report = json.loads(trainctl("report", sweep_id, "--format", "json").stdout)
        rows = {r["device"]: r for r in report["rows"]}
        self.assertEqual(sorted(rows), ["cpu", "cuda:0"], report)
        for row in rows.values():
            self.assertEqual(row["succeeded"], 1, row)
            self.assertGreater(row["testAccuracy"], 0.5, row)
        self.assertGreater(rows["cuda:0"]["speedup"], 0, report)
        # The driver's memory for the program, sampled by traind (NVML): the script has no code
        # for it.
        self.assertGreater(int(rows["cuda:0"].get("peakDriverAllocatedBytes", 0)), 0, report)
        self.assertGreater(int(rows["cpu"].get("peakCurrentAllocatedBytes", 0)), 0, report)

    def test_files_the_program_writes_to_its_output_directory_are_artifacts(self):
        self.workdir({"save.py": """
            import os
            out = os.environ["TRAIND_OUTPUT_DIR"]
            os.makedirs(os.path.join(out, "plots"))
            with open(os.path.join(out, "model.pt"), "wb") as f:
                f.write(b"weights" * 1000)
            with open(os.path.join(out, "plots", "loss curve.csv"), "w") as f:
                f.write("epoch,loss\\n1,0.5\\n")
            os.symlink("/etc/hostname", os.path.join(out, "leak"))
            """})
        job_id = self.run_job("python3", "save.py", flags=("--device", "cpu"))
        job = wait_job(job_id)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        listed = trainctl("artifacts", job_id).stdout
        self.assertIn("model.pt", listed)
        self.assertIn("plots/loss curve.csv", listed)
        self.assertNotIn("leak", listed)
        self.assertTrue(any("leak (a symbolic link)" in line for line in logs(job_id)))
        into = self.work / "downloads"
        into.mkdir()
        fetched = subprocess.run([os.path.abspath(shutil.which("trainctl")), "download", job_id,
                                  "plots/loss curve.csv"],
                                 cwd=into, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, timeout=60)
        self.assertEqual(fetched.returncode, 0, fetched.stderr)
        self.assertEqual((into / f"job{job_id}-loss_curve.csv").read_text(), "epoch,loss\n1,0.5\n")
        trainctl("download", job_id, "model.pt", "-o", into / "m.pt")
        self.assertEqual((into / "m.pt").read_bytes(), b"weights" * 1000)
        # Names that could climb out, and ones the program did not keep.
        for bad in ("../output.log", "/etc/hostname", "leak"):
            refused = trainctl("download", job_id, bad, "-o", into / "x", check=False)
            self.assertNotEqual(refused.returncode, 0, bad)
            self.assertFalse((into / "x").exists(), bad)
        refused = trainctl("download", job_id, "../output.log", check=False)
        self.assertEqual(refused.returncode, 2, refused.stderr)
        self.assertIn("must not have empty, '.' or '..' parts", refused.stderr)

    def test_the_traind_package_reports_steps_epochs_and_the_result(self):
        self.workdir({"reporting.py": """
            import traind
            assert traind.under_traind() and traind.device() == "cpu"
            for epoch in (1, 2):
                traind.report(epoch=epoch, epochs=2, batch=0, batches=1, loss=0.5 / epoch)
                traind.report(epoch=epoch, epochs=2, accuracy=0.5, val_accuracy=0.4 * epoch)
            traind.report(test_accuracy=0.77)
            """})
        job_id = self.run_job("python3", "reporting.py", flags=("--device", "cpu"))
        job = wait_job(job_id)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        stored = events(job_id)
        self.assertEqual([e["step"]["loss"] for e in stored if "step" in e], [0.5, 0.25])
        self.assertEqual([e["epochSummary"]["validationAccuracy"] for e in stored
                          if "epochSummary" in e], [0.4, 0.8])
        self.assertAlmostEqual(job["result"]["testAccuracy"], 0.77)


class PrivateDaemonTest(unittest.TestCase):
    """Tests that need a traind of their own (one they kill, or one with other flags): started
    with XDG_STATE_HOME in a private folder, stopped and removed whatever happens."""

    def setUp(self):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="script_private_daemon_test.", dir="/tmp"))
        self.env = dict(os.environ, XDG_STATE_HOME=str(self.root / "state"))
        self.daemon = None

    def tearDown(self):
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.terminate()
            self.daemon.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def start_traind(self, *flags):
        self.daemon = subprocess.Popen(["traind", "--data-root", "/tmp", "--python",
                                        f"python3={PYTHON}", *flags], env=self.env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        socket = self.root / "state" / "traind" / "traind.sock"
        # Until it answers; a traind that exits fails the test, and so does one that never
        # answers (a bound on a broken start, not on the machine's speed).
        deadline = time.monotonic() + 120
        while self.ctl("list", check=False).returncode != 0:
            self.assertIsNone(self.daemon.poll(), "traind exited")
            self.assertLess(time.monotonic(), deadline, "traind did not answer in 120 s")
            time.sleep(0.05)
        self.assertTrue(socket.exists())

    def ctl(self, *args, check=True):
        result = subprocess.run(["trainctl", *map(str, args)], env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        if check and result.returncode != 0:
            raise AssertionError(f"trainctl {args}: {result.stderr}")
        return result

    def stored(self, job_id):
        lines = self.ctl("logs", job_id, "--output", "json").stdout.splitlines()
        return [json.loads(line) for line in lines if line.strip()]


class ProgramLimitsTest(PrivateDaemonTest):
    """traind --script-memory-limit and --script-file-size-limit bind each process of a program,
    and a program that runs into one fails saying which limit it ran into."""

    def run_program(self, text):
        work = self.root / "work"
        work.mkdir(exist_ok=True)
        (work / "program.py").write_text(textwrap.dedent(text))
        job_id = self.ctl("run", "-C", work, "--device", "cpu", "--", "python3",
                          "program.py").stdout.strip()
        self.ctl("watch", job_id, "--output", "json", check=False)
        return job_id, json.loads(self.ctl("show", job_id, "--output", "json").stdout)

    def test_a_program_past_its_memory_limit_fails_with_memory_error_and_the_limit(self):
        self.start_traind("--script-memory-limit", "200MiB", "--script-file-size-limit", "1MiB")
        job_id, job = self.run_program("""
            import resource
            print("limits", resource.getrlimit(resource.RLIMIT_DATA),
                  resource.getrlimit(resource.RLIMIT_FSIZE), flush=True)
            b = bytearray(1 << 30)
            """)
        self.assertEqual(job["state"], "FAILED", job)
        error = job["result"]["error"]
        self.assertIn("exit code 1", error)
        self.assertIn("MemoryError", error)
        self.assertIn("may allocate 200.0 MiB (traind --script-memory-limit)", error)
        self.assertIn("write files of 1.0 MiB (traind --script-file-size-limit)", error)
        output = self.ctl("logs", job_id).stdout
        self.assertIn(f"limits ({200 << 20}, {200 << 20}) ({1 << 20}, {1 << 20})", output)
        texts = [e["log"]["text"] for e in self.stored(job_id) if "log" in e]
        self.assertTrue(any(t.startswith("Running python3 program.py") and
                            "may allocate 200.0 MiB" in t for t in texts), texts)

    def test_a_write_past_the_file_size_limit_fails_with_file_too_large(self):
        self.start_traind("--script-file-size-limit", "1MiB")
        _, job = self.run_program("""
            with open("big.bin", "wb") as f:
                f.write(bytes(2 << 20))
            """)
        self.assertEqual(job["state"], "FAILED", job)
        self.assertIn("File too large", job["result"]["error"])
        self.assertIn("write files of 1.0 MiB", job["result"]["error"])
        self.assertNotIn("allocate", job["result"]["error"])

    def test_an_unprivileged_program_cannot_raise_its_limits(self):
        if os.geteuid() == 0:
            self.skipTest("as root, traind's programs run as root, which may raise any limit")
        self.start_traind("--script-memory-limit", "1GiB")
        _, job = self.run_program("""
            import resource
            resource.setrlimit(resource.RLIMIT_DATA, (2 << 30, 2 << 30))
            """)
        self.assertEqual(job["state"], "FAILED", job)
        self.assertIn("ValueError", job["result"]["error"])

    def test_a_bad_limit_is_refused_when_traind_starts(self):
        for flag, value in (("--script-memory-limit", "lots"), ("--script-memory-limit", "-5"),
                            ("--script-file-size-limit", "1.5GiB"),
                            ("--script-file-size-limit", "8388608TiB")):
            result = subprocess.run(["traind", flag, value], env=self.env, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertIn(f"{flag}: expected a size of 0 or more", result.stderr)
            self.assertIn(f"got '{value}'", result.stderr)


class ResumeAfterKillTest(PrivateDaemonTest):
    """A program that checkpoints through the traind package resumes after `kill -9` of traind,
    with a traind of its own (the shared one must not be killed)."""

    PROGRAM = """
        import os, sys, time
        import traind
        release = sys.argv[1]
        state = traind.load_checkpoint()
        start = state["epoch"] + 1 if state else 1
        if state:
            print(f"Resumed from epoch {state['epoch']}")
        for epoch in range(start, 5):
            traind.report(epoch=epoch, epochs=4, batch=0, batches=1, loss=1.0 / epoch)
            traind.save_checkpoint({"epoch": epoch})
            traind.report(epoch=epoch, epochs=4, val_accuracy=0.2 * epoch)
            while epoch == 2 and not os.path.exists(release):
                if traind.should_stop():
                    print("stopping after epoch 2, as traind asked")
                    sys.exit(0)
                time.sleep(0.01)
        traind.report(test_accuracy=0.9)
        """

    def test_a_checkpointing_program_resumes_after_traind_is_killed(self):
        work = self.root / "work"
        work.mkdir()
        (work / "resumable.py").write_text(textwrap.dedent(self.PROGRAM))
        release = self.root / "release"  # under a data root: the program sees it appear
        self.start_traind()
        job_id = self.ctl("run", "-C", work, "--device", "cpu", "--", "python3", "resumable.py",
                          release).stdout.strip()
        # Wait for the state: epoch 2's summary stored (the program then waits for `release`).
        while not any(e.get("epochSummary", {}).get("epoch") == 2 for e in self.stored(job_id)):
            time.sleep(0.05)
        first_pids = host_pids(f"resumable.py {release}")
        self.assertTrue(first_pids)
        os.kill(self.daemon.pid, signal.SIGKILL)
        self.daemon.wait()
        for pid in first_pids:  # told to stop (SIGTERM): it saves and exits
            while not pid_gone(pid):
                time.sleep(0.05)
        release.touch()
        self.start_traind()
        self.ctl("watch", job_id, "--output", "json", check=False)
        job = json.loads(self.ctl("show", job_id, "--output", "json").stdout)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        texts = [e["log"]["text"] for e in self.stored(job_id) if "log" in e]
        self.assertIn("Resumed from epoch 2", texts)
        self.assertTrue(any(t.startswith("Started again where the job left off") for t in texts),
                        texts)
        epochs = [e["epochSummary"]["epoch"] for e in self.stored(job_id) if "epochSummary" in e]
        self.assertEqual(epochs, [1, 2, 3, 4])  # nothing trained twice
        self.assertAlmostEqual(job["result"]["testAccuracy"], 0.9)

    def test_a_checkpointing_program_resumes_after_its_runner_is_killed(self):
        # traind-script killed (the OOM killer, kill -9): the program dies with it, and the job
        # resumes from the program's own checkpoint as a built-in job resumes from its own.
        work = self.root / "work"
        work.mkdir()
        (work / "resumable.py").write_text(textwrap.dedent(self.PROGRAM))
        release = self.root / "release"
        self.start_traind()
        job_id = self.ctl("run", "-C", work, "--device", "cpu", "--", "python3", "resumable.py",
                          release).stdout.strip()
        while not any(e.get("epochSummary", {}).get("epoch") == 2 for e in self.stored(job_id)):
            time.sleep(0.05)
        program = host_pids(f"resumable.py {release}")
        runner = subprocess.run(["pgrep", "-P", str(self.daemon.pid), "-f", "traind-script"],
                                stdout=subprocess.PIPE, text=True).stdout.split()
        self.assertEqual(len(runner), 1, runner)
        os.kill(int(runner[0]), signal.SIGKILL)
        for pid in program:  # nothing of the program outlives its runner
            while not pid_gone(pid):
                time.sleep(0.05)
        release.touch()
        self.ctl("watch", job_id, "--output", "json", check=False)
        job = json.loads(self.ctl("show", job_id, "--output", "json").stdout)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        stored = self.stored(job_id)
        texts = [e["log"]["text"] for e in stored if "log" in e]
        reasons = [e["stateChange"].get("reason", "") for e in stored if "stateChange" in e]
        self.assertTrue(any("the program's runner killed by signal 9" in r for r in reasons),
                        reasons)
        self.assertIn("Resumed from epoch 2", texts)

    def test_unconfined_what_the_program_started_dies_with_its_killed_runner(self):
        # Without the sandbox's PID namespace, the program's own death (PR_SET_PDEATHSIG) left
        # its children running; traind now ends the group its runner noted.
        work = self.root / "work"
        work.mkdir()
        (work / "spawn.py").write_text(textwrap.dedent("""
            import os, time
            if os.fork() == 0:
                time.sleep(3600)
                os._exit(0)
            print("ready", flush=True)
            time.sleep(3600)
            """))
        marker = f"spawn.py {self.root.name}"
        self.start_traind("--script-sandbox", "none")
        job_id = self.ctl("run", "-C", work, "--device", "cpu", "--", "python3", "spawn.py",
                          self.root.name).stdout.strip()
        while not any(e.get("log", {}).get("text") == "ready" for e in self.stored(job_id)):
            time.sleep(0.05)
        program = host_pids(marker)
        self.assertEqual(len(program), 2, program)  # the program and its child
        runner = subprocess.run(["pgrep", "-P", str(self.daemon.pid), "-f", "traind-script"],
                                stdout=subprocess.PIPE, text=True).stdout.split()
        self.assertEqual(len(runner), 1, runner)
        os.kill(int(runner[0]), signal.SIGKILL)
        for pid in program:
            while not pid_gone(pid):
                time.sleep(0.05)
        self.ctl("watch", job_id, "--output", "json", check=False)
        job = json.loads(self.ctl("show", job_id, "--output", "json").stdout)
        self.assertEqual(job["state"], "FAILED", job)  # no checkpoint: it does not start again


class StoredOutputSpaceTest(PrivateDaemonTest):
    """A program's stored output is counted in its job's disk figure (and its owner's quota), and
    deleting the job gives the database's space back to the file system (its WAL too)."""

    def test_long_lines_are_counted_and_deleting_the_job_gives_the_space_back(self):
        self.start_traind()
        work = self.root / "work"
        work.mkdir()
        (work / "long.py").write_text("import sys\nfor i in range(2000):\n"
                                      "    sys.stdout.write('x' * 16384 + '\\n')\n")
        job_id = self.ctl("run", "-C", work, "--device", "cpu", "--", "python3",
                          "long.py").stdout.strip()
        self.ctl("watch", job_id, "--output", "json", check=False)
        job = json.loads(self.ctl("show", job_id, "--output", "json").stdout)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        stored = sum(len(e["log"]["text"]) for e in self.stored(job_id) if "log" in e)
        self.assertGreater(stored, 100000)
        self.assertGreaterEqual(int(job["diskBytes"]), stored)  # its events are in its figure
        self.assertLess(stored, 2 << 20, "a long line costs its bytes in the output budget")
        database = self.root / "state" / "traind" / "traind.db"

        def on_disk():
            wal = pathlib.Path(str(database) + "-wal")
            return database.stat().st_size + (wal.stat().st_size if wal.exists() else 0)

        before = on_disk()
        self.ctl("delete", job_id)
        self.assertLess(on_disk(), before - stored // 2)


def bubblewrap_problem():
    """Why this machine cannot make a bubblewrap sandbox, or None when it can."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    probe = subprocess.run([bwrap, "--unshare-pid", "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "true"], stderr=subprocess.PIPE, text=True)
    return None if probe.returncode == 0 else f"bubblewrap cannot make a sandbox here: {probe.stderr}"


class ProgramSandboxTest(PrivateDaemonTest):
    """A program with the run-code grant cannot read traind's token file, TLS key, database or
    another job's folder (traind --script-sandbox, docs/security.md), and without the sandbox it
    can: the table in docs/security.md, both columns."""

    PROBE = """
        import json, os, sys
        seen = {}
        for path in sys.argv[1:]:
            try:
                with open(path, "rb") as f:  # its start, in printable words
                    text = f.read(64).decode(errors="replace")
                    seen[path] = "".join(c if c.isalnum() or c in " -" else "." for c in text)
            except OSError as e:
                seen[path] = type(e).__name__
        print("SEEN " + json.dumps(seen), flush=True)
        with open("mine.txt", "w") as f:  # its working copy stays writable
            f.write("mine")
        with open(os.path.join(os.environ["TRAIND_OUTPUT_DIR"], "out.txt"), "w") as f:
            f.write("an artifact")
        """

    def setUp(self):
        super().setUp()
        self.secrets = self.root / "secrets"
        self.secrets.mkdir()
        self.tokens = self.secrets / "tokens"
        self.tokens.write_text("s3cret-token-of-traind alice user,run-code\n")
        self.tokens.chmod(0o600)
        self.key, self.cert = self.secrets / "key.pem", self.secrets / "cert.pem"
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", self.key, "-out",
                        self.cert, "-subj", "/CN=localhost", "-days", "1"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.work = self.root / "work"
        self.work.mkdir()
        (self.work / "probe.py").write_text(textwrap.dedent(self.PROBE))

    def run_probe(self, *paths):
        job_id = self.ctl("run", "-C", self.work, "--device", "cpu", "--", "python3", "probe.py",
                          *paths).stdout.strip()
        self.ctl("watch", job_id, "--output", "json", check=False)
        job = json.loads(self.ctl("show", job_id, "--output", "json").stdout)
        self.assertEqual(job["state"], "SUCCEEDED", job)
        line = next(line for line in self.ctl("logs", job_id).stdout.splitlines()
                    if line.startswith("SEEN "))
        return job_id, json.loads(line[5:])

    def traind_files(self, other_job):
        state = self.root / "state" / "traind"
        return [self.tokens, self.key, state / "traind.db",
                state / "jobs" / other_job / "work" / "mine.txt"]

    def test_a_sandboxed_program_cannot_read_traind_s_secrets_or_another_job(self):
        problem = bubblewrap_problem()
        if problem:
            self.skipTest(problem)
        self.start_traind("--token-file", self.tokens, "--tls-cert", self.cert, "--tls-key",
                          self.key, "--script-sandbox", "bubblewrap")
        first, _ = self.run_probe()
        files = [str(path) for path in self.traind_files(first)]
        second, seen = self.run_probe(*files)
        token, key, database, other_job = files
        self.assertEqual(seen[token], "PermissionError", "the token file is unreadable")
        self.assertEqual(seen[key], "PermissionError", "the TLS key is unreadable")
        self.assertEqual(seen[database], "FileNotFoundError", "traind's state is not there")
        self.assertEqual(seen[other_job], "FileNotFoundError", "nor another job's folder")
        # Its own folders work as before: the working copy, and its outputs become artifacts.
        self.assertIn("out.txt", self.ctl("artifacts", second).stdout)

    def test_data_outside_the_data_roots_is_not_there_and_the_failure_says_why(self):
        problem = bubblewrap_problem()
        if problem:
            self.skipTest(problem)
        elsewhere = pathlib.Path(tempfile.mkdtemp(prefix="traind-elsewhere.", dir="/var/tmp"))
        self.addCleanup(shutil.rmtree, elsewhere, True)
        (elsewhere / "data.csv").write_text("x,y\n1,2\n")
        (self.work / "reads.py").write_text(f"open({str(elsewhere / 'data.csv')!r}).read()\n")
        self.start_traind("--script-sandbox", "bubblewrap")
        job_id = self.ctl("run", "-C", self.work, "--device", "cpu", "--", "python3",
                          "reads.py").stdout.strip()
        self.ctl("watch", job_id, "--output", "json", check=False)
        job = json.loads(self.ctl("show", job_id, "--output", "json").stdout)
        self.assertEqual(job["state"], "FAILED", job)
        self.assertIn("No such file or directory", job["result"]["error"])
        self.assertIn("a folder of data elsewhere needs traind --data-root FOLDER",
                      job["result"]["error"])

    def test_without_the_sandbox_a_program_reads_them(self):
        self.start_traind("--token-file", self.tokens, "--tls-cert", self.cert, "--tls-key",
                          self.key, "--script-sandbox", "none")
        first, _ = self.run_probe()
        files = [str(path) for path in self.traind_files(first)]
        _, seen = self.run_probe(*files)
        self.assertIn("s3cret-token-of-traind", seen[files[0]])
        self.assertIn("PRIVATE KEY", seen[files[1]])
        self.assertEqual(seen[files[3]], "mine")

    def test_traind_says_at_start_where_programs_run(self):
        traind = shutil.which("traind")
        # Without bubblewrap on PATH: `bubblewrap` refuses to start, `auto` warns.
        env = dict(self.env, PATH="/nonexistent")
        refused = subprocess.run([traind, "--script-sandbox", "bubblewrap"], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(refused.returncode, 1, refused.stderr)
        self.assertIn("--script-sandbox bubblewrap: cannot make a sandbox here: bubblewrap (bwrap) "
                      "is not installed", refused.stderr)
        log = self.root / "traind.log"
        with open(log, "w") as err:
            self.daemon = subprocess.Popen([traind], env=env, stdout=subprocess.DEVNULL,
                                           stderr=err)
        while "listening on" not in log.read_text():
            self.assertIsNone(self.daemon.poll(), log.read_text())
            time.sleep(0.05)
        self.assertIn("WARNING: programs (script jobs) run UNCONFINED", log.read_text())

    def test_a_data_root_that_does_not_exist_is_refused_at_start(self):
        result = subprocess.run(["traind", "--data-root", str(self.root / "no-such")],
                                env=self.env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(f"data-root: {self.root / 'no-such'}: no such directory", result.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
