// Shell completion for trainctl: `trainctl completion bash|zsh|fish` prints a script that asks
// trainctl itself for the candidates (`trainctl __complete -- WORDS...`), so what completes is what
// the app defines: verbs, each verb's flags, model and dataset names after --model/--dataset,
// devices, and job ids (the daemon's newest) where a verb takes one. No LibTorch.
#ifndef TRAIND_CLIENT_COMPLETION_H_
#define TRAIND_CLIENT_COMPLETION_H_

#include <functional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"

namespace traind {

// The script for `shell` (bash, zsh or fish).
std::string CompletionScript(const std::string& shell);

// What may follow `words` (the words after "trainctl", the last one the word being completed,
// "" for a new one), sorted. `job_ids` is asked only where a verb takes a job id.
std::vector<std::string> CompletionCandidates(
    const CLI::App& app, const std::vector<std::string>& words,
    const std::function<std::vector<std::string>()>& job_ids);

// Adds `completion SHELL` and the hidden `__complete -- WORDS...` its scripts call.
class Context;
void AddCompletionCommands(CLI::App& app, Context& ctx, int* exit_code);

}  // namespace traind

#endif  // TRAIND_CLIENT_COMPLETION_H_
