#!/usr/bin/env python3
"""The plain PyTorch reference loop traind is measured against.

Same model, data, preprocessing, batch size, optimizer and seed as a traind job, written the way
the reference benchmark scripts (rasbt's M1 CPU-vs-GPU scripts) write it. Prints the same lines and,
last, one JSON line with the timings.

  train_reference.py --model lenet5 --epochs 1 [--loader dataloader|tensor] [--device cpu]
  train_reference.py --model vgg16 --dataset fake --image-size 224 --num-samples 2048 \
      --batch-size 64 --device cuda [--amp bf16]

The models are written out here to match models/*.cc layer for layer (parameter counts are
checked against traind's); `fake` data is made as traind's MakeFakeSplit makes it. Plain PyTorch
defaults unless asked: --cudnn-benchmark, --channels-last, --fused-adam and --device-resident
turn on what traind does on CUDA, for a like-for-like "tuned" loop. --compile MODE trains through
torch.compile(model, mode=MODE) (torch 2.x; reduce-overhead or max-autotune-no-cudagraphs, as a
PyTorch user who cares about speed would): the first step, which compiles, is timed on its own
("first_step_seconds") and evaluation runs the uncompiled module (same weights), so that the test
split's other batch size does not compile again.
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


class VGG16(nn.Module):
    """vgg16_bn, as models/vgg16.cc: 13 conv3x3+BN+ReLU, adaptive pool to 7x7, 25088-4096-4096-N."""
    config = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]

    def __init__(self, in_channels=3, num_classes=10):
        super().__init__()
        layers, channels = [], in_channels
        for width in self.config:
            if width == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
                continue
            layers += [nn.Conv2d(channels, width, kernel_size=3, padding=1), nn.BatchNorm2d(width),
                       nn.ReLU(inplace=True)]
            channels = width
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


class BasicBlock(nn.Module):
    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride, 0, bias=False),
                nn.BatchNorm2d(out_channels))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = self.downsample(x) if self.downsample is not None else x
        return F.relu(out + identity)


class ResNet18(nn.Module):
    """As models/resnet18.cc: torchvision's topology; cifar_stem swaps the 7x7/2 stem and pool."""

    def __init__(self, in_channels=3, num_classes=10, cifar_stem=False):
        super().__init__()
        if cifar_stem:
            self.stem = nn.Sequential(nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(64), nn.ReLU(inplace=True))
        else:
            self.stem = nn.Sequential(nn.Conv2d(in_channels, 64, 7, 2, 3, bias=False),
                                      nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        blocks, channels = [], 64
        for width in (64, 128, 256, 512):
            stride = 1 if width == 64 else 2
            blocks += [BasicBlock(channels, width, stride), BasicBlock(width, width, 1)]
            channels = width
        self.layers = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.layers(self.stem(x)), (1, 1))
        return self.fc(torch.flatten(x, 1))


def fake_split(n, channels, size, classes, seed):
    """data/dataset.cc MakeFakeSplit: uniform [0, 1) images, then labels, one seeded generator."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.rand(n, channels, size, size, generator=generator)
    labels = torch.randint(classes, (n,), generator=generator, dtype=torch.int64)
    return images, labels


def load_data(args):
    """(x, y, x_test, y_test, in_channels, num_classes), preprocessed as traind does."""
    if args.dataset == "fake":
        n = min(args.num_samples, args.limit_train) if args.limit_train else args.num_samples
        n_test = max(1, args.num_samples // 5)
        x, y = fake_split(n, args.channels, args.image_size, args.classes, args.seed)
        x_test, y_test = fake_split(n_test, args.channels, args.image_size, args.classes,
                                    args.seed + 1)
        normalize = lambda t: t.sub_(0.5).div_(0.5).contiguous()  # Normalize(0.5, 0.5)
        return normalize(x), y, normalize(x_test), y_test, args.channels, args.classes
    size = args.image_size or (32 if args.model == "lenet5" else 28)
    x, y = load_split(args.data_dir, "train", args.limit_train, size)
    x_test, y_test = load_split(args.data_dir, "t10k", 0, size)
    return x, y, x_test, y_test, 1, 10


def create_model(args, in_channels, num_classes, size):
    if args.model == "lenet5":
        return LeNet5(num_classes, in_channels)
    if args.model == "mlp":
        return MLP(in_channels * size * size, num_classes)
    if args.model == "vgg16":
        return VGG16(in_channels, num_classes)
    return ResNet18(in_channels, num_classes, args.cifar_stem)


def batches(x, y, batch_size, loader, shuffle, generator):
    if loader == "dataloader":
        dataset = torch.utils.data.TensorDataset(x, y)
        yield from torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=shuffle,
                                               drop_last=shuffle, generator=generator)
        return
    order = torch.randperm(len(y), generator=generator) if shuffle else torch.arange(len(y))
    order = order.to(x.device)  # --device-resident: gather on the device
    n = len(y) // batch_size if shuffle else -(-len(y) // batch_size)
    for b in range(n):
        index = order[b * batch_size:(b + 1) * batch_size]
        yield x.index_select(0, index), y.index_select(0, index)


def autocast(device, amp):
    return torch.autocast(device_type=device.split(":")[0],
                          dtype=torch.float16 if amp == "fp16" else torch.bfloat16,
                          enabled=amp in ("bf16", "fp16"))


def accuracy(model, x, y, device, amp, batch_size):
    model.eval()
    correct = 0
    step = min(batch_size, 256)  # as traind: at most 256 images per evaluation batch
    with torch.no_grad():
        for begin in range(0, len(y), step):
            with autocast(device, amp):
                logits = model(x[begin:begin + step].to(device))
            correct += (logits.argmax(1).cpu() == y[begin:begin + step].cpu()).sum().item()
    model.train()
    return correct / len(y) * 100


def start_profiler(device):
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    profiler = torch.profiler.profile(activities=activities)
    profiler.__enter__()
    return profiler


def print_profile(profiler, device, steps, top=20):
    """Operators by self time over the profiled steps (device time on CUDA), longest first."""
    synchronize(device)
    profiler.__exit__(None, None, None)
    cuda = device.startswith("cuda")

    def self_time(e):  # microseconds; torch 2.x renamed the CUDA field to "device"
        if not cuda:
            return e.self_cpu_time_total
        if hasattr(e, "self_device_time_total"):
            return e.self_device_time_total
        return e.self_cuda_time_total

    events = profiler.key_averages()
    if cuda:
        # On CUDA each kernel's time shows twice: as a kernel row, and as the self device time of
        # the operator that launched it. The total counts the kernel rows; the list shows the
        # operators (and time outside any operator), so that it adds up to the total.
        kernels = [e for e in events if e.device_type != torch.autograd.DeviceType.CPU]
        rows = [e for e in events if e.device_type == torch.autograd.DeviceType.CPU]
        total = sum(self_time(e) for e in kernels)
        rows.sort(key=self_time, reverse=True)
        outside = total - sum(self_time(e) for e in rows)
    else:
        rows = sorted(events, key=self_time, reverse=True)
        total, outside = sum(self_time(e) for e in rows), 0
    print(f"Profile of {steps} steps: {total / 1e3 / steps:.2f} ms "
          f"{'of device kernels' if cuda else 'self CPU time'} per step")
    for e in rows[:top]:
        t = self_time(e)
        if t <= 0:
            break
        print(f"  {t / 1e3 / steps:9.3f} ms/step {100 * t / max(total, 1):5.1f}%  "
              f"{e.count // steps:5d} calls/step  {e.key}")
    if outside > 0:
        print(f"  {outside / 1e3 / steps:9.3f} ms/step {100 * outside / max(total, 1):5.1f}%  "
              f"kernels outside any operator")
    if cuda:  # the kernels themselves, as traind's `trainctl show` lists its own
        print(f"Kernels, the longest of {len(kernels)}, per step:")
        for e in sorted(kernels, key=self_time, reverse=True)[:top]:
            print(f"  {self_time(e) / 1e3 / steps:9.3f} ms/step {100 * self_time(e) / max(total, 1):5.1f}%"
                  f"  {e.count / steps:6.1f} calls/step  {e.key[:160]}")


def synchronize(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["lenet5", "mlp", "vgg16", "resnet18"], default="lenet5")
    p.add_argument("--dataset", choices=["fashion-mnist", "fake"], default="fashion-mnist")
    p.add_argument("--image-size", type=int, default=0, help="fake: generate N x N (default 32)")
    p.add_argument("--num-samples", type=int, default=1000, help="fake: training images")
    p.add_argument("--channels", type=int, default=3, help="fake: image channels")
    p.add_argument("--classes", type=int, default=10, help="fake: classes")
    p.add_argument("--cifar-stem", action="store_true", help="resnet18: 3x3 stem, no max-pool")
    p.add_argument("--amp", choices=["", "bf16", "fp16"], default="",
                   help="autocast to bf16, or to fp16 with a gradient scaler")
    p.add_argument("--tf32", choices=["", "on", "off"], default="",
                   help="CUDA fp32 math: on = TF32 for convolutions and matrix products, off = "
                        "neither (strict fp32); default: PyTorch's (TF32 convolutions only)")
    p.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark")
    p.add_argument("--channels-last", action="store_true", help="vgg16/resnet18 weights in NHWC")
    p.add_argument("--fused-adam", action="store_true", help="torch.optim.Adam(fused=True)")
    p.add_argument("--compile", default="", metavar="MODE",
                   help="train through torch.compile(model, mode=MODE), e.g. reduce-overhead, "
                        "max-autotune-no-cudagraphs, default")
    p.add_argument("--device-resident", action="store_true",
                   help="training data on the device once (batches gathered there)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", "--learning-rate", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--limit-train", type=int, default=0)
    p.add_argument("--loader", choices=["dataloader", "tensor"], default="dataloader")
    p.add_argument("--test-each-epoch", action="store_true",
                   help="also evaluate the test set after each epoch (outside the timed training), "
                        "for the time to reach an accuracy")
    p.add_argument("--profile-from", type=int, default=2,
                   help="the first profiled step (1-based; later for a compiled loop: "
                        "reduce-overhead records its CUDA graphs in its first steps)")
    p.add_argument("--profile-steps", type=int, default=0,
                   help="profile N training steps (from --profile-from) with torch.profiler and "
                        "print the operators by self time, longest first, as traind's "
                        "--profile-steps does")
    p.add_argument("--data-dir", default=os.environ.get("FASHION_MNIST_DIR",
                                                        "/usr/share/datasets/fashion-mnist"))
    args = p.parse_args()
    if args.dataset == "fake" and not args.image_size:
        args.image_size = 32
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.cudnn_benchmark:
        torch.backends.cudnn.benchmark = True
    if args.tf32:
        torch.backends.cudnn.allow_tf32 = args.tf32 == "on"
        torch.backends.cuda.matmul.allow_tf32 = args.tf32 == "on"
    torch.manual_seed(args.seed)
    start = time.time()
    x, y, x_test, y_test, in_channels, num_classes = load_data(args)
    n_valid = len(y) // 10
    x_train, y_train = x[:len(y) - n_valid], y[:len(y) - n_valid]
    x_valid, y_valid = x[len(y) - n_valid:], y[len(y) - n_valid:]
    device = args.device
    if args.device_resident:
        x_train, y_train = x_train.to(device), y_train.to(device)
        args.loader = "tensor"
    model = create_model(args, in_channels, num_classes, x.shape[-1]).to(device)
    if args.channels_last and args.model in ("vgg16", "resnet18"):
        model = model.to(memory_format=torch.channels_last)
    train_model = model
    if args.compile:
        if not hasattr(torch, "compile"):
            raise SystemExit(f"--compile needs torch 2.x; this is torch {torch.__version__}")
        train_model = torch.compile(model, mode=None if args.compile == "default" else args.compile)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr,
                                 **({"fused": True} if args.fused_adam else {}))
    # fp16 needs loss scaling (its range is too small for small gradients); bf16 does not.
    if hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler(device.split(":")[0], enabled=args.amp == "fp16")
    else:  # torch 1.x (Debian 12): CUDA's
        scaler = torch.cuda.amp.GradScaler(enabled=args.amp == "fp16")
    generator = torch.Generator().manual_seed(args.seed)
    num_batches = len(y_train) // args.batch_size
    epoch_times, valid_accs, test_accs = [], [], []
    profiler, global_step, first_step_seconds = None, 0, None
    train_start = time.time()
    for epoch in range(args.epochs):
        epoch_start = time.time()
        for batch_idx, (features, targets) in enumerate(
                batches(x_train, y_train, args.batch_size, args.loader, True, generator)):
            global_step += 1
            if args.profile_steps and global_step == args.profile_from:
                profiler = start_profiler(device)
            if profiler and global_step == args.profile_from + args.profile_steps:
                print_profile(profiler, device, args.profile_steps)
                profiler = None
            features, targets = features.to(device), targets.to(device)
            step_start = time.time() if global_step == 1 else None
            with autocast(device, args.amp):
                loss = F.cross_entropy(train_model(features), targets)
            optimizer.zero_grad()
            if scaler.is_enabled():
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:  # the plain loop, as the fp32 and bf16 figures were measured
                loss.backward()
                optimizer.step()
            if step_start is not None:  # the first step: with --compile, the compilation
                synchronize(device)
                first_step_seconds = time.time() - step_start
            if not batch_idx % 100:
                print(f"Epoch: {epoch+1:03d}/{args.epochs:03d} | Batch {batch_idx:04d}/"
                      f"{num_batches:04d} | Loss: {loss.item():.4f}")
        synchronize(device)
        epoch_times.append(time.time() - epoch_start)
        if profiler:  # the epoch ended before the profiled steps did: stop before evaluating
            print_profile(profiler, device, global_step - args.profile_from + 1)
            profiler = None
        print(f"Time / epoch without evaluation: {epoch_times[-1] / 60:.2f} min")
        train_acc = accuracy(model, x_train, y_train, device, args.amp, args.batch_size)
        valid_acc = accuracy(model, x_valid, y_valid, device, args.amp, args.batch_size)
        valid_accs.append(valid_acc / 100)
        if args.test_each_epoch:
            test_accs.append(accuracy(model, x_test, y_test, device, args.amp, args.batch_size) / 100)
        print(f"Epoch: {epoch+1:03d}/{args.epochs:03d} | Train: {train_acc:.2f}% | "
              f"Validation: {valid_acc:.2f}%" +
              (f" | Test: {100 * test_accs[-1]:.2f}%" if args.test_each_epoch else ""))
    train_time = time.time() - train_start
    test_acc = accuracy(model, x_test, y_test, device, args.amp, args.batch_size)
    print(f"Total Training Time: {train_time / 60:.2f} min")
    print(f"Test accuracy {test_acc:.2f}%")
    print(f"Total Time: {(time.time() - start) / 60:.2f} min")
    cuda = device.startswith("cuda")
    print(json.dumps({"epoch_seconds_no_eval": epoch_times, "test_accuracy": test_acc / 100,
                      "first_step_seconds": first_step_seconds, "compile": args.compile,
                      "validation_accuracy": valid_accs, "test_accuracy_per_epoch": test_accs,
                      "parameters": sum(p.numel() for p in model.parameters()),
                      "train_images": len(y_train), "batches_per_epoch": num_batches,
                      "amp": args.amp or "fp32", "threads": torch.get_num_threads(),
                      "cudnn_benchmark": torch.backends.cudnn.benchmark,
                      "tf32_conv": torch.backends.cudnn.allow_tf32 if cuda else None,
                      "tf32_matmul": torch.backends.cuda.matmul.allow_tf32 if cuda else None,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
