#!/usr/bin/env python3
"""Train your own PyTorch model on your own data with traind, and take the trained model home.

1. Defines a small CNN in PyTorch and saves it as TorchScript (torch.jit.script + torch.jit.save).
2. Writes a tensor dataset file (torch.save of train_x, train_y, test_x, test_y): a slice of
   Fashion-MNIST, normalised the way traind's built-in datasets are.
3. Submits the job with trainctl (the model and the data are uploaded, once, by content), and
   follows it to the end.
4. Downloads the trained module, evaluates it here in Python on the same test set, and checks
   that it scores what the job reported (to 0.1 points).

  examples/python/train_my_model.py [--trainctl build/bin/trainctl] [--epochs 2] [--work-dir DIR]

Needs python3-torch (Debian) and a running traind that trainctl reaches (as configured by its
flags, TRAINCTL_* or a context). Exits 0 when the accuracies agree.
"""
import argparse
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class SmallCnn(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 7 * 7, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def read_idx(path: pathlib.Path) -> np.ndarray:
    for candidate in (path, path.with_name(path.name + ".gz")):
        if candidate.exists():
            opener = gzip.open if candidate.suffix == ".gz" else open
            with opener(candidate, "rb") as f:
                data = f.read()
            dims = data[3]
            shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
            return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)
    raise FileNotFoundError(f"{path}(.gz) not found (set FASHION_MNIST_DIR)")


def fashion_mnist(n_train: int, n_test: int):
    root = pathlib.Path(os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist"))

    def images(name, n):
        x = torch.from_numpy(read_idx(root / name)[:n].copy()).float().div(255).unsqueeze(1)
        return (x - 0.5) / 0.5  # as traind normalises its built-in image datasets

    def labels(name, n):
        return torch.from_numpy(read_idx(root / name)[:n].astype(np.int64))

    return {
        "train_x": images("train-images-idx3-ubyte", n_train),
        "train_y": labels("train-labels-idx1-ubyte", n_train),
        "test_x": images("t10k-images-idx3-ubyte", n_test),
        "test_y": labels("t10k-labels-idx1-ubyte", n_test),
    }


def trainctl(binary: str, *args: str) -> str:
    result = subprocess.run([binary, *args], stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit(f"trainctl {' '.join(args)} exited {result.returncode}")
    return result.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trainctl", default="trainctl")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train", type=int, default=6000, help="training images (10%% validate)")
    parser.add_argument("--test", type=int, default=1000)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args()
    work = pathlib.Path(args.work_dir or tempfile.mkdtemp(prefix="train_my_model."))
    work.mkdir(parents=True, exist_ok=True)

    torch.manual_seed(0)
    model_path, data_path = work / "net.pt", work / "data.pt"
    torch.jit.save(torch.jit.script(SmallCnn()), str(model_path))
    data = fashion_mnist(args.train, args.test)
    torch.save(data, str(data_path))
    print(f"wrote {model_path} and {data_path} ({args.train} training, {args.test} test images)")

    job_id = trainctl(args.trainctl, "submit", "--model-file", str(model_path), "--dataset",
                      "tensors", "--data-file", str(data_path), "--upload", "--epochs",
                      str(args.epochs), "--batch-size", "64", "--lr", "2e-3",
                      "--name", "train_my_model").strip()
    print(f"job {job_id} submitted; following it")
    subprocess.run([args.trainctl, "watch", job_id])  # its exit code is checked through show
    job = json.loads(trainctl(args.trainctl, "show", job_id, "--output", "json"))
    if job["state"] != "SUCCEEDED":
        sys.exit(f"job {job_id} ended {job['state']}: {job.get('result', {}).get('error', '')}")
    reported = job["result"]["testAccuracy"]

    trained_path = work / "trained.pt"
    trainctl(args.trainctl, "download", job_id, "final", "-o", str(trained_path), "--force")
    trained = torch.jit.load(str(trained_path))
    trained.eval()
    with torch.no_grad():
        predicted = trained(data["test_x"]).argmax(1)
    here = (predicted == data["test_y"]).float().mean().item()
    print(f"test accuracy: job reported {reported * 100:.2f}%, the downloaded module here "
          f"{here * 100:.2f}%")
    if abs(here - reported) > 0.001:
        print("MISMATCH: more than 0.1 points apart", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
