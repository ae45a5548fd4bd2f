#include "client/render/search_text.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log_format.h"

namespace traind {

namespace {

std::string Params(const trainer::v1::SearchTrial& trial) {
  std::vector<std::string> parts;
  for (const auto& [field, value] : trial.params())
    parts.push_back(absl::StrCat(field, "=", value));
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, " ");
}

std::string Metric(const trainer::v1::SearchReport& search, double value) {
  if (!std::isfinite(value)) return "-";
  if (search.metric() == "validation_accuracy") return absl::StrFormat("%.2f%%", 100 * value);
  return absl::StrFormat("%.4g", value);
}

}  // namespace

std::string SearchText(const trainer::v1::SearchReport& search) {
  if (search.method().empty()) return "";
  std::string text = absl::StrCat(
      "Search (", search.method(), ", by ", search.metric(), "): ", search.trials_size(), " of ",
      search.trials_planned(), " trials", search.done() ? ", done" : ", going on",
      search.rungs_size() == 1 ? "; one rung, at " : "; rungs at ",
      absl::StrJoin(search.rungs(), ", "),
      search.rungs_size() == 1 && search.rungs(0) == 1 ? " epoch\n" : " epochs\n");
  const auto best_row = std::find_if(
      search.trials().begin(), search.trials().end(),
      [&](const trainer::v1::SearchTrial& t) { return t.trial() == search.best_trial(); });
  if (search.best_trial() >= 0 && best_row != search.trials().end()) {
    const trainer::v1::SearchTrial& best = *best_row;
    absl::StrAppend(&text, "Best: trial ", best.trial(), " (job ", best.job_id(), "), ",
                    Metric(search, best.metric()), " after ", best.epochs(),
                    best.epochs() == 1 ? " epoch: " : " epochs: ", Params(best), "\n");
  }
  if (search.epochs_full() > 0) {
    absl::StrAppend(
        &text,
        absl::StrFormat("Compute: %d epochs trained, %.0f%% of the %d that training every trial "
                        "started to the end takes\n",
                        search.epochs_spent(), 100.0 * search.epochs_spent() / search.epochs_full(),
                        search.epochs_full()));
  }
  if (search.device_seconds_budget() > 0) {
    absl::StrAppend(
        &text, "Budget: ", FormatDuration(search.device_seconds()), " of ",
        FormatDuration(search.device_seconds_budget()),
        absl::StrFormat(" of device-time spent (%.0f%%)\n",
                        100 * search.device_seconds() / search.device_seconds_budget()));
  }
  if (!search.packing().empty()) absl::StrAppend(&text, "Packing: ", search.packing(), "\n");
  absl::StrAppend(&text, absl::StrFormat("%-6s %-6s %-8s %-7s %-10s %s\n", "TRIAL", "JOB", "STATUS",
                                         "EPOCHS", "METRIC", "PARAMS"));
  for (const trainer::v1::SearchTrial& trial : search.trials()) {
    absl::StrAppend(
        &text, absl::StrFormat(
                   "%-6s %-6d %-8s %-7d %-10s %s\n",
                   absl::StrCat(trial.trial() == search.best_trial() ? "*" : "", trial.trial()),
                   trial.job_id(), trial.status(), trial.epochs(), Metric(search, trial.metric()),
                   Params(trial)));
  }
  if (search.trials_not_shown() > 0) {
    absl::StrAppend(&text, search.trials_not_shown(),
                    " more trials not shown (the furthest and best are listed)\n");
  }
  return text;
}

}  // namespace traind
