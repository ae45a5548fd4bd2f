#!/usr/bin/env python3
"""torch.mm timed in Python, the reference for `trainctl bench matmul`: same n, dtype, warm-up and
repetitions, device synchronised before the clock is read. Prints one JSON line."""
import argparse
import json
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--size", type=int, default=4096)
p.add_argument("--dtype", choices=["fp32", "tf32", "bf16", "fp16"], default="fp32")
p.add_argument("--device", default="cpu")
p.add_argument("--repeat", type=int, default=10)
p.add_argument("--warmup", type=int, default=2)
args = p.parse_args()
dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.dtype, torch.float32)
torch.backends.cuda.matmul.allow_tf32 = args.dtype == "tf32"
a = torch.randn(args.size, args.size, dtype=dtype, device=args.device)
b = torch.randn(args.size, args.size, dtype=dtype, device=args.device)
c = torch.empty(args.size, args.size, dtype=dtype, device=args.device)


def sync():
    if args.device.startswith("cuda"):
        torch.cuda.synchronize()


for _ in range(args.warmup):
    torch.mm(a, b, out=c)
sync()
start = time.perf_counter()
for _ in range(args.repeat):
    torch.mm(a, b, out=c)
sync()
seconds = (time.perf_counter() - start) / args.repeat
print(json.dumps({"seconds": seconds, "tflops": 2 * args.size ** 3 / seconds / 1e12,
                  "size": args.size, "dtype": args.dtype, "device": args.device}))
