#include "data/saved_dict.h"

#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"

namespace traind {

absl::StatusOr<c10::Dict<c10::IValue, c10::IValue>> ReadSavedDict(const std::string& path,
                                                                  const std::string& field,
                                                                  const std::string& expected) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(field, ": cannot open ", path));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    if (const size_t newline = what.find('\n'); newline != std::string::npos) what.resize(newline);
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": not a file written by torch.save: ", what));
  }
  if (!value.isGenericDict()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": holds a ", value.tagKind(), "; expected ", expected));
  }
  return value.toGenericDict();
}

}  // namespace traind
