#!/usr/bin/env python3
"""traind's search against a full grid and against Optuna 3.1, on one problem, side by side.

The problem: LeNet5 on Fashion-MNIST's first --images training images, --epochs epochs, SGD with
momentum 0.9; three parameters: learning rate (log-uniform 1e-3..3e-1), weight decay (log-uniform
1e-6..1e-2) and batch size (32, 64, 128). Compared by validation accuracy at the last epoch.

1. The grid: lr {1e-3, 1e-2, 3e-2, 1e-1} x weight decay {1e-6, 1e-4, 1e-2} x batch {32, 64, 128}
   (36 runs), every run to its end: its best is the reference, its device-time the budget's unit.
2. traind: `trainctl sweep --search tpe --early-stop asha --trials T` per seed.
3. Optuna 3.1: TPESampler(seed) + SuccessiveHalvingPruner(min_resource=1, reduction_factor=3),
   the same space, each trial the same traind job (the same trainer: only the searchers differ),
   reporting each epoch's validation accuracy; a pruned trial's job is cancelled. It runs until it
   has used the device-time traind's search used with that seed (equal device-time).

Device-time: the training seconds of every epoch a job ran (JobResult.epoch_seconds_no_eval),
summed over the jobs; one job at a time on the machine (traind --slots cpu=1), so they do not
share the cores. Every run trains with the same training seed; the search seeds vary.

Usage: bench/search_vs_optuna.py BIN_DIR [--seeds 3] [--trials 24] [--epochs 6] [--images 12800]
       [--grid BEST SECONDS]   (a grid measured before: not run again)
       [--budget-share 0.25]   (traind's search with --device-hours of that share of the grid's)
Prints a markdown table (docs/benchmarks.md, "Search").
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import optuna

SPACE = {"lr": (1e-3, 3e-1), "weight_decay": (1e-6, 1e-2), "batch_size": [32, 64, 128]}
GRID = {"lr": [1e-3, 1e-2, 3e-2, 1e-1], "weight_decay": [1e-6, 1e-4, 1e-2],
        "batch_size": [32, 64, 128]}


def trainctl(*args, check=True):
    result = subprocess.run(["trainctl", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if check and result.returncode != 0:
        raise SystemExit(f"trainctl {args}: {result.stderr}")
    return result.stdout


def base_flags(args):
    return ["--model", "lenet5", "--dataset", "fashion-mnist", "--device", "cpu",
            "--optimizer", "sgd", "--momentum", "0.9", "--epochs", args.epochs,
            "--limit-train", args.images, "--limit-test", "2000"]


def job(job_id):
    return json.loads(trainctl("--output", "json", "show", job_id))


def device_seconds(job_ids):
    return sum(sum(job(i).get("result", {}).get("epochSecondsNoEval", [])) for i in job_ids)


def last_validation(job_id):
    """The validation accuracy of the job's last evaluated epoch and that epoch."""
    out = trainctl("watch", job_id, "--output", "json")
    best = (0, None)
    for line in out.splitlines():
        event = json.loads(line)
        summary = event.get("epochSummary")
        if summary and summary.get("evaluated"):
            best = (summary["epoch"], summary.get("validationAccuracy", 0.0))
    return best


def members(sweep_id):
    jobs = json.loads(trainctl("--output", "json", "list", "--sweep", sweep_id, "--all"))
    return [int(j["id"]) for j in jobs.get("jobs", [])]


def run_grid(args):
    sweep = trainctl("sweep", *base_flags(args),
                     "--lr", ",".join(map(str, GRID["lr"])),
                     "--weight-decay", ",".join(map(str, GRID["weight_decay"])),
                     "--batch-size", ",".join(map(str, GRID["batch_size"])),
                     "--name", "grid", "--not-exclusive").strip()
    trainctl("wait", "--sweep", sweep, check=False)
    ids = members(sweep)
    best = max(last_validation(i)[1] or 0 for i in ids)
    return best, device_seconds(ids), len(ids) * args.epochs


def run_traind(args, seed, budget_seconds):
    budget = ["--device-hours", budget_seconds / 3600] if budget_seconds else []
    sweep = trainctl("sweep", *base_flags(args), *budget, "--search", "tpe", "--trials", args.trials,
                     "--search-seed", seed, "--early-stop", "asha", "--parallel", "1",
                     "--lr", f"loguniform:{SPACE['lr'][0]}:{SPACE['lr'][1]}",
                     "--weight-decay",
                     f"loguniform:{SPACE['weight_decay'][0]}:{SPACE['weight_decay'][1]}",
                     "--batch-size", "choice:" + ",".join(map(str, SPACE["batch_size"])),
                     "--name", f"tpe-{seed}").strip()
    trainctl("wait", "--sweep", sweep, check=False)
    report = json.loads(trainctl("--output", "json", "report", sweep))["search"]
    full = [t for t in report["trials"] if int(t.get("epochs", 0)) == args.epochs]
    best = max((t.get("metric", 0) for t in full), default=0)
    ids = members(sweep)
    return best, device_seconds(ids), int(report["epochsSpent"])


def run_optuna(args, seed, budget_seconds):
    sampler = optuna.samplers.TPESampler(seed=seed)
    pruner = optuna.pruners.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)
    study = optuna.create_study(direction="maximize", sampler=sampler, pruner=pruner)
    spent = {"seconds": 0.0, "epochs": 0, "best_full": 0.0}

    def objective(trial):
        lr = trial.suggest_float("lr", *SPACE["lr"], log=True)
        wd = trial.suggest_float("weight_decay", *SPACE["weight_decay"], log=True)
        bs = trial.suggest_categorical("batch_size", SPACE["batch_size"])
        job_id = trainctl("submit", *base_flags(args), "--lr", lr, "--weight-decay", wd,
                          "--batch-size", bs).strip()
        watch = subprocess.Popen(["trainctl", "watch", job_id, "--output", "json"],
                                 stdout=subprocess.PIPE, text=True)
        value, pruned = 0.0, False
        for line in watch.stdout:
            summary = json.loads(line).get("epochSummary")
            if not summary or not summary.get("evaluated"):
                continue
            value = summary.get("validationAccuracy", 0.0)
            trial.report(value, summary["epoch"])
            if summary["epoch"] < args.epochs and trial.should_prune():
                trainctl("cancel", job_id, check=False)
                pruned = True
                break
        watch.wait()
        seconds = sum(job(job_id).get("result", {}).get("epochSecondsNoEval", []))
        spent["seconds"] += seconds
        if pruned:
            raise optuna.TrialPruned()
        spent["best_full"] = max(spent["best_full"], value)
        return value

    while spent["seconds"] < budget_seconds:
        study.optimize(objective, n_trials=1)
    return spent["best_full"], spent["seconds"], len(study.trials)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bin")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--images", type=int, default=12800)
    # A grid measured before on this machine with the same --epochs and --images (it is
    # deterministic): its best and its seconds of training, instead of running it again.
    parser.add_argument("--grid", nargs=2, type=float, metavar=("BEST", "SECONDS"))
    # traind's search with a device-time budget of this share of the grid's (--device-hours).
    parser.add_argument("--budget-share", type=float, default=0)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    state = tempfile.mkdtemp(prefix="search-bench.", dir="/tmp")
    os.environ["XDG_STATE_HOME"] = state
    os.environ["PATH"] = f"{os.path.abspath(args.bin)}:{os.environ['PATH']}"
    log = open(pathlib.Path(state) / "traind.log", "w")
    traind = subprocess.Popen([f"{args.bin}/traind", "--slots", "cpu=1"], stdout=log, stderr=log)
    sock = pathlib.Path(state) / "traind" / "traind.sock"
    while not sock.exists():
        time.sleep(0.1)
    try:
        started = time.monotonic()
        if args.grid:
            grid_best, grid_seconds = args.grid
            grid_epochs = 36 * args.epochs
        else:
            grid_best, grid_seconds, grid_epochs = run_grid(args)
        print(f"grid: best {grid_best:.4f}, {grid_seconds:.1f} s of training, {grid_epochs} epochs",
              file=sys.stderr, flush=True)
        rows = []
        for seed in range(args.seeds):
            t_best, t_seconds, t_epochs = run_traind(args, seed, args.budget_share * grid_seconds)
            print(f"seed {seed}: traind {t_best:.4f} in {t_seconds:.1f} s, {t_epochs} epochs",
                  file=sys.stderr, flush=True)
            o_best, o_seconds, o_trials = run_optuna(args, seed, t_seconds)
            rows.append((seed, t_best, t_seconds, t_epochs, o_best, o_seconds, o_trials))
            print(f"seed {seed}: traind {t_best:.4f} in {t_seconds:.1f} s; optuna {o_best:.4f} in "
                  f"{o_seconds:.1f} s ({o_trials} trials)", file=sys.stderr, flush=True)
        print(f"| search seed | traind best (val acc) | vs grid best {100 * grid_best:.2f}% | "
              f"traind device-time (share of grid's {grid_seconds:.0f} s) | Optuna best | "
              f"Optuna device-time | Optuna trials |")
        print("|---|---|---|---|---|---|---|")
        for seed, t_best, t_seconds, t_epochs, o_best, o_seconds, o_trials in rows:
            print(f"| {seed} | {100 * t_best:.2f}% | {100 * (t_best - grid_best):+.2f} pt | "
                  f"{t_seconds:.0f} s ({100 * t_seconds / grid_seconds:.0f}%; {t_epochs} of "
                  f"{grid_epochs} epochs) | {100 * o_best:.2f}% | {o_seconds:.0f} s | {o_trials} |")
        print(f"\n(all of it: {time.monotonic() - started:.0f} s)")
    finally:
        traind.terminate()
        traind.wait()


if __name__ == "__main__":
    main()
