#include "server/sweep_expansion.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/message_bounds.h"
#include "common/spec_fields.h"
#include "common/spec_ranges.h"
#include "common/status_macros.h"

namespace traind {

using trainer::v1::JobSpec;

namespace {

// An axis twice, or a value twice in one axis ("1e-3" and "0.001" alike), would only run the
// same member again: `repeat` says that.
absl::Status CheckNoRepeatedMember(const trainer::v1::SweepSpec& spec) {
  std::set<std::string> fields;
  for (const auto& axis : spec.axes()) {
    const std::string field = CanonicalSpecField(axis.field());
    if (!fields.insert(field).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "axes: '", field, "' is an axis twice; give it one axis with all its values"));
    }
    std::set<std::string> seen;
    for (const std::string& value : axis.values()) {
      JobSpec probe;
      RETURN_IF_ERROR(SetSpecField(&probe, axis.field(), value));
      if (!seen.insert(probe.SerializeAsString()).second) {
        return absl::InvalidArgumentError(absl::StrCat(
            "axes: '", field, "' has the value ", value.substr(0, 64),
            " twice; each value makes one member (repeat: runs each configuration N times)"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<JobSpec>> ExpandSweep(const trainer::v1::SweepSpec& spec) {
  // Counted before anything is copied, and without overflow: `total` is at most
  // kMaxSweepMembers * INT_MAX when it is multiplied by `repeat`.
  int64_t total = spec.configs().empty() ? 1 : spec.configs_size();
  for (const auto& axis : spec.axes()) {
    if (axis.values().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("axes: '", axis.field(), "' has no values"));
    }
    if (total > kMaxSweepMembers) break;
    total *= axis.values_size();
  }
  const int repeat = spec.repeat() == 0 ? 1 : spec.repeat();
  if (repeat < 0) return absl::InvalidArgumentError("repeat: must be 1 or more");
  if (total > kMaxSweepMembers || total * repeat > kMaxSweepMembers) {
    return absl::InvalidArgumentError(
        absl::StrCat("a sweep may have at most ", kMaxSweepMembers, " jobs"));
  }
  // A large base (a 3 MB name, say) times thousands of members would be gigabytes of copies.
  size_t largest_config = 0;
  for (const JobSpec& config : spec.configs()) {
    largest_config = std::max(largest_config, config.ByteSizeLong());
  }
  const int64_t member_bytes = static_cast<int64_t>(spec.base().ByteSizeLong() + largest_config);
  if (member_bytes * total * repeat > kMaxSweepBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a sweep's members may take at most ", kMaxSweepBytes >> 20,
                     " MiB: ", total * repeat, " members of up to ", member_bytes, " bytes each"));
  }
  // Each number against its field's range before anything is copied, so that a value refused in
  // a job is refused on an axis too, naming the field ("learning_rate: ..., got 1e+300").
  RETURN_IF_ERROR(CheckSpecRanges(spec.base()));
  for (const JobSpec& config : spec.configs()) RETURN_IF_ERROR(CheckSpecRanges(config));
  for (const auto& axis : spec.axes()) {
    const std::string field = CanonicalSpecField(axis.field());
    for (const std::string& value : axis.values()) {
      JobSpec probe;
      RETURN_IF_ERROR(SetSpecField(&probe, axis.field(), value));
      RETURN_IF_ERROR(CheckSpecFieldRange(probe, field));
      // A value is bounded as the field it sets is (an axis value may be a path, 4096 bytes; a
      // name may not): the member must pass what the same job submitted alone passes.
      if (absl::Status bounded = CheckMessageBounds(probe); !bounded.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("axes: a value of '", field, "': ", bounded.message()));
      }
    }
  }
  RETURN_IF_ERROR(CheckNoRepeatedMember(spec));
  std::vector<JobSpec> configs;
  if (spec.configs().empty()) {
    configs.push_back(spec.base());
  } else {
    for (const JobSpec& config : spec.configs()) {
      JobSpec merged = spec.base();
      merged.MergeFrom(config);
      configs.push_back(std::move(merged));
    }
  }
  for (const auto& axis : spec.axes()) {
    std::vector<JobSpec> crossed;
    for (const JobSpec& config : configs) {
      for (const std::string& value : axis.values()) {
        JobSpec member = config;
        RETURN_IF_ERROR(SetSpecField(&member, axis.field(), value));
        crossed.push_back(std::move(member));
      }
    }
    configs = std::move(crossed);
  }
  std::vector<JobSpec> members;
  for (int r = 0; r < repeat; ++r) members.insert(members.end(), configs.begin(), configs.end());
  return members;
}

}  // namespace traind
