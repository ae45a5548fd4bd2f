#!/usr/bin/python3
"""Submit a training job to traind and follow its events to the end, from Python over gRPC.

Generate the client code from proto/ first (examples/python/generate.sh), then:

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
import ipaddress
import os
import sys

# Where generate.sh wrote the code (TRAINCTL_PYTHON_GEN overrides, e.g. for tests).
sys.path.insert(0, os.environ.get("TRAINCTL_PYTHON_GEN") or
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))
try:
    import grpc
    from trainer.v1 import trainer_pb2 as pb
    from trainer.v1 import trainer_pb2_grpc as pb_grpc
except ImportError as e:
    sys.exit(f"{e}: run examples/python/generate.sh, and apt-get install python3-grpcio python3-protobuf")

TERMINAL = {pb.Job.SUCCEEDED, pb.Job.FAILED, pb.Job.CANCELLED}
UNREACHABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED,
               grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.DEADLINE_EXCEEDED}


def default_addr():
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.environ.get("TRAINCTL_ADDR") or f"unix:{state}/traind/traind.sock"


def read_bytes(path):
    if not path:
        return None
    with open(path, "rb") as f:
        return f.read()


def read_token(path):
    """The first token in a token file: blank lines and # comments skipped, a name after it ignored."""
    with open(path) as f:
        for line in f:
            if line.strip() and not line.lstrip().startswith("#"):
                return line.split()[0]
    sys.exit(f"{path}: no token in it")


def open_channel(args):
    addr = "unix:" + args.addr if args.addr.startswith("/") else args.addr
    if addr.startswith("unix:"):
        return grpc.insecure_channel(addr)
    host = addr.rsplit(":", 1)[0].strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if loopback and not (args.tls_ca or args.tls_cert):
        return grpc.insecure_channel(addr)
    # No --tls-ca: the system's roots. --tls-cert/--tls-key: mutual TLS (traind --tls-client-ca).
    creds = grpc.ssl_channel_credentials(root_certificates=read_bytes(args.tls_ca),
                                         private_key=read_bytes(args.tls_key),
                                         certificate_chain=read_bytes(args.tls_cert))
    return grpc.secure_channel(addr, creds)


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
    p.add_argument("--addr", default=default_addr(), help="unix:PATH, /PATH or HOST:PORT")
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

    metadata = [("authorization", "Bearer " + read_token(args.token_file))] if args.token_file else []
    spec = pb.JobSpec(model=args.model, dataset=args.dataset, epochs=args.epochs, device=args.device,
                      name=args.name, limit_train=args.limit_train, limit_test=args.limit_test)
    state = None
    job_id = None
    try:
        with open_channel(args) as channel:
            stub = pb_grpc.TrainerStub(channel)
            job = stub.SubmitJob(pb.SubmitJobRequest(spec=spec), metadata=metadata, timeout=30)
            job_id = job.id
            print(f"submitted job {job.id} ({job.spec.model} on {job.spec.dataset}, "
                  f"device {job.spec.device or 'auto'})", flush=True)
            for event in stub.WatchJob(pb.WatchJobRequest(id=job.id, from_seq=0), metadata=metadata):
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
    if state not in TERMINAL:
        print("error: the stream ended before the job did", file=sys.stderr)
        return 3
    print(f"job {job_id} {pb.Job.State.Name(state)}")
    return 0 if state == pb.Job.SUCCEEDED else 1


if __name__ == "__main__":
    sys.exit(main())
