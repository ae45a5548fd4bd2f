"""What NVML says of a small training loop on the GPU: its busy share (time a kernel runs) against
GPM's SM activity and occupancy (how much of the GPU those kernels fill). Hopper or newer.
    python3 bench/gpm_probe.py [--batch 64] [--seconds 3]"""
import argparse, ctypes, threading, time
import torch

class Metric(ctypes.Structure):
    _fields_ = [("metricId", ctypes.c_uint), ("nvmlReturn", ctypes.c_int), ("value", ctypes.c_double),
                ("shortName", ctypes.c_char_p), ("longName", ctypes.c_char_p), ("unit", ctypes.c_char_p)]

class MetricsGet(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("numMetrics", ctypes.c_uint), ("sample1", ctypes.c_void_p),
                ("sample2", ctypes.c_void_p), ("metrics", Metric * 512)]

class Support(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint), ("isSupportedDevice", ctypes.c_uint)]

class Utilization(ctypes.Structure):
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]

IDS = {"sm_util": 2, "sm_occupancy": 3, "dram_bw": 10}

def lenet_trainer(batch):
    """A LeNet5-like eager training step on random images: train(seconds) runs it that long and
    returns how many steps it took."""
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                                torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                torch.nn.Linear(400, 120), torch.nn.ReLU(), torch.nn.Linear(120, 84), torch.nn.ReLU(),
                                torch.nn.Linear(84, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(batch, 1, 28, 28, device=dev); y = torch.randint(0, 10, (batch,), device=dev)

    def train(seconds):
        n, end = 0, time.time() + seconds
        while time.time() < end:
            opt.zero_grad(); torch.nn.functional.cross_entropy(model(x), y).backward(); opt.step(); n += 1
        torch.cuda.synchronize()
        return n
    return train


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--alone", action="store_true", help="only train, print steps (a child)")
    parser.add_argument("--concurrent", type=int, default=0, help="N children training at once")
    args = parser.parse_args()
    if args.alone or args.concurrent:
        return together(args)
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    assert nvml.nvmlInit_v2() == 0
    device = ctypes.c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(device)) == 0
    support = Support(1, 0)
    rc = nvml.nvmlGpmQueryDeviceSupport(device, ctypes.byref(support))
    print("GPM support:", rc, support.isSupportedDevice, flush=True)
    samples = [ctypes.c_void_p(), ctypes.c_void_p()]
    for s in samples:
        assert nvml.nvmlGpmSampleAlloc(ctypes.byref(s)) == 0

    def window(label, work):
        stop = threading.Event()
        busy = []
        def poll():
            while not stop.is_set():
                u = Utilization()
                nvml.nvmlDeviceGetUtilizationRates(device, ctypes.byref(u))
                busy.append(u.gpu)
                time.sleep(0.1)
        t = threading.Thread(target=poll); t.start()
        time.sleep(0.3)
        r1 = nvml.nvmlGpmSampleGet(device, samples[0])
        steps = work(args.seconds)
        r2 = nvml.nvmlGpmSampleGet(device, samples[1])
        stop.set(); t.join()
        get = MetricsGet(); get.version = 1; get.numMetrics = len(IDS)
        get.sample1, get.sample2 = samples[0].value, samples[1].value
        for i, mid in enumerate(IDS.values()):
            get.metrics[i].metricId = mid
        rc = nvml.nvmlGpmMetricsGet(ctypes.byref(get))
        values = {name: (round(get.metrics[i].value, 1), get.metrics[i].nvmlReturn) for i, name in enumerate(IDS)}
        print(f"{label}: steps/s {steps / args.seconds:.0f}, NVML busy {sum(busy)/max(1,len(busy)):.0f}%, "
              f"GPM rc {r1},{r2},{rc}: {values}", flush=True)

    dev = torch.device("cuda")
    train = lenet_trainer(args.batch)

    def matmul(seconds):
        a = torch.randn(8192, 8192, device=dev); n, end = 0, time.time() + seconds
        while time.time() < end:
            a @ a; n += 1
            if n % 10 == 0: torch.cuda.synchronize()
        torch.cuda.synchronize(); return n

    window("idle", lambda s: (time.sleep(s), 0)[1])
    train(0.5)
    window(f"LeNet5-like eager b{args.batch}", train)
    window("matmul 8192", matmul)

def together(args):
    import subprocess, sys
    if args.concurrent:
        children = [subprocess.Popen([sys.executable, __file__, "--alone", "--batch", str(args.batch),
                                      "--seconds", str(args.seconds)], stdout=subprocess.PIPE, text=True)
                    for _ in range(args.concurrent)]
        steps = [int(c.communicate()[0].split()[-1]) for c in children]
        print(f"{args.concurrent} at once, b{args.batch}: {sum(steps) / args.seconds:.0f} steps/s in all "
              f"({', '.join(str(s) for s in steps)})", flush=True)
        return
    train = lenet_trainer(args.batch)
    train(0.2)  # warm: kernels loaded, allocator filled
    print(train(args.seconds))


main()
