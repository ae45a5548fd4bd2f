#!/usr/bin/env python3
"""torch.mm timed in Python, the reference for `trainctl bench matmul`: same n, dtype, warm-up and
repetitions, device synchronised before the clock is read. Prints one JSON line.
matmul_peak.py times its sizes with time_mm() from here."""
import argparse
import json
import time

import torch


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_mm(size, dtype_name, device, repeat, warmup):
    """Seconds per size x size product: `warmup` untimed products, then the mean of `repeat`."""
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype_name, torch.float32)
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    c = torch.empty(size, size, dtype=dtype, device=device)
    for _ in range(warmup):
        torch.mm(a, b, out=c)
    sync(device)
    start = time.perf_counter()
    for _ in range(repeat):
        torch.mm(a, b, out=c)
    sync(device)
    return (time.perf_counter() - start) / repeat


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--dtype", choices=["fp32", "tf32", "bf16", "fp16"], default="fp32")
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args()
    seconds = time_mm(args.size, args.dtype, args.device, args.repeat, args.warmup)
    print(json.dumps({"seconds": seconds, "tflops": 2 * args.size ** 3 / seconds / 1e12,
                      "size": args.size, "dtype": args.dtype, "device": args.device,
                      "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
