#include "slurm/sbatch_script.h"

#include "gtest/gtest.h"

namespace traind {
namespace {

using Args = std::vector<std::string>;

TEST(SbatchArgumentsTest, OneTaskByDefaultAndOnlyTheResourcesTheSpecSets) {
  trainer::v1::JobSpec spec;
  EXPECT_EQ(SbatchArguments(spec, "traind-7-ab12", "/state/jobs/7"),
            (Args{"--parsable", "--job-name=traind-7-ab12", "--no-requeue", "--ntasks=1",
                  "--output=/state/jobs/7/slurm-%j.out"}));
  spec.set_processes(4);
  spec.set_nodes(2);
  spec.set_gpus_per_node(2);
  spec.set_partition("gpu,debug");
  spec.set_time_limit("1-00:00:00");
  EXPECT_EQ(SbatchArguments(spec, "n", "/j"),
            (Args{"--parsable", "--job-name=n", "--no-requeue", "--ntasks=4",
                  "--output=/j/slurm-%j.out", "--nodes=2", "--gpus-per-node=2",
                  "--ntasks-per-node=2", "--partition=gpu,debug", "--time=1-00:00:00"}));
}

TEST(BatchScriptTest, RunsOneTaskPerRankWithTheConnectionQuoted) {
  absl::StatusOr<std::string> script =
      BatchScript(12, {"/opt/traind/bin/traind-slurm-task", "head.example:40123", "ab12"});
  ASSERT_TRUE(script.ok()) << script.status();
  EXPECT_EQ(script->rfind("#!/bin/sh\n", 0), 0u);
  EXPECT_NE(script->find("export TRAIND_SLURM_CONNECT='head.example:40123'\n"), std::string::npos);
  EXPECT_NE(script->find("export TRAIND_SLURM_SECRET='ab12'\n"), std::string::npos);
  EXPECT_NE(script->find("exec srun --kill-on-bad-exit=1 '/opt/traind/bin/traind-slurm-task'\n"),
            std::string::npos);
  EXPECT_EQ(script->find("MASTER_PORT"), std::string::npos);  // each task derives it
}

// What a shell would read as the end of a quoted word, or of a line, is refused, not escaped.
TEST(BatchScriptTest, RefusesPartsItCannotQuote) {
  for (const BatchScriptParts& parts :
       {BatchScriptParts{"/opt/it's/traind-slurm-task", "h:1", "s"},
        BatchScriptParts{"/bin/t", "h:1\nrm -rf /", "s"}, BatchScriptParts{"/bin/t", "h:1", ""}}) {
    absl::StatusOr<std::string> script = BatchScript(1, parts);
    EXPECT_EQ(script.status().code(), absl::StatusCode::kInvalidArgument) << parts.task_path;
  }
}

}  // namespace
}  // namespace traind
