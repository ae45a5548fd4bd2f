// The kinds of value a TOML key may hold, without toml++'s header (connect/toml_value.h reads
// them).
#ifndef TRAIND_CONNECT_TOML_KIND_H_
#define TRAIND_CONNECT_TOML_KIND_H_

namespace traind {

enum class TomlKind { kString, kInteger, kFloat, kBoolean, kArray };

const char* TomlKindName(TomlKind kind);  // "a string", "an integer", ...

}  // namespace traind

#endif  // TRAIND_CONNECT_TOML_KIND_H_
