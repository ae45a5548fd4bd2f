// Precompiled header of trainctl's library: nearly every file includes CLI11 (header-only), gRPC
// and the API's generated messages, and parsing them once per file was most of trainctl's cold
// build (280 s of CPU before, docs/benchmarks-history.md, "Install: quick start").
#include <grpcpp/grpcpp.h>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/v1/trainer.grpc.pb.h"
