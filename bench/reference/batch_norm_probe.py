#!/usr/bin/env python3
"""Is cuDNN's batch norm usable, and faster, for bf16 activations? (issue 7, bf16 speedup)

PyTorch sends batch norm to cuDNN for fp32 and for fp16 with fp32 parameters, but never for bf16
(`_select_batch_norm_backend` excludes it), and its own channels_last kernels made bf16 batch
norm slower than fp32 in the H200 profiles (docs/benchmarks.md). This times forward + backward of
one BatchNorm2d in training mode on VGG16/ResNet-18 activation shapes (channels_last):
  native  bf16 : F.batch_norm, i.e. what autocast runs now
  cudnn   bf16 : aten::cudnn_batch_norm called directly with bf16 data, fp32 parameters
  cudnn   fp32 / fp16 : what PyTorch itself picks for those
and checks the direct cuDNN call against the native result. Prints one line per case.

  python3 bench/reference/batch_norm_probe.py [--repeat 50]
"""
import argparse

import torch
import torch.nn.functional as F

# (batch, channels, height, width): VGG16 at 224 px batch 64, ResNet-18 at 224 px batch 256.
SHAPES = [(64, 64, 224, 224), (64, 128, 112, 112), (64, 256, 56, 56), (64, 512, 28, 28),
          (256, 64, 112, 112), (256, 128, 28, 28), (256, 512, 7, 7)]


def native(x, weight, bias, mean, var):
    return F.batch_norm(x, mean, var, weight, bias, training=True, momentum=0.1, eps=1e-5)


def cudnn(x, weight, bias, mean, var):
    return torch.ops.aten.cudnn_batch_norm(x, weight, bias, mean, var, True, 0.1, 1e-5)[0]


def time_fwd_bwd(fn, x, repeat):
    weight = torch.ones(x.shape[1], device=x.device, requires_grad=True)
    bias = torch.zeros(x.shape[1], device=x.device, requires_grad=True)
    mean = torch.zeros(x.shape[1], device=x.device)
    var = torch.ones(x.shape[1], device=x.device)
    x = x.detach().requires_grad_()
    grad = torch.randn_like(x)
    for _ in range(3):  # warm-up: cuDNN plans, allocator
        fn(x, weight, bias, mean, var).backward(grad)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        out = fn(x, weight, bias, mean, var)
        out.backward(grad)
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeat, out.detach(), x.grad.detach()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name(0)}")
    for shape in SHAPES:
        base = torch.randn(shape, device="cuda").to(memory_format=torch.channels_last)
        line = [f"{'x'.join(map(str, shape)):>18}"]
        native_ms, native_out, native_grad = time_fwd_bwd(native, base.bfloat16(), args.repeat)
        line.append(f"native bf16 {native_ms:6.3f} ms")
        try:
            ms, out, grad = time_fwd_bwd(cudnn, base.bfloat16(), args.repeat)
            out_err = (out.float() - native_out.float()).abs().max().item()
            grad_err = (grad.float() - native_grad.float()).abs().max().item()
            line.append(f"cudnn bf16 {ms:6.3f} ms (max |diff| out {out_err:.3g}, grad {grad_err:.3g})")
        except RuntimeError as error:
            line.append(f"cudnn bf16 refused: {str(error).splitlines()[0][:100]}")
        for dtype in (torch.float32, torch.float16):
            ms, _, _ = time_fwd_bwd(native, base.to(dtype), args.repeat)  # PyTorch picks cuDNN
            line.append(f"{str(dtype)[6:]} {ms:6.3f} ms")
        print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
