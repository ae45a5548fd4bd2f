// What tells a sweep's members apart: the fields they differ in, and a member's label made of
// its values of them ("lr=1e-3 batch_size=128"), so that two members never read alike ("mlp bs
// 128" twice). Shared by the sweep report and list (traind) and `watch --sweep` (trainctl).
#ifndef TRAIND_COMMON_SWEEP_FIELDS_H_
#define TRAIND_COMMON_SWEEP_FIELDS_H_

#include <string>
#include <vector>

#include "trainer/v1/trainer.pb.h"

namespace traind {

// The fields a sweep's members differ in, besides model and device (their own columns
// everywhere): its axes with two or more values, then the fields a search draws, then the fields
// its explicit configurations set, each once, canonical names ("learning_rate", "param.lr").
std::vector<std::string> VaryingFields(const trainer::v1::SweepSpec& spec);

// "learning_rate=0.01 param.seed=2": `member`'s values of `fields` ("" when none is set).
std::string MemberLabel(const trainer::v1::JobSpec& member, const std::vector<std::string>& fields);

// "param.lr=1e-3,1e-1 device=cpu,cuda": every axis and its values, model and device included (a
// search's: "learning_rate=loguniform:1e-4:1e-1 random search of 48 trials, asha"), for a list
// of sweeps; at most `max_size` characters (then ending "...").
std::string AxesText(const trainer::v1::SweepSpec& spec, size_t max_size);

}  // namespace traind

#endif  // TRAIND_COMMON_SWEEP_FIELDS_H_
