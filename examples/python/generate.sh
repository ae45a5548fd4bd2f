#!/usr/bin/env bash
# Generates the Python gRPC code for traind's API (trainer/v1/trainer_pb2.py and
# trainer_pb2_grpc.py) from proto/ into examples/python/gen/ (or DIR). Never committed: rerun
# after the proto changes.
#   examples/python/generate.sh [DIR]
# Needs protoc and grpc_python_plugin (Debian: protobuf-compiler, protobuf-compiler-grpc) and, to
# run the result, python3-grpcio and python3-protobuf (all in deploy/install-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here/gen}

plugin=$(command -v grpc_python_plugin || true)
[ -x /usr/bin/grpc_python_plugin ] && plugin=/usr/bin/grpc_python_plugin
if [ -z "$plugin" ] || ! command -v protoc >/dev/null; then
  echo "generate.sh: needs protoc and grpc_python_plugin (deploy/install-deps.sh installs them)" >&2
  exit 1
fi

# google/protobuf/timestamp.proto comes with protoc; its Python module with python3-protobuf.
rm -rf "$out/trainer"
mkdir -p "$out"
protoc -I "$root/proto" --python_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" "$root/proto/trainer/v1/trainer.proto"
echo "generate.sh: wrote $out/trainer/v1/trainer_pb2.py and trainer_pb2_grpc.py"
