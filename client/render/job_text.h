// Human-readable renderings of Jobs for `show` and `list`. Pure functions.
#ifndef TRAIND_CLIENT_RENDER_JOB_TEXT_H_
#define TRAIND_CLIENT_RENDER_JOB_TEXT_H_

#include <string>
#include <vector>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// "2026-11-29 15:40:01" in local time, "-" when unset.
std::string FormatTimestamp(const google::protobuf::Timestamp& t);

// The multi-line description `trainctl show` prints.
std::string DescribeJob(const trainer::v1::Job& job);

// An evaluation's accuracy, per-class accuracy and (up to 20 classes) confusion matrix.
std::string DescribeEvaluation(const trainer::v1::Evaluation& evaluation,
                               const std::string& dataset);

// The table `trainctl list` prints, header included.
std::string JobTable(const std::vector<trainer::v1::Job>& jobs);

}  // namespace traind

#endif  // TRAIND_CLIENT_RENDER_JOB_TEXT_H_
