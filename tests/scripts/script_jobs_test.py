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
import subprocess
import tempfile
import textwrap
import time
import unittest

try:
    import torchvision  # noqa: F401  (the ResNet-18 FakeData loop)
    HAVE_TORCHVISION = True
except ImportError:
    HAVE_TORCHVISION = False

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "scripts"
FASHION = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")


def trainctl(*args, check=True):
    result = subprocess.run(["trainctl", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, timeout=900)
    if check and result.returncode != 0:
        raise AssertionError(f"trainctl {args} exited {result.returncode}: {result.stderr}")
    return result


def show(job_id):
    return json.loads(trainctl("show", job_id, "--output", "json").stdout)


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
        ready = self.work / "ready"
        self.workdir({"spawn.py": f"""
            import os, time
            child = os.fork()
            if child == 0:
                time.sleep(3600)
                os._exit(0)
            with open({str(ready)!r} + ".tmp", "w") as f:
                f.write(f"{{os.getpid()}} {{child}}")
            os.rename({str(ready)!r} + ".tmp", {str(ready)!r})
            time.sleep(3600)
            """})
        job_id = self.run_job("python3", "spawn.py", flags=("--device", "cpu"))
        while not ready.exists():
            time.sleep(0.05)
        pids = [int(p) for p in ready.read_text().split()]
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


if __name__ == "__main__":
    unittest.main(verbosity=2)
