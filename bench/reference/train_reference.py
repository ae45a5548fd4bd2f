#!/usr/bin/env python3
"""The plain PyTorch reference loop traind is measured against.

Same model, data, preprocessing, batch size, optimizer and seed as a traind job, written the way
the reference benchmark scripts (rasbt's M1 CPU-vs-GPU scripts) write it. Prints the same lines and,
last, one JSON line with the timings.

  train_reference.py --model lenet5 --epochs 1 [--loader dataloader|tensor] [--device cpu]
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(data_dir, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(data_dir, name)):
            return os.path.join(data_dir, name)
    raise FileNotFoundError(os.path.join(data_dir, stem))


def load_split(data_dir, prefix, limit, size):
    images = read_idx(find(data_dir, prefix + "-images-idx3-ubyte"))
    labels = read_idx(find(data_dir, prefix + "-labels-idx1-ubyte"))
    if limit:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.copy()).float().div_(255.0).unsqueeze(1)  # ToTensor
    if size != 28:
        x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)  # Resize
    x = x.sub_(0.5).div_(0.5)  # Normalize((0.5,), (0.5,))
    return x, torch.from_numpy(labels.astype(np.int64))


class LeNet5(nn.Module):
    def __init__(self, num_classes=10, in_channels=1):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, 6, kernel_size=5), nn.Tanh(), nn.MaxPool2d(kernel_size=2),
            nn.Conv2d(6, 16, kernel_size=5), nn.Tanh(), nn.MaxPool2d(kernel_size=2))
        self.classifier = nn.Sequential(
            nn.Linear(16 * 5 * 5, 120), nn.Tanh(), nn.Linear(120, 84), nn.Tanh(),
            nn.Linear(84, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


class MLP(nn.Module):
    def __init__(self, num_features=784, num_classes=10):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Flatten(),
            nn.Linear(num_features, 256, bias=False), nn.ReLU(),
            nn.Linear(256, 128, bias=False), nn.ReLU(),
            nn.Linear(128, 64, bias=False), nn.ReLU(),
            nn.Linear(64, num_classes))

    def forward(self, x):
        return self.layers(x)


def batches(x, y, batch_size, loader, shuffle, generator):
    if loader == "dataloader":
        dataset = torch.utils.data.TensorDataset(x, y)
        yield from torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                                               drop_last=shuffle, generator=generator)
        return
    order = torch.randperm(len(y), generator=generator) if shuffle else torch.arange(len(y))
    n = len(y) // batch_size if shuffle else -(-len(y) // batch_size)
    for b in range(n):
        index = order[b * batch_size:(b + 1) * batch_size]
        yield x.index_select(0, index), y.index_select(0, index)


def accuracy(model, x, y, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for begin in range(0, len(y), 256):
            logits = model(x[begin:begin + 256].to(device))
            correct += (logits.argmax(1).cpu() == y[begin:begin + 256]).sum().item()
    model.train()
    return correct / len(y) * 100


def synchronize(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["lenet5", "mlp"], default="lenet5")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--limit-train", type=int, default=0)
    p.add_argument("--loader", choices=["dataloader", "tensor"], default="dataloader")
    p.add_argument("--data-dir", default=os.environ.get("FASHION_MNIST_DIR",
                                                        "/usr/share/datasets/fashion-mnist"))
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    start = time.time()
    size = 32 if args.model == "lenet5" else 28
    x, y = load_split(args.data_dir, "train", args.limit_train, size)
    x_test, y_test = load_split(args.data_dir, "t10k", 0, size)
    n_valid = len(y) // 10
    x_train, y_train = x[:len(y) - n_valid], y[:len(y) - n_valid]
    x_valid, y_valid = x[len(y) - n_valid:], y[len(y) - n_valid:]
    device = args.device
    model = (LeNet5() if args.model == "lenet5" else MLP()).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(args.seed)
    num_batches = len(y_train) // args.batch_size
    epoch_times = []
    train_start = time.time()
    for epoch in range(args.epochs):
        epoch_start = time.time()
        for batch_idx, (features, targets) in enumerate(
                batches(x_train, y_train, args.batch_size, args.loader, True, generator)):
            features, targets = features.to(device), targets.to(device)
            loss = F.cross_entropy(model(features), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if not batch_idx % 100:
                print(f"Epoch: {epoch+1:03d}/{args.epochs:03d} | Batch {batch_idx:04d}/"
                      f"{num_batches:04d} | Loss: {loss.item():.4f}")
        synchronize(device)
        epoch_times.append(time.time() - epoch_start)
        print(f"Time / epoch without evaluation: {epoch_times[-1] / 60:.2f} min")
        train_acc = accuracy(model, x_train, y_train, device)
        valid_acc = accuracy(model, x_valid, y_valid, device)
        print(f"Epoch: {epoch+1:03d}/{args.epochs:03d} | Train: {train_acc:.2f}% | "
              f"Validation: {valid_acc:.2f}%")
    train_time = time.time() - train_start
    test_acc = accuracy(model, x_test, y_test, device)
    print(f"Total Training Time: {train_time / 60:.2f} min")
    print(f"Test accuracy {test_acc:.2f}%")
    print(f"Total Time: {(time.time() - start) / 60:.2f} min")
    print(json.dumps({"epoch_seconds_no_eval": epoch_times, "test_accuracy": test_acc / 100,
                      "threads": torch.get_num_threads(), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
