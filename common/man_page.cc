#include "common/man_page.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace traind {

namespace {

// Text safe in roff: backslashes escaped, dashes as minus signs (so `--flag` can be copied and
// searched), and a line never starting with a control character ('.' or ').
std::string Roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (const char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
    line_start = c == '\n';
  }
  return out;
}

std::string Paragraphs(const std::string& text) {
  std::string out;
  for (absl::string_view paragraph : absl::StrSplit(text, "\n\n", absl::SkipWhitespace())) {
    absl::StrAppend(&out, ".PP\n", Roff(std::string(absl::StripAsciiWhitespace(paragraph))), "\n");
  }
  return out;
}

// What a value looks like: "SIZE" for "INT:SIZE", "N" for numbers, "VALUE" for text.
std::string ValueName(const CLI::Option& option) {
  const std::string type = option.get_type_name();
  if (type.find("SIZE") != std::string::npos) return "SIZE";
  if (type.rfind("INT", 0) == 0 || type.rfind("UINT", 0) == 0 || type.rfind("FLOAT", 0) == 0) {
    return "N";
  }
  if (type.find("FILE") != std::string::npos) return "FILE";
  return "VALUE";
}

bool Hidden(const CLI::Option& option) { return option.get_group().empty(); }

std::string Options(const CLI::App& app, const std::map<std::string, std::string>& general) {
  std::string out;
  for (const CLI::Option* option : app.get_options()) {
    if (Hidden(*option)) continue;
    std::string names;
    for (const std::string& name : option->get_snames())
      absl::StrAppend(&names, "\\fB\\-", name, "\\fR, ");
    for (const std::string& name : option->get_lnames()) {
      absl::StrAppend(&names, "\\fB\\-\\-", Roff(name), "\\fR, ");
    }
    if (option->get_positional()) names = absl::StrCat("\\fI", Roff(option->get_name()), "\\fR, ");
    if (names.size() >= 2) names.resize(names.size() - 2);
    if (!option->get_positional() && option->get_items_expected_max() > 0) {
      absl::StrAppend(&names, " \\fI", ValueName(*option), "\\fR");
      if (option->get_items_expected_max() > 1) absl::StrAppend(&names, " ...");
    }
    std::string help = option->get_description();
    std::string default_value = option->get_default_str();
    if (auto it = general.find(option->get_single_name()); it != general.end()) {
      default_value = it->second;
    }
    if (!default_value.empty()) absl::StrAppend(&help, " (default: ", default_value, ")");
    if (!option->get_envname().empty()) {
      absl::StrAppend(&help, " (environment: ", option->get_envname(), ")");
    }
    absl::StrAppend(&out, ".TP\n", names, "\n", Roff(help), "\n");
  }
  return out;
}

void Commands(const CLI::App& app, const std::string& path, std::string* out) {
  static const std::map<std::string, std::string> kNone;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_group().empty() || sub->get_name().empty()) continue;
    const std::string full = absl::StrCat(path, " ", sub->get_name());
    absl::StrAppend(out, ".SS \"", Roff(full), "\"\n", Roff(sub->get_description()), "\n");
    if (!sub->get_footer().empty()) {
      absl::StrAppend(out, ".PP\n.nf\n", Roff(sub->get_footer()), "\n.fi\n");
    }
    absl::StrAppend(out, Options(*sub, kNone));
    Commands(*sub, full, out);
  }
}

}  // namespace

std::string ManPage(const CLI::App& app, const ManPageText& text) {
  std::string upper = absl::AsciiStrToUpper(text.name);
  std::string out = absl::StrCat(".\\\" Written by ", text.name,
                                 " itself from its flag table; do not edit.\n.TH ", upper, " ",
                                 text.section, " \"\" \"", Roff(text.version), "\"\n");
  absl::StrAppend(&out, ".SH NAME\n", text.name, " \\- ", Roff(text.summary), "\n");
  absl::StrAppend(&out, ".SH SYNOPSIS\n.B ", text.name, "\n[\\fIOPTIONS\\fR]");
  const bool has_commands = !app.get_subcommands([](const CLI::App*) { return true; }).empty();
  absl::StrAppend(&out, has_commands ? " \\fICOMMAND\\fR [\\fIARGS\\fR]\n" : "\n");
  absl::StrAppend(&out, ".SH DESCRIPTION\n", Paragraphs(text.description));
  absl::StrAppend(&out, ".SH OPTIONS\n", Options(app, text.general_defaults));
  if (has_commands) {
    absl::StrAppend(&out, ".SH COMMANDS\n");
    Commands(app, text.name, &out);
  }
  if (!text.files.empty()) {
    absl::StrAppend(&out, ".SH FILES\n");
    for (absl::string_view line : absl::StrSplit(text.files, '\n', absl::SkipEmpty())) {
      const std::vector<std::string> parts = absl::StrSplit(line, absl::MaxSplits('\t', 1));
      absl::StrAppend(&out, ".TP\n.I ", Roff(parts[0]), "\n",
                      Roff(parts.size() > 1 ? parts[1] : ""), "\n");
    }
  }
  if (!text.see_also.empty()) absl::StrAppend(&out, ".SH SEE ALSO\n", Roff(text.see_also), "\n");
  return out;
}

}  // namespace traind
