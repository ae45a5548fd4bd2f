#!/usr/bin/env python3
"""PyTorch's DistributedDataParallel on the model and data of a traind job on N GPUs: the
reference for `trainctl submit --gpus N` (docs/benchmarks-history.md). Run under torchrun:

  torchrun --standalone --nproc_per_node 2 bench/reference/ddp_reference.py --model resnet18 \
      --dataset fake --image-size 224 --num-samples 10240 --batch-size 256 --epochs 3 [--amp bf16] \
      [--gradient-allreduce bf16]

DDP as it is usually tuned: 25 MB buckets, fused Adam, channels_last weights, cuDNN autotuning,
the data on each GPU (as traind's --device-resident). --batch-size is per rank, as in DDP and
traind; a step takes a global batch of world x batch-size from one seeded permutation, rank r its
r-th slice, as traind does. Rank 0 prints one JSON line: epoch times and global samples/s (mean
over the epochs, as `trainctl report` computes it, and the last epoch's).
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_reference import autocast, create_model, load_data  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", choices=["lenet5", "mlp", "vgg16", "resnet18"], default="resnet18")
    p.add_argument("--dataset", choices=["fashion-mnist", "fake"], default="fake")
    p.add_argument("--image-size", type=int, default=0)
    p.add_argument("--num-samples", type=int, default=1000)
    p.add_argument("--channels", type=int, default=3)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--cifar-stem", action="store_true")
    p.add_argument("--limit-train", type=int, default=0)
    p.add_argument("--amp", choices=["", "fp32", "bf16"], default="")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=123)
    p.add_argument("--bucket-mb", type=float, default=25)
    p.add_argument("--gradient-allreduce", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: DDP's bf16_compress_hook (traind's --gradient-allreduce bf16)")
    p.add_argument("--data-dir", default=os.environ.get("FASHION_MNIST_DIR",
                                                        "/usr/share/datasets/fashion-mnist"))
    args = p.parse_args()
    args.amp = "" if args.amp == "fp32" else args.amp
    if args.dataset == "fake" and not args.image_size:
        args.image_size = 32

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    device = f"cuda:{local_rank}"
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl", device_id=torch.device(device))
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(args.seed)

    x, y, _, _, in_channels, num_classes = load_data(args)
    n_valid = len(y) // 10  # traind keeps 10% for validation
    x_train, y_train = x[:len(y) - n_valid].to(device), y[:len(y) - n_valid].to(device)
    model = create_model(args, in_channels, num_classes, x.shape[-1]).to(device)
    if args.model in ("vgg16", "resnet18"):
        model = model.to(memory_format=torch.channels_last)
    model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local_rank],
                                                      bucket_cap_mb=args.bucket_mb)
    if args.gradient_allreduce == "bf16":
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, fused=True)
    steps = len(y_train) // (args.batch_size * world)
    epoch_seconds = []
    for epoch in range(1, args.epochs + 1):
        generator = torch.Generator().manual_seed(args.seed * 1000003 + epoch)
        order = torch.randperm(len(y_train), generator=generator).to(device)
        torch.cuda.synchronize()
        start = time.time()
        for step in range(steps):
            first = (step * world + rank) * args.batch_size
            index = order[first:first + args.batch_size]
            features, targets = x_train.index_select(0, index), y_train.index_select(0, index)
            with autocast(device, args.amp):
                loss = F.cross_entropy(model(features), targets)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        torch.cuda.synchronize()
        epoch_seconds.append(time.time() - start)
    samples = steps * args.batch_size * world
    if rank == 0:
        print(json.dumps({
            "model": args.model, "amp": args.amp or "fp32", "world_size": world,
            "gradient_allreduce": args.gradient_allreduce,
            "batch_size_per_rank": args.batch_size, "steps_per_epoch": steps,
            "epoch_seconds": epoch_seconds,
            "samples_per_second": samples * len(epoch_seconds) / sum(epoch_seconds),
            "samples_per_second_last_epoch": samples / epoch_seconds[-1],
            "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
        }), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
