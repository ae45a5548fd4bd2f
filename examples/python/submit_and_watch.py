#!/usr/bin/python3
"""Submit a training job to traind and follow its events to the end, from Python over gRPC.

It uses the traind package's client (python/traind/client.py; the build generates its gRPC code
from proto/ into build/python, which this script finds by itself):

  # the local daemon, over its Unix socket (no token needed)
  examples/python/submit_and_watch.py --model lenet5 --dataset fashion-mnist --epochs 1

  # a remote daemon over TLS with a bearer token (files from deploy/make-certs.sh)
  examples/python/submit_and_watch.py --addr trainbox:50051 --tls-ca certs/ca.pem \\
      --tls-cert certs/client.pem --tls-key certs/client.key --token-file certs/token

--addr is unix:PATH, /PATH or HOST:PORT. HOST:PORT uses TLS unless HOST is loopback and no TLS
file is given (for traind --insecure-loopback). Defaults come from the same environment variables
as trainctl: TRAINCTL_ADDR, TRAINCTL_TLS_CA, TRAINCTL_TLS_CERT, TRAINCTL_TLS_KEY,
TRAINCTL_TOKEN_FILE. The token is sent as `authorization: Bearer TOKEN` on every call.

Prints one line per event. Exit status: 0 the job succeeded, 1 it failed or was cancelled,
2 bad usage or a request traind refused, 3 traind unreachable or the token refused.
"""
import argparse
import os
import pathlib
import sys

# The traind package as the build left it (TRAIND_PYTHON_PACKAGE overrides: an install's
# lib/traind/python, or a test's build tree).
sys.path.insert(0, os.environ.get("TRAIND_PYTHON_PACKAGE") or
                str(pathlib.Path(__file__).resolve().parents[2] / "build" / "python"))
try:
    import grpc
    from traind.client import Client, TERMINAL_STATES, pb
except ImportError as e:
    sys.exit(f"{e}\n(build the project first: deploy/build.sh; apt-get install python3-grpcio "
             "python3-protobuf)")

UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED,
               grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.DEADLINE_EXCEEDED}


def describe(event):
    kind = event.WhichOneof("kind")
    if kind == "state_change":
        sc = event.state_change
        return f"state {pb.Job.State.Name(sc.state)}" + (f": {sc.reason}" if sc.reason else "")
    if kind == "step":
        s = event.step
        return (f"step epoch {s.epoch}/{s.epochs} batch {s.batch}/{s.batches_per_epoch} "
                f"loss {s.loss:.4f} {s.samples_per_second:.0f} samples/s")
    if kind == "epoch_summary":
        e = event.epoch_summary
        line = f"epoch {e.epoch}/{e.epochs} done in {e.epoch_seconds_no_eval:.2f} s, train loss {e.train_loss:.4f}"
        if e.evaluated:
            line += f", train acc {e.train_accuracy:.4f}, validation acc {e.validation_accuracy:.4f}"
        return line
    if kind == "final_result":
        r = event.final_result
        return (f"result test accuracy {r.test_accuracy:.4f}, training {r.total_training_seconds:.2f} s, "
                f"total {r.total_seconds:.2f} s, batch size {r.batch_size}")
    if kind == "log":
        return f"log {pb.LogLine.Severity.Name(event.log.severity)}: {event.log.text}"
    if kind == "bench":
        b = event.bench
        return f"bench {b.kind} on {b.device}: {b.seconds:.6f} s, {b.tflops:.2f} TFLOPS"
    return f"{kind}"


def main():
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--addr", default=env("TRAINCTL_ADDR"),
                   help="unix:PATH, /PATH or HOST:PORT (default: the local daemon)")
    p.add_argument("--tls-ca", default=env("TRAINCTL_TLS_CA"), help="CA that signed traind's certificate")
    p.add_argument("--tls-cert", default=env("TRAINCTL_TLS_CERT"), help="client certificate (mutual TLS)")
    p.add_argument("--tls-key", default=env("TRAINCTL_TLS_KEY"), help="client certificate's key")
    p.add_argument("--token-file", default=env("TRAINCTL_TOKEN_FILE"), help="file holding the bearer token")
    p.add_argument("--model", default="lenet5", help="lenet5 | mlp | vgg16 | resnet18")
    p.add_argument("--dataset", default="fashion-mnist")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--device", default="", help="cpu | cuda | cuda:N | mps; default: the best one")
    p.add_argument("--limit-train", type=int, help="train on the first N images only")
    p.add_argument("--limit-test", type=int, help="test on the first N images only")
    p.add_argument("--name", default="python example")
    args = p.parse_args()
    if bool(args.tls_cert) != bool(args.tls_key):
        p.error("--tls-cert and --tls-key go together")

    spec = pb.JobSpec(model=args.model, dataset=args.dataset, epochs=args.epochs, device=args.device,
                      name=args.name, limit_train=args.limit_train, limit_test=args.limit_test)
    state = None
    job_id = None
    try:
        with Client(args.addr, token_file=args.token_file, tls_ca=args.tls_ca,
                    tls_cert=args.tls_cert, tls_key=args.tls_key) as traind:
            job = traind.submit(spec)
            job_id = job.id
            print(f"submitted job {job.id} ({job.spec.model} on {job.spec.dataset}, "
                  f"device {job.spec.device or 'auto'})", flush=True)
            for event in traind.watch(job.id):
                print(f"[{event.seq}] {describe(event)}", flush=True)
                if event.WhichOneof("kind") == "state_change":
                    state = event.state_change.state
    except grpc.RpcError as e:
        print(f"error: {e.code().name}: {e.details()}", file=sys.stderr)
        if e.code() in UNREACHABLE:
            return 3
        return 2 if e.code() == grpc.StatusCode.INVALID_ARGUMENT else 1
    except KeyboardInterrupt:
        if job_id is not None:
            print(f"\nstopped watching; job {job_id} goes on", file=sys.stderr)
        return 130
    if state not in TERMINAL_STATES:
        print("error: the stream ended before the job did", file=sys.stderr)
        return 3
    print(f"job {job_id} {pb.Job.State.Name(state)}")
    return 0 if state == pb.Job.SUCCEEDED else 1


if __name__ == "__main__":
    sys.exit(main())
