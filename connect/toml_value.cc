#include "connect/toml_value.h"

#include "absl/strings/str_cat.h"

namespace traind {

namespace {

// A float as a flag reads it back: 0.001 stays "0.001", 1e-12 stays "1e-12".
std::string FloatText(double value) { return absl::StrCat(value); }

}  // namespace

absl::StatusOr<TomlText> ValueAsText(const toml::node& value) {
  TomlText text;
  if (auto s = value.value_exact<std::string>()) {
    text.items = {*s};
  } else if (auto i = value.value_exact<int64_t>()) {
    text = {TomlKind::kInteger, {absl::StrCat(*i)}};
  } else if (auto d = value.value_exact<double>()) {
    text = {TomlKind::kFloat, {FloatText(*d)}};
  } else if (auto b = value.value_exact<bool>()) {
    text = {TomlKind::kBoolean, {*b ? "true" : "false"}};
  } else if (const toml::array* items = value.as_array()) {
    text.kind = TomlKind::kArray;
    for (const toml::node& item : *items) {
      if (auto s = item.value_exact<std::string>()) {
        text.items.push_back(*s);
      } else if (auto i = item.value_exact<int64_t>()) {
        text.items.push_back(absl::StrCat(*i));
      } else if (auto d = item.value_exact<double>()) {
        text.items.push_back(FloatText(*d));
      } else {
        return absl::InvalidArgumentError("a list's items are strings or numbers");
      }
    }
  } else {
    return absl::InvalidArgumentError("a string, number, boolean or list");
  }
  return text;
}

const char* TomlKindName(TomlKind kind) {
  switch (kind) {
    case TomlKind::kInteger:
      return "an integer";
    case TomlKind::kFloat:
      return "a number";
    case TomlKind::kBoolean:
      return "true or false";
    case TomlKind::kArray:
      return "a list";
    default:
      return "a string";
  }
}

}  // namespace traind
