#!/usr/bin/env python3
"""The fastest plain PyTorch loop we know for LeNet5 on Fashion-MNIST on a GPU: the data resident
on the device, torch.optim.Adam(fused=True) with a tensor learning rate, and the whole training
step (forward, loss, backward, update) captured once with torch.cuda.graph and replayed. A
onecycle schedule (as torch.optim.lr_scheduler.OneCycleLR, what traind's `--lr-schedule
onecycle` computes) writes the learning rate into its tensor before each replay.

It evaluates on the test set after every epoch (outside the training time) and prints one JSON
line: the training seconds at each epoch's end, the test accuracy there, and the training time
until the test accuracy first reached --target. This is the "best Python loop" of issue 17's bar.

  graph_reference.py --epochs 6 --batch-size 256 --lr 3e-3 --seed 1 [--target 89]

--profile-steps N, after the timed training (so it costs the timing nothing), profiles N more
iterations of the loop (the batch gather, the learning-rate write, the replay) with torch.profiler
and prints kernels by device time per step to stderr, as train_reference.py does for its side.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_reference import LeNet5, accuracy, load_split, print_profile, start_profiler  # noqa: E402


def onecycle(step, total, peak, pct_start=0.3, div=25.0, final_div=1e4):
    """OneCycleLR's cosine annealing (three_phase=False)."""
    initial, minimum = peak / div, peak / div / final_div
    up = pct_start * total - 1
    if step <= up:
        t = step / up if up > 0 else 1.0
        return initial + (peak - initial) * (1 - math.cos(math.pi * t)) / 2
    t = (step - up) / (total - 1 - up)
    return minimum + (peak - minimum) * (1 + math.cos(math.pi * t)) / 2


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--target", type=float, default=89.0, help="test accuracy, percent")
    p.add_argument("--schedule", choices=["onecycle", "constant"], default="onecycle")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="after training, profile this many more steps (to stderr)")
    p.add_argument("--data-dir", default=os.environ.get("FASHION_MNIST_DIR",
                                                        "/usr/share/fashion-mnist"))
    args = p.parse_args()
    device = "cuda"
    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = True
    x, y = load_split(args.data_dir, "train", 0, 32)
    x_test, y_test = load_split(args.data_dir, "t10k", 0, 32)
    x, y, x_test, y_test = x.to(device), y.to(device), x_test.to(device), y_test.to(device)
    model = LeNet5(10, 1).to(device)
    lr = torch.tensor(args.lr, device=device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, fused=True, capturable=True)
    static_x = torch.zeros((args.batch_size, 1, 32, 32), device=device)
    static_y = torch.zeros((args.batch_size,), dtype=torch.long, device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(static_x), static_y)
        loss.backward()
        optimizer.step()
        return loss

    # Warm-up on a side stream (as torch.cuda.graph's documentation asks), then capture.
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_loss = step()
    # Undo the warm-up: weights and optimizer state as at the start.
    with torch.no_grad():
        for k, v in model.state_dict().items():
            v.copy_(saved[k])
        for state in optimizer.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    value.zero_()
    torch.cuda.synchronize()

    n = len(y) // args.batch_size
    total = n * args.epochs

    def train_step(order, b, global_step):
        index = order[b * args.batch_size:(b + 1) * args.batch_size]
        static_x.copy_(x.index_select(0, index))
        static_y.copy_(y.index_select(0, index))
        if args.schedule == "onecycle":
            lr.fill_(onecycle(global_step, total, args.lr))
        graph.replay()
    generator = torch.Generator().manual_seed(args.seed)
    train_seconds, epochs, reached = 0.0, [], None
    global_step = 0
    for epoch in range(1, args.epochs + 1):
        torch.cuda.synchronize()
        start = time.perf_counter()
        order = torch.randperm(len(y), generator=generator).to(device)
        for b in range(n):
            train_step(order, b, global_step)
            global_step += 1
        torch.cuda.synchronize()
        train_seconds += time.perf_counter() - start
        acc = accuracy(model, x_test, y_test, device, "", args.batch_size)
        epochs.append({"epoch": epoch, "train_seconds": round(train_seconds, 4),
                       "test_accuracy": round(acc, 2)})
        if reached is None and acc >= args.target:
            reached = train_seconds
    if args.profile_steps > 0:
        order = torch.randperm(len(y), generator=generator).to(device)
        profiler = start_profiler(device)
        for b in range(min(args.profile_steps, n)):
            train_step(order, b, total - 1)
        sys.stdout, stdout = sys.stderr, sys.stdout
        print_profile(profiler, device, min(args.profile_steps, n))
        sys.stdout = stdout
    print(json.dumps({"epochs": epochs, "seconds_to_target": reached, "target": args.target,
                      "final_loss": float(static_loss), "batch_size": args.batch_size,
                      "lr": args.lr, "schedule": args.schedule, "seed": args.seed}))


if __name__ == "__main__":
    main()
