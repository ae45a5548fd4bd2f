// Precompiled header of traind's library: gRPC, the API's generated messages and Abseil's
// synchronisation are in nearly every file, and parsing them once per file was most of its cold
// build (docs/benchmarks-history.md, "Install: quick start").
#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "trainer/v1/trainer.grpc.pb.h"
#include "trainer/v1/worker.pb.h"
