// One function per verb; each adds its subcommand to the app. When the subcommand runs, its
// callback stores the verb's exit code in `*exit_code`.
#ifndef TRAIND_CLIENT_COMMANDS_COMMANDS_H_
#define TRAIND_CLIENT_COMMANDS_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "client/context.h"
#include "client/render/event_renderer.h"

namespace traind {

void AddDevicesCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddSubmitCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddRunCommand(CLI::App& app, Context& ctx, int* exit_code);  // a user's program
void AddListCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddShowCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddWatchCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddLogsCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddCancelCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddBenchCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddSweepCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddSweepsCommand(CLI::App& app, Context& ctx, int* exit_code);  // the list of sweeps
void AddReportCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddQueueCommands(CLI::App& app, Context& ctx, int* exit_code);   // pause resume drain retry
void AddContextCommand(CLI::App& app, Context& ctx, int* exit_code);  // add use list remove
void AddArtifactsCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddDownloadCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddUploadCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddEvaluateCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddDeleteCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddShutdownCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddPriorityCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddExportCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddWaitCommand(CLI::App& app, Context& ctx, int* exit_code);
void AddExtendCommand(CLI::App& app, Context& ctx, int* exit_code);  // a search goes on

// Submits `request`, follows the job to its end (its events on ctx.out() when `show_events`) and
// fetches it into `*job`. kExitOk when it SUCCEEDED; otherwise the exit code, with a line on
// stderr naming `what` ("bench", "evaluation") and the job's error.
int RunJobToEnd(Context& ctx, const trainer::v1::SubmitJobRequest& request, const char* what,
                bool show_events, trainer::v1::Job* job);

// The sweep a --sweep or SWEEP argument names, by its id or its name, into `*id`: kExitOk, or the
// exit code after printing why (no such sweep, several of that name).
int SweepId(Context& ctx, const std::string& id_or_name, int64_t* id);
// --device-hours' check (sweep, extend): a number of hours up to 100000, more than 0 unless
// `zero_is_none` (extend's 0 takes a budget away; a new search without one leaves the flag out).
CLI::Validator DeviceHoursCheck(bool zero_is_none);
// ExtendSearch: `trials` 0 and no `device_hours` resume the search as it was planned.
int ExtendSearch(Context& ctx, const std::string& sweep, int trials,
                 std::optional<double> device_hours);

// Follows every member of a sweep until all have finished (`watch --sweep`, `sweep --watch`).
int WatchSweep(Context& ctx, int64_t sweep_id);

// Submits `request` and prints the job's id (the Job as JSON with --output json), then follows it
// to its end with `watch`: the exit code (`submit` and `run`).
int SubmitAndFollow(Context& ctx, const trainer::v1::SubmitJobRequest& request, bool watch);

// Whether job `job_id` runs a user's program (JobSpec.script): its own lines are its log, so
// `watch` and `logs` do not print the events read from them again. False when it cannot be read.
bool IsProgramJob(Context& ctx, int64_t job_id);

// Follows a job to its end (shared by `watch` and `submit --watch`). Returns the exit code.
// `mode` defaults to a progress bar on a terminal, plain lines otherwise, JSON with --output json.
int WatchJob(Context& ctx, int64_t job_id, int64_t from_seq,
             std::optional<RenderMode> mode = std::nullopt);

}  // namespace traind

#endif  // TRAIND_CLIENT_COMMANDS_COMMANDS_H_
