#!/usr/bin/env python3
"""Is cuDNN's batch norm usable, and faster, for bf16 activations? (issue 7, bf16 speedup)

PyTorch sends batch norm to cuDNN for fp32 and for fp16 with fp32 parameters, but never for bf16
(`_select_batch_norm_backend` excludes it), and its own channels_last kernels made bf16 batch
norm slower than fp32 in the H200 profiles (docs/benchmarks-history.md). This times forward + backward of
one BatchNorm2d in training mode on VGG16/ResNet-18 activation shapes (channels_last):
  native  bf16 : F.batch_norm, i.e. what autocast runs now
  cudnn   bf16 : aten::cudnn_batch_norm called directly with bf16 data, and fp32 parameters or
                 (where PyTorch refuses that pair) bf16 ones
  cudnn   fp32 / fp16 : what PyTorch itself picks for those
and checks the direct cuDNN call against the native result. Prints one line per case.

  python3 bench/reference/batch_norm_probe.py [--repeat 50]
  python3 bench/reference/batch_norm_probe.py --device cpu --scale 64 --repeat 1   # a dry run
"""
import argparse
import time

import torch
import torch.nn.functional as F

# (batch, channels, height, width): VGG16 at 224 px batch 64, ResNet-18 at 224 px batch 256.
SHAPES = [(64, 64, 224, 224), (64, 128, 112, 112), (64, 256, 56, 56), (64, 512, 28, 28),
          (256, 64, 112, 112), (256, 128, 28, 28), (256, 512, 7, 7)]


def native(x, weight, bias, mean, var):
    return F.batch_norm(x, mean, var, weight, bias, training=True, momentum=0.1, eps=1e-5)


def cudnn(x, weight, bias, mean, var):
    return torch.ops.aten.cudnn_batch_norm(x, weight, bias, mean, var, True, 0.1, 1e-5)[0]


def time_fwd_bwd(fn, x, repeat, param_dtype=torch.float32):
    options = {"device": x.device, "dtype": param_dtype}
    weight = torch.ones(x.shape[1], **options, requires_grad=True)
    bias = torch.zeros(x.shape[1], **options, requires_grad=True)
    mean = torch.zeros(x.shape[1], **options)
    var = torch.ones(x.shape[1], **options)
    x = x.detach().requires_grad_()
    grad = torch.randn_like(x)
    for _ in range(3):  # warm-up: cuDNN plans, allocator
        fn(x, weight, bias, mean, var).backward(grad)
    synchronize(x.device)
    start = time.perf_counter()
    for _ in range(repeat):
        out = fn(x, weight, bias, mean, var)
        out.backward(grad)
    synchronize(x.device)
    return (time.perf_counter() - start) * 1e3 / repeat, out.detach(), x.grad.detach()


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--device", default="cuda", help="cpu only checks that the script runs")
    parser.add_argument("--scale", type=int, default=1, help="divide the batch sizes by this")
    args = parser.parse_args()
    name = torch.cuda.get_device_name(0) if args.device == "cuda" else args.device
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {name}")
    for n, c, h, w in SHAPES:
        shape = (max(1, n // args.scale), c, h, w)
        base = torch.randn(shape, device=args.device).to(memory_format=torch.channels_last)
        line = [f"{'x'.join(map(str, shape)):>18}"]
        native_ms, native_out, native_grad = time_fwd_bwd(native, base.bfloat16(), args.repeat)
        line.append(f"native bf16 {native_ms:6.3f} ms")
        # Older PyTorch accepts fp32 parameters only with fp16 data, and bf16 data only with bf16
        # parameters (and running statistics, which then accumulate in bf16): try both.
        for params in (torch.float32, torch.bfloat16):
            name = f"cudnn bf16/{str(params)[6:]} params"
            try:
                ms, out, grad = time_fwd_bwd(cudnn, base.bfloat16(), args.repeat, params)
                out_err = (out.float() - native_out.float()).abs().max().item()
                grad_err = (grad.float() - native_grad.float()).abs().max().item()
                line.append(f"{name} {ms:6.3f} ms (max |diff| out {out_err:.3g}, grad {grad_err:.3g})")
            except RuntimeError as error:
                line.append(f"{name} refused: {str(error).splitlines()[0][:100]}")
        for dtype in (torch.float32, torch.float16):
            try:  # on CUDA PyTorch itself picks cuDNN for these
                ms, _, _ = time_fwd_bwd(native, base.to(dtype), args.repeat)
                line.append(f"{str(dtype)[6:]} {ms:6.3f} ms")
            except RuntimeError as error:
                line.append(f"{str(dtype)[6:]} failed: {str(error).splitlines()[0][:60]}")
        print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
