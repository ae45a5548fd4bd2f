#!/usr/bin/env python3
"""The first hour as one walk, the way a new user goes through it: in a terminal (a pty, so
trainctl draws for a terminal and Ctrl-C is a keystroke) and then in the browser (headless
Chromium through the dashboard's own pages, walkthrough_page.cjs). A real traind with its
dashboard (tests/dashboard/with_dashboard.sh starts one), real trainctl, real Python programs, real
Fashion-MNIST.

  a typo -> a plain script -> a built-in job -> a CPU sweep over two learning rates of each ->
  `report` says which run won -> Ctrl-C while following -> a program that crashes ->
  the browser's sweep pages name the same winners, the crashed job shows its error.

Run: tests/dashboard/with_dashboard.sh build/bin /usr/bin/python3 \\
       tests/walkthrough/walkthrough_test.py build/web-deps/node_modules
Exit 77 (skip) without torch in /usr/bin/python3 or without Chromium.
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "lib"))
from trainctl_cli import Terminal, show, trainctl, wait_until  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


def check(condition, message):
    if not condition:
        raise AssertionError("FAILED: " + message)
    print("ok: " + message, flush=True)


# The seed scripts' log lines, unchanged: a batch line and an epoch line.
PROGRAM = """\
import sys
lr = float(sys.argv[sys.argv.index("--lr") + 1]) if "--lr" in sys.argv else 0.1
for epoch in (1, 2, 3):
    print(f"Epoch: {epoch:03d}/003 | Batch 0001/0001 | Loss: {1 / (epoch + lr):.4f}")
    print(f"Epoch: {epoch:03d}/003 | Train: {70 + epoch:.2f}% | Validation: {60 + 20 * lr + epoch:.2f}%")
"""
CRASH = """\
print("epoch 1 loss 0.9", flush=True)
raise RuntimeError("CUDA error: an illegal memory access was encountered")
"""
WAIT = """\
import os, time
print("epoch 1 loss 0.5", flush=True)
while not os.path.exists("GO"):
    time.sleep(0.02)
"""


def terminal_walk(work):
    """The terminal half; returns what the browser half checks."""
    typo = Terminal("trainctl", "sumbit", "--model", "mlp")
    check(typo.finish() == 2 and "unknown command 'sumbit'; did you mean 'submit'?" in typo.text(),
          "a typo is named, with the verb meant")

    script = Terminal("trainctl", "run", "--device", "cpu", "--watch", "--", "python3", "train.py",
                      cwd=work)
    script.read_until("SUCCEEDED")
    check(script.finish() == 0 and "Epoch: 003/003" in script.text(),
          "a plain script runs as a job and its lines show as they come:\n" + script.text())

    builtin = Terminal("trainctl", "submit", "--model", "mlp", "--dataset", "fashion-mnist",
                       "--device", "cpu", "--epochs", "1", "--limit-train", "2560",
                       "--limit-test", "500", "--watch")
    builtin.read_until("SUCCEEDED")
    check(builtin.finish() == 0 and re.search(r"epoch 1/1", builtin.text()),
          "a built-in job trains with its progress bar to SUCCEEDED")

    trainctl("sweep", "--name", "walk-builtin", "--model", "mlp", "--dataset", "fashion-mnist",
             "--device", "cpu", "--epochs", "2", "--limit-train", "2560", "--limit-test", "500",
             "--lr", "1e-4,1e-2")
    trainctl("sweep", "-C", work, "--name", "walk-script", "--device", "cpu",
             "--param", "lr=0.1,0.5", "--", "python3", "train.py", "--lr", "{lr}")
    for name in ("walk-builtin", "walk-script"):
        check(trainctl("wait", "--sweep", name, check=False).returncode == 0,
              f"`trainctl wait --sweep {name}` returns when every member succeeded")
    listed = trainctl("sweeps").stdout
    check("walk-builtin" in listed and "walk-script" in listed, "`trainctl sweeps` lists both")

    winners = {}
    for name in ("walk-builtin", "walk-script"):
        report = trainctl("report", name).stdout
        best = re.search(r"^Best by ([a-z ]+): (.*) on cpu, ([0-9.]+)%", report, re.M)
        check(best is not None, f"`trainctl report {name}` says which run won:\n{report}")
        winners[name] = (best.group(1), best.group(2), best.group(3))
    check(winners["walk-script"][:2] == ("best validation accuracy", "train.py param.lr=0.5"),
          f"the script sweep's winner is lr=0.5 by its validation accuracy ({winners['walk-script']})")

    (work / "wait.py").write_text(WAIT.replace("GO", str(work / "go")))
    waiting = trainctl("run", "-C", work, "--device", "cpu", "--", "python3", "wait.py").stdout.strip()
    follow = Terminal("trainctl", "watch", waiting)
    follow.read_until("epoch 1")
    follow.ctrl_c()
    check(follow.finish() == 130 and f"job {waiting} keeps running" in follow.text()
          and show(waiting)["state"] == "RUNNING",
          "Ctrl-C stops following, says the job keeps running, and it does")
    (work / "go").touch()
    wait_until("the waiting job to end", lambda: show(waiting)["state"] == "SUCCEEDED")

    (work / "crash.py").write_text(CRASH)
    crash = Terminal("trainctl", "run", "--device", "cpu", "--watch", "--", "python3", "crash.py",
                     cwd=work)
    crash.read_until("FAILED")
    code = crash.finish()
    crashed = [line.strip() for line in crash.text().splitlines() if line.strip().isdigit()][0]
    check(code == 1 and "illegal memory access" in show(crashed)["result"]["error"],
          "a crashing program fails its job (exit 1) with its error kept")
    return {"winners": {name: list(w) for name, w in winners.items()}, "crashed": crashed}


def main():
    modules = sys.argv[1]
    if subprocess.run(["/usr/bin/python3", "-c", "import torch"]).returncode != 0:
        print("SKIP: /usr/bin/python3 has no torch")
        return 77
    work = pathlib.Path(tempfile.mkdtemp(prefix="walkthrough.", dir="/tmp"))
    try:
        (work / "train.py").write_text(PROGRAM)
        found = terminal_walk(work)
        browser = subprocess.run(["node", str(HERE / "walkthrough_page.cjs"), modules,
                                  json.dumps(found)])
        return browser.returncode
    finally:
        if work.exists():
            (work / "go").touch()  # a waiting program left behind by a failure ends
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
