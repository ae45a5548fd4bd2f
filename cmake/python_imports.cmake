# Rewrites protoc's Python output so the generated modules import each other from inside the
# traind package (traind._api.trainer.v1) instead of as a top-level "trainer" package, which a
# user's own trainer.py would shadow.
#   cmake -DFILE=.../trainer_pb2_grpc.py -P cmake/python_imports.cmake
file(READ "${FILE}" content)
string(REGEX REPLACE "(^|\n)from trainer\\.v1 import" "\\1from traind._api.trainer.v1 import"
       content "${content}")
file(WRITE "${FILE}" "${content}")
