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
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  return ParseSavedDict(bytes, field, expected);
}

absl::StatusOr<c10::Dict<c10::IValue, c10::IValue>> ParseSavedDict(const std::vector<char>& bytes,
                                                                   const std::string& field,
                                                                   const std::string& expected) {
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const c10::Error& e) {
    std::string what = e.what_without_backtrace();
    if (const size_t newline = what.find('\n'); newline != std::string::npos) what.resize(newline);
    // LibTorch reads collections.OrderedDict as None, then fails to add the items to it.
    const bool ordered_dict = what.find("GenericDict but got None") != std::string::npos;
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ",
        ordered_dict ? "holds an OrderedDict (model.state_dict()), which LibTorch cannot read; "
                       "save a plain dict: torch.save(dict(model.state_dict()), path)"
                     : absl::StrCat("not a file written by torch.save: ", what)));
  }
  if (!value.isGenericDict()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": holds a ", value.tagKind(), "; expected ", expected));
  }
  return value.toGenericDict();
}

}  // namespace traind
