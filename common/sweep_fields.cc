#include "common/sweep_fields.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/spec_fields.h"

namespace traind {

std::vector<std::string> VaryingFields(const trainer::v1::SweepSpec& spec) {
  std::vector<std::string> fields;
  for (const auto& axis : spec.axes()) {
    const std::string name = CanonicalSpecField(axis.field());
    if (name != "model" && name != "device" && axis.values_size() > 1) fields.push_back(name);
  }
  // Fields set by explicit configurations vary too, and those a search draws.
  std::set<std::string> seen(fields.begin(), fields.end());
  for (const auto& param : spec.search().params()) {
    const std::string name = CanonicalSpecField(param.field());
    if (name != "model" && name != "device" && seen.insert(name).second) fields.push_back(name);
  }
  for (const auto& config : spec.configs()) {
    std::vector<const google::protobuf::FieldDescriptor*> set;
    config.GetReflection()->ListFields(config, &set);
    for (const auto* f : set) {
      if (f->name() != "model" && f->name() != "device" && f->name() != "name" &&
          f->cpp_type() != google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE &&
          seen.insert(f->name()).second) {
        fields.push_back(f->name());
      }
    }
  }
  return fields;
}

std::string MemberLabel(const trainer::v1::JobSpec& member,
                        const std::vector<std::string>& fields) {
  std::vector<std::string> parts;
  for (const std::string& field : fields) {
    const std::string value = GetSpecField(member, field);
    if (!value.empty()) parts.push_back(absl::StrCat(field, "=", value));
  }
  return absl::StrJoin(parts, " ");
}

std::string AxesText(const trainer::v1::SweepSpec& spec, size_t max_size) {
  std::vector<std::string> parts;
  for (const auto& axis : spec.axes()) {
    parts.push_back(
        absl::StrCat(CanonicalSpecField(axis.field()), "=", absl::StrJoin(axis.values(), ",")));
  }
  for (const auto& param : spec.search().params()) {
    parts.push_back(absl::StrCat(CanonicalSpecField(param.field()), "=", param.distribution()));
  }
  if (spec.has_search()) {
    parts.push_back(absl::StrCat(spec.search().method(), " search of ", spec.search().trials(),
                                 " trials", spec.search().early_stop().empty() ? "" : ", ",
                                 spec.search().early_stop()));
  }
  if (spec.configs_size() > 0) parts.push_back(absl::StrCat(spec.configs_size(), " configs"));
  if (spec.repeat() > 1) parts.push_back(absl::StrCat("repeat ", spec.repeat()));
  std::string text = absl::StrJoin(parts, " ");
  if (text.size() > max_size) text = text.substr(0, max_size > 3 ? max_size - 3 : 0) + "...";
  return text;
}

}  // namespace traind
