#include "common/child_environment.h"

#include <cstring>
#include <string_view>

extern char** environ;

namespace traind {

ChildEnvironment::ChildEnvironment(std::vector<std::string> extras) : extras_(std::move(extras)) {
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string_view name(*entry, std::strcspn(*entry, "="));
    bool replaced = false;
    for (const std::string& extra : extras_) {
      replaced = replaced || (extra.size() > name.size() && extra[name.size()] == '=' &&
                              extra.compare(0, name.size(), name) == 0);
    }
    if (!replaced) pointers_.push_back(*entry);
  }
  for (std::string& extra : extras_) pointers_.push_back(extra.data());
  pointers_.push_back(nullptr);
}

}  // namespace traind
