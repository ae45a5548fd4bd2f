// A program's intra-op threads: its own --threads, or its share of the cores when a search packs
// it with others (WorkerRequest.cpu_sharers).
#include "script/script_environment.h"

#include <algorithm>

#include "common/cpu_threads.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

std::string Variable(const std::vector<std::string>& environment, const std::string& name) {
  for (const std::string& entry : environment) {
    if (entry.rfind(name + "=", 0) == 0) return entry.substr(name.size() + 1);
  }
  return "";
}

TEST(ScriptEnvironmentTest, APackedProgramTakesItsShareOfTheCoresForItsThreads) {
  const ScriptDirectories directories{"/tmp/c", "/tmp/o", "/tmp/t"};
  trainer::v1::WorkerRequest request;
  request.mutable_spec()->set_device("cpu");
  EXPECT_EQ(Variable(ScriptEnvironment(request, directories, {}, "cpu"), "OMP_NUM_THREADS"), "");
  request.set_cpu_sharers(2);
  const int share = std::max(1, UsableCores(ReadCpuFacts()) / 2);
  const std::vector<std::string> packed = ScriptEnvironment(request, directories, {}, "cpu");
  EXPECT_EQ(Variable(packed, "OMP_NUM_THREADS"), std::to_string(share));
  EXPECT_EQ(Variable(packed, "MKL_NUM_THREADS"), std::to_string(share));
  request.mutable_spec()->set_threads(3);  // its own choice stands
  EXPECT_EQ(Variable(ScriptEnvironment(request, directories, {}, "cpu"), "OMP_NUM_THREADS"), "3");
}

}  // namespace
}  // namespace traind
