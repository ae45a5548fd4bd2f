// traind: parses flags and runs the Daemon in the foreground until SIGTERM or SIGINT.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/build_version.h"
#include "common/log_priority.h"
#include "common/man_page.h"
#include "common/paths.h"
#include "server/daemon.h"
#include "server/daemon_config.h"
#include "server/daemon_flags.h"

namespace {

// <state-dir>/traind.pid, so a user stops *this* traind (`kill $(cat ...)`, or `trainctl
// shutdown`), not every traind on the machine. Written in traind's own 0700 directory, never
// through a link; removed at exit only if it still names this process.
std::string WritePidFile(const std::string& state_dir) {
  const std::string path = state_dir + "/traind.pid";
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return "";
  const std::string pid = std::to_string(getpid()) + "\n";
  const bool written = write(fd, pid.data(), pid.size()) == static_cast<ssize_t>(pid.size());
  close(fd);
  return written ? path : "";
}

void RemovePidFile(const std::string& path) {
  if (path.empty()) return;
  auto text = traind::ReadTextFile(path);
  if (text.ok() && *text == std::to_string(getpid()) + "\n") unlink(path.c_str());
}

// Starts the daemon and serves until SIGTERM or SIGINT (or `trainctl shutdown`). The exit code.
int RunUntilStopped(traind::DaemonOptions options) {
  // Block the stop signals before any thread starts, then wait for them here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // `trainctl shutdown`: the same path as SIGTERM, handled by the sigwait below.
  options.shutdown_hook = [] { kill(getpid(), SIGTERM); };
  auto daemon = traind::Daemon::Start(options);
  if (!daemon.ok()) {
    traind::LogAt(traind::LogPriority::kError) << "traind: " << daemon.status().message() << "\n";
    return 1;
  }
  const std::string pid_file = WritePidFile(options.state_dir);
  const traind::SandboxChoice& sandbox = (*daemon)->sandbox();
  traind::LogAt(sandbox.warn ? traind::LogPriority::kWarning : traind::LogPriority::kInfo)
      << "traind: " << (sandbox.warn ? "WARNING: " : "") << sandbox.description << "\n";
  if (geteuid() == 0) {
    traind::LogAt(traind::LogPriority::kWarning)
        << "traind: WARNING: traind runs as root, and so do the programs of callers with "
           "the run-code grant (without root's capabilities in the sandbox, but owning "
           "root's files): run it as an ordinary user (deploy/traind.service runs it as yours)\n";
  }
  traind::LogAt(traind::LogPriority::kNotice)
      << "traind: listening on " << absl::StrJoin((*daemon)->addresses(), ", ") << " (state in "
      << options.state_dir << ", pid " << getpid() << " in " << pid_file
      << "; stop it with `trainctl shutdown`; " << traind::BuildVersion() << ")\n";
  if (traind::DashboardServer* dashboard = (*daemon)->dashboard()) {
    // The link works once (it becomes a cookie); <state-dir>/http.token stays valid for scripts.
    traind::LogAt(traind::LogPriority::kNotice)
        << "traind: dashboard: " << dashboard->NewLoginUrl() << "\n";
    traind::LogAt(traind::LogPriority::kInfo)
        << "traind: dashboard API token (curl -H \"Authorization: Bearer $(cat "
        << options.state_dir << "/http.token)\" " << dashboard->url() << "/metrics)\n";
  }
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  traind::LogAt(traind::LogPriority::kNotice)
      << "traind: " << strsignal(signal_number) << ": shutting down\n";
  (*daemon)->Shutdown();
  RemovePidFile(pid_file);
  traind::LogAt(traind::LogPriority::kNotice) << "traind: stopped\n";
  return 0;
}

traind::ManPageText TraindManPageText() {
  traind::ManPageText text;
  text.name = "traind";
  text.section = 8;
  text.version = traind::BuildVersion();
  text.summary = "training daemon: owns the accelerator and a persistent job queue";
  text.description =
      "traind runs training and benchmark jobs that trainctl(1) and the Python client submit over "
      "gRPC: built-in networks, TorchScript models and unchanged Python training scripts, on "
      "CUDA, MPS or the CPU. Jobs wait in a queue kept in SQLite; running jobs checkpoint, so a "
      "restart resumes them. Any number of clients follow a job's loss, accuracy, device memory "
      "and timing live.\n\n"
      "Every option can also be set in a TOML config file as KEY = VALUE, the option's long name "
      "without its dashes (a list for an option given several times, true or false for a "
      "switch); the command line overrides the file. traind --print-config shows the result and "
      "where each value came from. A mistake in the file refuses the start, naming the file, "
      "line and key.\n\n"
      "SIGTERM (or trainctl shutdown) stops it: running jobs checkpoint and queued jobs stay "
      "queued for the next start.";
  text.files =
      "/etc/traind/traind.toml\tThe system service's config file (traind --config).\n"
      "~/.config/traind/traind.toml\tA user's traind reads this one where it exists.\n"
      "/var/lib/traind\tThe system service's state: jobs, events, uploads, weights, the socket.\n"
      "~/.local/state/traind\tA user's traind's state (--state-dir).\n";
  text.see_also = "trainctl(1), systemctl(1), journalctl(1)";
  text.general_defaults = {{"state-dir", "$XDG_STATE_HOME/traind, else ~/.local/state/traind"},
                           {"worker", "traind-worker beside traind"}};
  return text;
}

// The command line, then the config file (server/daemon_config.h), then the checks of
// daemon_flags.h: 0 to start, or the exit code (2 for a mistake, 0 after --help or
// --print-config).
int Configure(int argc, char** argv, traind::DaemonOptions& options, bool* start) {
  traind::RawFlags raw;
  CLI::App app{
      "traind: a training daemon. Owns the accelerator and a persistent job queue; "
      "trainctl talks to it over gRPC."};
  traind::DeclareFlags(app, options, raw);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (raw.man_page) {
    std::cout << traind::ManPage(app, TraindManPageText());
    return 0;
  }
  const bool explicit_config = !raw.config_path.empty();
  const std::string config_path =
      explicit_config ? raw.config_path : traind::DefaultDaemonConfigPath();
  absl::StatusOr<traind::DaemonConfig> config =
      traind::ReadDaemonConfig(config_path, explicit_config || std::getenv("TRAIND_CONFIG"));
  absl::StatusOr<std::vector<traind::SettingSource>> settings =
      config.ok() ? traind::ApplyDaemonConfig(app, *config) : config.status();
  if (!settings.ok()) {
    traind::LogAt(traind::LogPriority::kError) << "traind: " << settings.status().message() << "\n";
    return 2;
  }
  if (!traind::ApplyRawFlags(raw, &options)) return 2;
  if (raw.print_config) {
    std::cout << traind::RenderSettings(*settings, *config, traind::UnsetFlagMeanings());
    return 0;
  }
  *start = true;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  umask(077);  // everything traind creates (database, jobs, uploads, socket) is its user's alone
  // Debian's Abseil is built with mutex deadlock detection on, which records every lock
  // acquisition in a graph (it showed in profiles of the watch fan-out); the tests keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  traind::DaemonOptions options;
  options.state_dir = traind::DefaultStateDir();
  bool start = false;
  const int code = Configure(argc, argv, options, &start);
  if (!start) return code;
  return RunUntilStopped(std::move(options));
}
