// A man page (roff, man(7) macros) written from a CLI11 app: the same flag table --help prints, so
// the two never disagree. traind --man-page and trainctl __man-page print theirs; the package's
// build step (deploy/package.sh) installs them as traind(8) and trainctl(1).
#ifndef TRAIND_COMMON_MAN_PAGE_H_
#define TRAIND_COMMON_MAN_PAGE_H_

#include <map>
#include <string>

#include "CLI/CLI.hpp"

namespace traind {

struct ManPageText {
  std::string name;         // "traind"
  int section = 1;          // 1: user commands, 8: daemons
  std::string version;      // "traind 0.9.0 (abc1234)"
  std::string summary;      // the NAME line's: "a training daemon"
  std::string description;  // paragraphs, separated by blank lines
  std::string files;        // the FILES section: "PATH\tWHAT" lines
  std::string see_also;     // "trainctl(1), systemd.service(5)"
  // Defaults said in general terms where the flag table holds this machine's: {"state-dir",
  // "~/.local/state/traind"} rather than the build user's home.
  std::map<std::string, std::string> general_defaults;
};

// NAME, SYNOPSIS, DESCRIPTION, OPTIONS (each option with its value's kind, help and default),
// COMMANDS (every visible subcommand, nested, with its own options), FILES, SEE ALSO.
std::string ManPage(const CLI::App& app, const ManPageText& text);

}  // namespace traind

#endif  // TRAIND_COMMON_MAN_PAGE_H_
