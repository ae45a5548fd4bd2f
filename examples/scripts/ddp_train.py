#!/usr/bin/env python3
"""Data parallel training as torchrun runs it: DistributedDataParallel over the ranks that
RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT describe (torchrun sets them; so does traind for
`trainctl run --processes N` on the CPU or `--gpus N`). Gloo on the CPU, NCCL on GPUs.

  torchrun --nproc-per-node 2 ddp_train.py
  trainctl run --processes 2 --watch -- python3 ddp_train.py
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()

    cuda = os.environ.get("TRAIND_DEVICE", "cuda" if torch.cuda.is_available() else "cpu") == "cuda"
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    device = torch.device(f"cuda:{local_rank}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)

    # A separable problem: the class is which of 4 directions the point lies in.
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(args.samples, 16, generator=generator)
    y = (x[:, 0] > 0).long() * 2 + (x[:, 1] > 0).long()
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler)
    torch.manual_seed(0)
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4)).to(device),
        device_ids=[local_rank] if cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(1, args.epochs + 1):
        sampler.set_epoch(epoch)
        for batch, (features, targets) in enumerate(loader, 1):
            loss = F.cross_entropy(model(features.to(device)), targets.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if rank == 0 and batch % 4 == 0:
                print(f"Epoch {epoch}, Batch {batch}: loss {loss.item():.3f}")
    with torch.no_grad():
        correct = (model(x.to(device)).argmax(1).cpu() == y).float().mean()
    dist.all_reduce(correct)  # every rank computed it on all the data: the mean is the same
    if rank == 0:
        print(f"world size {world}")
        print(f"Test accuracy {100 * correct.item() / world:.2f}%")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
