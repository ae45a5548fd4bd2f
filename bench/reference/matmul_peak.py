#!/usr/bin/env python3
"""The highest matrix-product rate this device sustains, measured: torch.mm at several sizes per
dtype, each timed for at least --seconds after a warm-up; the best size's TFLOP/s is the measured
peak that bench/matmul.sh's figures are divided by (docs/benchmarks-history.md). On CUDA it also samples
the SM clock (nvidia-smi) while each size runs, so that the datasheet's peak, quoted at the boost
clock, can be set beside the clock the device actually held. Prints a markdown table, then one
JSON line.

  python3 bench/reference/matmul_peak.py --device cuda --dtypes fp32 tf32 bf16
  python3 bench/reference/matmul_peak.py --device cpu --dtypes fp32 --sizes 1024 2048 4096
"""
import argparse
import json
import statistics
import subprocess
import threading

import torch

from matmul_reference import time_mm  # the same timing as bench/matmul.sh's reference side


class ClockSampler:
    """SM clock in MHz from nvidia-smi every 0.1 s while running (CUDA only; none elsewhere)."""

    def __init__(self, device):
        self.enabled = device.startswith("cuda")
        self.index = torch.device(device).index or 0
        self.samples = []
        self._stop = threading.Event()

    def _run(self):
        while not self._stop.is_set():
            try:
                out = subprocess.run(
                    ["nvidia-smi", "-i", str(self.index), "--query-gpu=clocks.sm",
                     "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=5)
                self.samples.append(float(out.stdout.strip()))
            except (OSError, ValueError, subprocess.TimeoutExpired):
                return
            self._stop.wait(0.1)

    def __enter__(self):
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop.set()
            self._thread.join()

    def median(self):
        return statistics.median(self.samples) if self.samples else None


def time_mm_sustained(n, dtype_name, device, min_seconds):
    """Seconds per n x n product over at least min_seconds (one product first times the warm-up)."""
    once = time_mm(n, dtype_name, device, repeat=1, warmup=1)
    return time_mm(n, dtype_name, device, repeat=max(3, int(min_seconds / max(once, 1e-6))),
                   warmup=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtypes", nargs="+", default=["fp32"],
                   choices=["fp32", "tf32", "bf16", "fp16"])
    p.add_argument("--sizes", nargs="+", type=int, default=[4096, 8192, 12288, 16384])
    p.add_argument("--seconds", type=float, default=1.0, help="time each size at least this long")
    args = p.parse_args()
    rows = []
    for dtype_name in args.dtypes:
        for n in args.sizes:
            with ClockSampler(args.device) as clock:
                seconds = time_mm_sustained(n, dtype_name, args.device, args.seconds)
            rows.append({"dtype": dtype_name, "n": n, "seconds": seconds,
                         "tflops": 2 * n ** 3 / seconds / 1e12, "sm_clock_mhz": clock.median()})
    peaks = {d: max((r for r in rows if r["dtype"] == d), key=lambda r: r["tflops"])
             for d in args.dtypes}
    print("| dtype | n | s/product | TFLOP/s | of the best size | SM clock (MHz, median) |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        clock = f"{r['sm_clock_mhz']:.0f}" if r["sm_clock_mhz"] else "—"
        print(f"| {r['dtype']} | {r['n']} | {r['seconds']:.4f} | {r['tflops']:.4g} | "
              f"{100 * r['tflops'] / peaks[r['dtype']]['tflops']:.0f}% | {clock} |")
    print(json.dumps({"device": args.device, "torch": torch.__version__,
                      "peaks": {d: {"n": r["n"], "tflops": r["tflops"]} for d, r in peaks.items()},
                      "rows": rows}))


if __name__ == "__main__":
    main()
