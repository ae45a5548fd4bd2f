#!/usr/bin/env bash
# Several traind hosts over NCCL, on one machine with two GPUs (issue 19): traind "a" (GPU 0) and
# traind "b" (GPU 1, CUDA_VISIBLE_DEVICES) as two hosts on loopback with a token, then one LeNet5
# job with --device cuda --hosts a,b (NCCL between the two traind's ranks), next to the same job
# with --gpus 2 on a third traind that sees both GPUs. Prints each job's ranks, weights and
# accuracy, and the peer's log.
#   BUILD_DIR=build-cuda bench/two_hosts_gpu.sh          (from the project root)
set -uo pipefail
bin=$PWD/${BUILD_DIR:-build-cuda}/bin
w=$(mktemp -d /tmp/two-hosts.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null' EXIT
(umask 077; echo "tok-0123456789abcdef admin admin" >"$w/tokens"; echo "tok-0123456789abcdef" >"$w/token")
CUDA_VISIBLE_DEVICES=1 "$bin/traind" --name b --state-dir "$w/b" --listen 127.0.0.1:50062 \
  --listen "unix:$w/b.sock" --insecure-loopback --token-file "$w/tokens" >"$w/b.log" 2>&1 &
CUDA_VISIBLE_DEVICES=0 "$bin/traind" --name a --state-dir "$w/a" --listen 127.0.0.1:50061 \
  --listen "unix:$w/a.sock" --insecure-loopback --token-file "$w/tokens" \
  --peer b=127.0.0.1:50062 --peer-token-file "$w/token" >"$w/a.log" 2>&1 &
"$bin/traind" --name c --state-dir "$w/c" --listen "unix:$w/c.sock" >"$w/c.log" 2>&1 &
sleep 6  # the three daemons answer (each probes its devices first)
job=(--model lenet5 --dataset fashion-mnist --epochs 1 --limit-train 12000 --limit-test 2000 --log-every 20)
for host in a c; do
  if [ $host = a ]; then extra=(--device cuda --hosts a,b); else extra=(--gpus 2); fi
  "$bin/trainctl" --addr "unix:$w/$host.sock" submit "${job[@]}" "${extra[@]}" --watch >"$w/$host.watch" 2>&1
  echo "== $host: ${extra[*]}: exit $?"
  "$bin/trainctl" --addr "unix:$w/$host.sock" logs 1 | grep -E "Started|sha256 by rank|Test accuracy|NCCL|nccl|rank 1|ERROR|error" | head -8
  "$bin/trainctl" --addr "unix:$w/$host.sock" show 1 | grep -Ei "state|accuracy|took|elapsed" | head -5
done
echo "== b's log"; tail -5 "$w/b.log"
echo "== a's log"; tail -5 "$w/a.log"
