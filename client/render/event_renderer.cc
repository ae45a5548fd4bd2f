#include "client/render/event_renderer.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <set>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/log_format.h"
#include "common/terminal_text.h"
#include "google/protobuf/util/json_util.h"

namespace traind {

using trainer::v1::JobEvent;

namespace {

int TerminalWidth() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
  return 100;
}

std::string StateLine(int64_t job_id, const trainer::v1::StateChange& change) {
  std::string line = absl::StrFormat("Job %d %s", job_id, StateName(change.state()));
  if (!change.reason().empty())
    line += ": " + TerminalSafe(change.reason(), /*keep_newlines=*/true);
  return line;
}

class PlainRenderer : public EventRenderer {
 public:
  PlainRenderer(int64_t job_id, std::ostream& out, bool program_output)
      : job_id_(job_id), out_(out), program_output_(program_output) {}
  void OnEvent(const JobEvent& event) override {
    if (event.has_state_change()) out_ << StateLine(job_id_, event.state_change()) << "\n";
    if (program_output_ && EchoesProgramOutput(event)) return;
    for (const std::string& line : FormatEventLines(event)) out_ << line << "\n";
    out_.flush();
  }
  void OnNote(const std::string& note) override {
    out_ << TerminalSafe(note, /*keep_newlines=*/true) << "\n" << std::flush;
  }

 private:
  const int64_t job_id_;
  std::ostream& out_;
  const bool program_output_;
};

class JsonRenderer : public EventRenderer {
 public:
  JsonRenderer(std::ostream& out, std::ostream& err) : out_(out), err_(err) {}
  void OnEvent(const JobEvent& event) override {
    google::protobuf::util::JsonPrintOptions options;
    options.always_print_primitive_fields = true;
    std::string json;
    google::protobuf::util::MessageToJsonString(event, &json, options);
    out_ << json << "\n" << std::flush;
  }
  // Notes go to stderr: stdout stays a clean stream of events.
  void OnNote(const std::string& note) override {
    err_ << TerminalSafe(note, /*keep_newlines=*/true) << "\n";
  }

 private:
  std::ostream& out_;
  std::ostream& err_;
};

// Redraws one status line in place; permanent lines (epoch summaries, state changes) are printed
// above it.
class ProgressBarRenderer : public EventRenderer {
 public:
  ProgressBarRenderer(int64_t job_id, std::ostream& out, bool program_output)
      : job_id_(job_id), out_(out), program_output_(program_output) {}
  void OnEvent(const JobEvent& event) override {
    if (event.has_step()) {
      last_step_ = event.step();
      have_step_ = true;
      Redraw();
      return;
    }
    std::vector<std::string> lines;
    if (event.has_state_change()) lines.push_back(StateLine(job_id_, event.state_change()));
    if (!(program_output_ && EchoesProgramOutput(event))) {
      for (std::string& line : FormatEventLines(event)) lines.push_back(std::move(line));
    }
    if (event.has_epoch_summary() && have_step_) {
      // The epoch is done: show the bar full until the next epoch reports.
      last_step_.set_batch(last_step_.batches_per_epoch());
    }
    if (lines.empty()) return;
    ClearLine();
    for (const std::string& line : lines) out_ << line << "\n";
    Redraw();
  }
  void OnNote(const std::string& note) override {
    ClearLine();
    out_ << TerminalSafe(note, /*keep_newlines=*/true) << "\n";
    Redraw();
  }
  void Close() override {
    ClearLine();
    out_.flush();
  }

 private:
  void ClearLine() {
    if (drawn_) out_ << "\r\033[2K";
    drawn_ = false;
  }
  void Redraw() {
    if (!have_step_) return;
    ClearLine();
    out_ << ProgressLine(last_step_, TerminalWidth() - 1) << std::flush;
    drawn_ = true;
  }

  const int64_t job_id_;
  std::ostream& out_;
  const bool program_output_;
  trainer::v1::StepMetrics last_step_;
  bool have_step_ = false;
  bool drawn_ = false;
};

}  // namespace

namespace {

// Data parallel: one memory figure per device ("cuda:0 1.2 GiB, cuda:1 1.2 GiB"); "" when the
// job reports none (a program on the CPU before its first reading).
std::string MemoryText(const trainer::v1::StepMetrics& step) {
  if (step.ranks_size() > 0) {
    // CPU ranks share one device name: name them by rank instead.
    std::set<std::string> names;
    for (const trainer::v1::RankMemory& rank : step.ranks()) names.insert(rank.device());
    const bool by_device = names.size() == static_cast<size_t>(step.ranks_size());
    std::vector<std::string> parts;
    for (const trainer::v1::RankMemory& rank : step.ranks()) {
      parts.push_back(absl::StrCat(by_device ? rank.device() : absl::StrCat("rank ", rank.rank()),
                                   " ", FormatBytes(rank.current_allocated_bytes())));
    }
    return absl::StrJoin(parts, ", ");
  }
  if (step.current_allocated_bytes() == 0 && step.driver_allocated_bytes() == 0) return "";
  return absl::StrCat(FormatBytes(step.current_allocated_bytes()), " / ",
                      FormatBytes(step.driver_allocated_bytes()));
}

}  // namespace

// A program may not say how many epochs or batches it runs, nor its speed or memory: what it did
// not say is left out ("epoch 2 | batch 300 | loss 0.4410"), never shown as 0 ("epoch 2/0").
std::string ProgressLine(const trainer::v1::StepMetrics& step, int width) {
  const bool batches_known = step.batches_per_epoch() > 0;
  const int64_t batches = std::max(1, step.batches_per_epoch());
  const int64_t done_in_epoch = std::min<int64_t>(step.batch(), batches);
  const double fraction = static_cast<double>(done_in_epoch) / batches;
  std::string tail;
  if (batches_known) {
    absl::StrAppendFormat(&tail, " %3.0f%% %d/%d", fraction * 100, done_in_epoch, batches);
    if (step.epochs() > 0 && step.step_seconds() > 0) {  // over all remaining epochs
      const int64_t remaining =
          (batches - done_in_epoch) + static_cast<int64_t>(step.epochs() - step.epoch()) * batches;
      absl::StrAppend(&tail, " | ETA ", FormatDuration(remaining * step.step_seconds()));
    }
  } else {
    absl::StrAppendFormat(&tail, "| batch %d", step.batch());
  }
  absl::StrAppendFormat(&tail, " | loss %.4f", step.loss());
  if (step.samples_per_second() > 0) {
    absl::StrAppendFormat(&tail, " | %.0f samples/s", step.samples_per_second());
  }
  if (const std::string memory = MemoryText(step); !memory.empty()) {
    absl::StrAppend(&tail, " | mem ", memory);
  }
  const std::string head = step.epochs() > 0
                               ? absl::StrFormat("epoch %d/%d ", step.epoch(), step.epochs())
                               : absl::StrFormat("epoch %d ", step.epoch());
  const int bar_width = std::clamp(width - static_cast<int>(head.size() + tail.size()) - 2, 0, 40);
  std::string bar;
  if (batches_known && bar_width >= 5) {
    const int filled = static_cast<int>(fraction * bar_width);
    bar = "[" + std::string(filled, '#') + std::string(bar_width - filled, '-') + "]";
  }
  std::string line = head + bar + tail;
  if (static_cast<int>(line.size()) > width && width > 0) line.resize(width);
  return line;
}

bool EchoesProgramOutput(const JobEvent& event) {
  return event.has_step() || event.has_epoch_summary() || event.has_final_result();
}

std::unique_ptr<EventRenderer> MakeEventRenderer(RenderMode mode, int64_t job_id, std::ostream& out,
                                                 std::ostream& err, bool program_output) {
  switch (mode) {
    case RenderMode::kProgressBar:
      return std::make_unique<ProgressBarRenderer>(job_id, out, program_output);
    case RenderMode::kJson:
      return std::make_unique<JsonRenderer>(out, err);
    case RenderMode::kPlain:
    default:
      return std::make_unique<PlainRenderer>(job_id, out, program_output);
  }
}

}  // namespace traind
