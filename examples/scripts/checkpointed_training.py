#!/usr/bin/env python3
"""A program that survives traind restarting: it checkpoints through the traind package each
epoch and when asked to stop, and resumes from its last checkpoint when started again
(`kill -9` of traind, a shutdown, a reboot). Also runs on its own (checkpoints in ./checkpoints).

  trainctl run --device cpu --watch -- python3 checkpointed_training.py --epochs 20
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import traind


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batches", type=int, default=50)
    args = parser.parse_args()

    device = torch.device(traind.device())
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(args.batches * 64, 32, generator=generator)
    y = (x[:, :2] > 0).long() @ torch.tensor([2, 1])  # 4 classes from two signs

    start = 1
    state = traind.load_checkpoint()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        start = state["epoch"] + 1
        print(f"Resumed from the checkpoint of epoch {state['epoch']}")
    for epoch in range(start, args.epochs + 1):
        for batch in range(args.batches):
            features = x[batch * 64:(batch + 1) * 64].to(device)
            targets = y[batch * 64:(batch + 1) * 64].to(device)
            loss = F.cross_entropy(model(features), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if batch % 10 == 0:
                traind.report(epoch=epoch, epochs=args.epochs, batch=batch,
                              batches=args.batches, loss=loss)
        with torch.no_grad():
            accuracy = (model(x.to(device)).argmax(1).cpu() == y).float().mean()
        traind.save_checkpoint({"epoch": epoch, "model": model.state_dict(),
                                "optimizer": optimizer.state_dict()})
        traind.report(epoch=epoch, epochs=args.epochs, val_accuracy=accuracy)
        if traind.should_stop():
            print(f"Stopping after epoch {epoch}, as traind asked; its checkpoint is saved")
            return
    traind.report(test_accuracy=accuracy)


if __name__ == "__main__":
    main()
