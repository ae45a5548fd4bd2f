// What a script job may ask (common/script_spec.h) and how its placeholders are put in.
#include "common/script_spec.h"

#include <string>
#include <vector>

#include "common/job_spec.h"
#include "common/spec_fields.h"
#include "gtest/gtest.h"

namespace traind {
namespace {

trainer::v1::JobSpec Program(std::vector<std::string> args) {
  trainer::v1::JobSpec spec;
  for (const std::string& arg : args) spec.mutable_script()->add_args(arg);
  trainer::v1::ScriptFile* file = spec.mutable_script()->add_files();
  file->set_path("train.py");
  file->set_digest("sha256:" + std::string(64, 'a'));
  return spec;
}

TEST(ScriptSpecTest, APlainProgramIsValidWithItsDefaults) {
  trainer::v1::JobSpec spec = Program({"train.py", "--epochs", "3"});
  spec.set_device("cpu");
  ApplyDefaults(&spec);  // sets none of the built-in trainer's fields
  EXPECT_FALSE(spec.has_epochs());
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  spec.set_processes(2);  // CPU ranks, as for built-in jobs
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  spec.set_device("cuda");
  EXPECT_NE(ValidateJobSpec(spec).message().find("processes: CPU ranks"), std::string::npos);
}

TEST(ScriptSpecTest, ParamsArePutInWhereTheArgumentsNameThem) {
  trainer::v1::JobSpec spec =
      Program({"train.py", "--lr={lr}", "--device", "{device}", "-c", "print({'a': 1})"});
  ASSERT_TRUE(SetSpecField(&spec, "param.lr", "3e-4").ok());
  EXPECT_EQ(GetSpecField(spec, "param.lr"), "3e-4");
  EXPECT_EQ(CanonicalSpecField("param.lr"), "param.lr");
  EXPECT_EQ(CanonicalSpecField("param.9x"), "");
  EXPECT_TRUE(ValidateJobSpec(spec).ok()) << ValidateJobSpec(spec);
  EXPECT_EQ(ExpandScriptArgs(spec.script(), "cuda"),
            (std::vector<std::string>{"train.py", "--lr=3e-4", "--device", "cuda", "-c",
                                      "print({'a': 1})"}));
  ASSERT_TRUE(SetSpecField(&spec, "param.bs", "64").ok());
  EXPECT_NE(ValidateJobSpec(spec).message().find("'bs' is not used: put {bs}"), std::string::npos)
      << ValidateJobSpec(spec);
  EXPECT_FALSE(SetSpecField(&spec, "param.a-b", "1").ok());
}

TEST(ScriptSpecTest, PathsStayInsideTheWorkingDirectory) {
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/", "a/."}) {
    EXPECT_FALSE(ValidateScriptPath("path", bad).ok()) << bad;
  }
  for (const char* good : {"train.py", "lib/util.py", ".hidden", "a..b/c"}) {
    EXPECT_TRUE(ValidateScriptPath("path", good).ok()) << good;
  }
  trainer::v1::JobSpec spec = Program({"train.py"});
  trainer::v1::ScriptFile* file = spec.mutable_script()->add_files();
  file->set_path("train.py/inner.py");
  file->set_digest("sha256:" + std::string(64, 'b'));
  EXPECT_NE(ValidateJobSpec(spec).message().find("is a file and also a folder"), std::string::npos)
      << ValidateJobSpec(spec);
}

}  // namespace
}  // namespace traind
