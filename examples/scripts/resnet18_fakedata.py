#!/usr/bin/env python3
"""ResNet-18 on torchvision's FakeData: the seed's throughput loop, printing
`Epoch 1, Batch 10: loss 2.301`. Nothing of traind in it.

  trainctl run --device cuda --watch -- python3 resnet18_fakedata.py --epochs 2
"""
import argparse
import os
import time

import torch
import torch.nn.functional as F
import torchvision
from torch.utils.data import DataLoader
from torchvision import transforms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--samples", type=int, default=1280)
    parser.add_argument("--image-size", type=int, default=224)
    parser.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    parser.add_argument("--device", default=os.environ.get(
        "TRAIND_DEVICE", "cuda" if torch.cuda.is_available() else "cpu"))
    args = parser.parse_args()

    device = torch.device(args.device)
    data = torchvision.datasets.FakeData(
        size=args.samples, image_size=(3, args.image_size, args.image_size), num_classes=10,
        transform=transforms.ToTensor())
    loader = DataLoader(data, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers)
    model = torchvision.models.resnet18(num_classes=10).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        for batch, (images, labels) in enumerate(loader, 1):
            images, labels = images.to(device), labels.to(device)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if batch % 10 == 0:
                print(f"Epoch {epoch}, Batch {batch}: loss {loss.item():.3f}")
    elapsed = time.time() - start
    print(f"Total Training Time: {elapsed / 60:.2f} min")
    print(f"{args.epochs * args.samples / elapsed:.1f} images/s on {device}")


if __name__ == "__main__":
    main()
