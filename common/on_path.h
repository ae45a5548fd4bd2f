// Whether a program can be found the way execvp would find it: an executable file in a directory
// of PATH. traind asks it of Slurm's commands (jobs with backend slurm need them); the Slurm
// launcher of sacct (accounting is optional on a cluster); traind finds bubblewrap with it.
#ifndef TRAIND_COMMON_ON_PATH_H_
#define TRAIND_COMMON_ON_PATH_H_

#include <string>

namespace traind {

bool OnPath(const std::string& program);
// Where: the first such file's path, or "" when there is none.
std::string FindOnPath(const std::string& program);

}  // namespace traind

#endif  // TRAIND_COMMON_ON_PATH_H_
