#!/usr/bin/env python3
"""LeNet-5 on Fashion-MNIST with its own loop and DataLoader, printing the log lines of the seed
experiments (rasbt's helper_train.py): an ordinary PyTorch program, nothing of traind in it.

  python3 lenet5_fashion.py --epochs 3                       # on its own
  trainctl run --device cpu --watch -- python3 lenet5_fashion.py --epochs 3   # as a traind job

traind reads its lines as the job's curves (loss per batch, train/validation accuracy per epoch,
test accuracy); TRAIND_DEVICE, set by traind, says which device to use.
"""
import argparse
import gzip
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        _, dtype, dims = struct.unpack(">HBB", f.read(4))
        shape = struct.unpack(">" + "I" * dims, f.read(4 * dims))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(shape)


def load(data_dir, split, limit):
    def find(stem):
        for name in (stem + ".gz", stem):
            if os.path.exists(os.path.join(data_dir, name)):
                return os.path.join(data_dir, name)
        raise SystemExit(f"no {stem}[.gz] in {data_dir}")

    images = read_idx(find(f"{split}-images-idx3-ubyte"))
    labels = read_idx(find(f"{split}-labels-idx1-ubyte"))
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.copy()).float().div_(255).unsqueeze(1)
    x = F.pad(x, (2, 2, 2, 2))  # 28 -> 32 px, LeNet-5's input
    return (x - 0.5) / 0.5, torch.from_numpy(labels.astype(np.int64))


class LeNet5(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 6, 5), nn.Tanh(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.Tanh(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(),
            nn.Linear(84, classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def accuracy(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(1) == y).sum().item()
            total += y.numel()
    model.train()
    return 100.0 * correct / max(total, 1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get(
        "FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--limit-train", type=int, default=0, help="first N training images")
    parser.add_argument("--limit-test", type=int, default=0, help="first N test images")
    parser.add_argument("--device", default=os.environ.get(
        "TRAIND_DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))
    parser.add_argument("--seed", type=int, default=123)
    parser.add_argument("--log-every", type=int, default=50)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    x, y = load(args.data_dir, "train", args.limit_train)
    split = len(x) * 9 // 10  # the last tenth validates
    train = DataLoader(TensorDataset(x[:split], y[:split]), batch_size=args.batch_size,
                       shuffle=True, drop_last=True)
    valid = DataLoader(TensorDataset(x[split:], y[split:]), batch_size=1024)
    test = DataLoader(TensorDataset(*load(args.data_dir, "t10k", args.limit_test)),
                      batch_size=1024)
    model = LeNet5().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate)

    start = time.time()
    best, best_epoch = 0.0, 0
    for epoch in range(1, args.epochs + 1):
        for batch, (features, targets) in enumerate(train):
            features, targets = features.to(device), targets.to(device)
            loss = F.cross_entropy(model(features), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if batch % args.log_every == 0:
                print(f"Epoch: {epoch:03d}/{args.epochs:03d} | Batch {batch:04d}/{len(train):04d}"
                      f" | Loss: {loss.item():.4f}")
        train_acc = accuracy(model, train, device)
        valid_acc = accuracy(model, valid, device)
        if valid_acc > best:
            best, best_epoch = valid_acc, epoch
        print(f"Epoch: {epoch:03d}/{args.epochs:03d} | Train: {train_acc:.2f}% | Validation: "
              f"{valid_acc:.2f}% | Best Validation (Ep. {best_epoch:03d}): {best:.2f}%")
        print(f"Time elapsed: {(time.time() - start) / 60:.2f} min")
    print(f"Total Training Time: {(time.time() - start) / 60:.2f} min")
    print(f"Test accuracy {accuracy(model, test, device):.2f}%")


if __name__ == "__main__":
    main()
