#include "server/daemon_flags.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/build_version.h"
#include "common/byte_size.h"
#include "common/cli_checks.h"
#include "common/job_spec.h"
#include "common/log_priority.h"
#include "common/paths.h"
#include "common/script_spec.h"
#include "connect/config_file.h"

namespace traind {

namespace {

CLI::Validator AboveZero() { return NumberAtLeast(0, /*strictly=*/true); }
CLI::Validator ZeroOrMore() { return NumberAtLeast(0, /*strictly=*/false); }

// A file the flag names, which must exist (a certificate, a key, a token file).
void AddExistingFile(CLI::App& app, const std::string& name, std::string& target,
                     const std::string& help) {
  app.add_option(name, target, help)->check(CLI::ExistingFile);
}

// A size flag ("16GiB", "512MiB", bytes; common/byte_size.h): the value becomes the number of
// bytes, or the flag is refused with what is accepted.
CLI::Validator ByteSize() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const absl::StatusOr<int64_t> bytes = ParseByteSize(value);
        if (!bytes.ok()) return std::string(bytes.status().message());
        value = std::to_string(*bytes);
        return "";
      },
      "SIZE");
}

// --python NAME=PATH, checked as CLI11 reads it, so a bad one in the config file is named with its
// line like any other value.
CLI::Validator InterpreterFlag() {
  return CLI::Validator(
      [](std::string& flag) -> std::string {
        const size_t eq = flag.find('=');
        const std::string name = flag.substr(0, eq);
        const std::string path = eq == std::string::npos ? "" : flag.substr(eq + 1);
        if (ValidateInterpreterName("--python", name).ok() && !path.empty() && path[0] == '/' &&
            access(path.c_str(), X_OK) == 0) {
          return "";
        }
        return "expected NAME=PATH, NAME of letters, digits, '.', '_', '-' and PATH an absolute "
               "path to an executable, got '" +
               flag + "'";
      },
      "NAME=PATH");
}

void ApplyPythonFlags(const std::vector<std::string>& flags, DaemonOptions* options) {
  for (const std::string& flag : flags) {
    const size_t eq = flag.find('=');  // checked: InterpreterFlag
    options->interpreters[flag.substr(0, eq)] = flag.substr(eq + 1);
  }
}

// --name, --peer and --host-wait: false (and why on stderr) for a bad one.
bool ApplyPeerFlags(const RawFlags& raw, DaemonOptions* options) {
  PeersConfig peers;
  peers.self = raw.host_name.empty() ? ThisHostName() : raw.host_name;
  peers.config_path = DefaultConfigPath();
  for (const std::string& flag : raw.peer_flags) {
    absl::StatusOr<PeerConfig> peer = ParsePeerFlag(flag, raw.peer_connection);
    if (!peer.ok()) {
      LogAt(LogPriority::kError) << "traind: " << peer.status().message() << "\n";
      return false;
    }
    peers.peers.push_back(*std::move(peer));
  }
  if (absl::Status name = ValidateHostName("name", peers.self); !name.ok()) {
    LogAt(LogPriority::kError) << "traind: " << name.message() << " (--name NAME)\n";
    return false;
  }
  if (absl::Status checked = CheckPeers(peers); !checked.ok()) {
    LogAt(LogPriority::kError) << "traind: " << checked.message() << "\n";
    return false;
  }
  options->host_name = peers.self;
  for (const PeerConfig& peer : peers.peers) options->peer_names.push_back(peer.name);
  options->hosts_environment = PeersEnvironment(peers);
  options->host_wait = absl::Seconds(raw.host_wait_minutes * 60);
  // Secrets a program must not see (server/program_sandbox.h).
  for (const std::string& file :
       {raw.peer_connection.token_file, raw.peer_connection.tls_key,
        std::filesystem::path(peers.config_path).parent_path().string()}) {
    if (!file.empty()) options->private_files.push_back(file);
  }
  return true;
}

// --slots DEVICE=N with N >= 1.
CLI::Validator SlotFlag() {
  return CLI::Validator(
      [](std::string& slot) -> std::string {
        const auto eq = slot.find('=');
        int n = 0;
        if (eq != std::string::npos && eq > 0 && absl::SimpleAtoi(slot.substr(eq + 1), &n) &&
            n >= 1) {
          return "";
        }
        return "expected DEVICE=N with N >= 1, got '" + slot + "'";
      },
      "DEVICE=N");
}

void ApplySlotFlags(const std::vector<std::string>& slots, DaemonOptions* options) {
  for (const std::string& slot : slots) {
    const auto eq = slot.find('=');  // checked: SlotFlag
    int n = 1;
    (void)absl::SimpleAtoi(slot.substr(eq + 1), &n);
    options->slots[slot.substr(0, eq)] = n;
  }
}

}  // namespace

namespace {

// How to read the configuration, or what to print instead of starting.
void DeclareStartFlags(CLI::App& app, RawFlags& raw) {
  app.set_version_flag("--version", std::string("traind, ") + BuildVersion());
  app.add_option("--config", raw.config_path,
                 "Read flags from this TOML file (KEY = VALUE, each key a flag without its dashes; "
                 "the command line overrides it). Default: $TRAIND_CONFIG, else "
                 "~/.config/traind/traind.toml where it exists; the system service reads "
                 "/etc/traind/traind.toml. docs/install.md");
  app.add_flag("--print-config", raw.print_config,
               "Print the settings traind would start with, each with where it came from (the "
               "command line, the config file and its line, or the default), and exit");
  app.add_flag("--man-page", raw.man_page, "Print traind's man page (roff) and exit")->group("");
}

// Where traind keeps its state and whom it serves, how.
void DeclareServingFlags(CLI::App& app, DaemonOptions& options) {
  app.add_option("--state-dir", options.state_dir, "Jobs, events and the socket live here")
      ->capture_default_str();
  app.add_option("--listen", options.listen,
                 "unix:PATH or HOST:PORT (repeatable; TCP needs TLS and tokens except "
                 "loopback with --insecure-loopback); default unix:<state-dir>/traind.sock");
  app.add_option("--data-root", options.data_roots,
                 "Jobs may read datasets only under these directories (repeatable); the "
                 "Fashion-MNIST directory is always one");
  app.add_flag("--enable-fault-injection", options.enable_fault_injection,
               "Accept JobSpec.debug (crash a worker on purpose): for tests only");
  app.add_flag("--insecure-loopback", options.allow_insecure_tcp,
               "Allow plaintext TCP listeners on loopback addresses (tests, local tools)");
  AddExistingFile(app, "--tls-cert", options.tls_cert,
                  "Server certificate (PEM) for TCP listeners; deploy/make-certs.sh makes one");
  AddExistingFile(app, "--tls-key", options.tls_key, "Private key (PEM) of --tls-cert");
  AddExistingFile(app, "--tls-client-ca", options.tls_client_ca,
                  "Require client certificates signed by this CA (PEM)");
  AddExistingFile(app, "--token-file", options.token_file,
                  "Bearer tokens for TCP callers, one per line (TOKEN [NAME]); the Unix socket "
                  "needs none");
}

// What one token may hold and ask.
void DeclareLimitFlags(CLI::App& app, DaemonOptions& options) {
  app.add_option("--max-queued-per-token", options.limits.max_queued_jobs,
                 "Queued jobs one token may have at once")
      ->capture_default_str()
      ->check(AboveZero());
  app.add_option("--max-watchers-per-token", options.limits.max_watchers,
                 "Open watch streams one token may have at once")
      ->capture_default_str()
      ->check(AboveZero());
  app.add_option("--max-uploads-per-token", options.limits.max_uploads,
                 "Uploads one token may have in flight at once (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--max-upload-bytes", options.max_upload_bytes,
                 "Largest file a client may upload (a model or a dataset), e.g. 8GiB")
      ->transform(ByteSize())
      ->capture_default_str();
  app.add_option("--max-storage-per-token", options.max_storage_per_token,
                 "Bytes one token may hold: its uploads and its jobs' files, e.g. 50GiB (0: no "
                 "limit)")
      ->transform(ByteSize())
      ->capture_default_str();
  app.add_option("--max-request-bytes", options.max_request_bytes, "Largest request accepted")
      ->capture_default_str()
      ->check(CLI::Range(1024, 1 << 30));
}

// Script jobs' interpreters and bounds.
void DeclareScriptFlags(CLI::App& app, DaemonOptions& options, RawFlags& raw) {
  app.add_option("--python", raw.python_flags,
                 "An interpreter script jobs may run (trainctl run -- NAME train.py): NAME=PATH, "
                 "e.g. --python python3=/usr/bin/python3 --python venv=/opt/venv/bin/python. "
                 "Repeatable; default: python3=/usr/bin/python3 where it exists")
      ->check(InterpreterFlag());
  app.add_option("--script-memory-limit", options.script_memory_bytes,
                 "Memory each process of a script job may allocate (RLIMIT_DATA: its heap and "
                 "private mappings, e.g. 16GiB); over it the program gets MemoryError. Per "
                 "process, not per job: a program's children each get as much. 0: no limit")
      ->transform(ByteSize())
      ->capture_default_str();
  app.add_option("--script-file-size-limit", options.script_file_size_bytes,
                 "Largest file a script job's process may write (RLIMIT_FSIZE, e.g. 50GiB); a "
                 "write past it fails with 'File too large' in Python (other programs get "
                 "SIGXFSZ). 0: no limit")
      ->transform(ByteSize())
      ->capture_default_str();
  app.add_option("--script-sandbox", raw.script_sandbox,
                 "Where script jobs' programs run: auto (in a bubblewrap sandbox that shows "
                 "them their job's folders, the data roots and the system but none of traind's "
                 "state, tokens or keys, where bubblewrap works; unconfined with a warning where "
                 "it does not), bubblewrap (that sandbox or traind does not start), none "
                 "(unconfined). docs/security.md")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "bubblewrap", "none"}));
}

// This traind among others: its name, Slurm's address for it, its peers (--hosts).
void DeclareHostFlags(CLI::App& app, DaemonOptions& options, RawFlags& raw) {
  app.add_option("--slurm-address", options.slurm_address,
                 "Host name Slurm's nodes reach this machine at, for jobs submitted with "
                 "--backend slurm (default: this machine's name)");
  app.add_option("--name", raw.host_name,
                 "This traind's name in a job's --hosts (default: this machine's host name)");
  app.add_option("--peer", raw.peer_flags,
                 "Another traind this one may run jobs with (--hosts): NAME=HOST:PORT, reached "
                 "with TLS and a token (--peer-tls-ca, --peer-tls-cert, --peer-tls-key, "
                 "--peer-token-file; an admin token there), or NAME=context:CONTEXT, a trainctl "
                 "context that names all of those. Repeatable");
  AddExistingFile(app, "--peer-tls-ca", raw.peer_connection.tls_ca,
                  "CA (PEM) that signed the peers' certificates");
  AddExistingFile(app, "--peer-tls-cert", raw.peer_connection.tls_cert,
                  "Client certificate (PEM) for peers that ask for one");
  AddExistingFile(app, "--peer-tls-key", raw.peer_connection.tls_key,
                  "Private key (PEM) of --peer-tls-cert");
  AddExistingFile(app, "--peer-token-file", raw.peer_connection.token_file,
                  "Bearer token (one line) the peers accept, with the admin role there");
  app.add_option("--host-wait", raw.host_wait_minutes,
                 "Minutes a job on several hosts waits for a host that is busy, unreachable or "
                 "gone before it fails (it retries meanwhile, resuming from its checkpoint)")
      ->capture_default_str()
      ->check(ZeroOrMore());
}

// Its workers and jobs: the worker's path, cancelling, checkpoints, retention, the dashboard,
// slots.
void DeclareWorkerFlags(CLI::App& app, DaemonOptions& options, RawFlags& raw) {
  app.add_option("--worker", options.worker_path, "Path of traind-worker")
      ->default_str(DefaultWorkerPath());
  app.add_option("--cancel-grace", raw.cancel_grace_seconds,
                 "Seconds between SIGTERM and SIGKILL when a running job is cancelled")
      ->capture_default_str()
      ->check(AboveZero());
  app.add_option("--checkpoint-minutes", options.checkpoint_minutes,
                 "Running training jobs checkpoint at least this often (model, optimizer, RNG, "
                 "epoch and batch), so a crash costs at most this much work; 0: only where the "
                 "job asks (--checkpoint-every)")
      ->capture_default_str()
      ->check(ZeroOrMore());
  app.add_option("--retain-finished", options.retain_finished_days,
                 "Delete jobs (and whole sweeps) that ended more than DAYS ago: their events, "
                 "files and the uploads nothing else uses; checked hourly. 0: keep everything")
      ->capture_default_str()
      ->check(ZeroOrMore());
  app.add_option("--warm-workers", options.warm_workers,
                 "Worker processes kept started and waiting, so a job does not wait for "
                 "LibTorch to load (about a second of CPU each, ~100 MiB resident); 0: none")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  app.add_option("--mps", raw.mps,
                 "auto: a search's trials packed on a GPU run their kernels side by side through "
                 "an NVIDIA MPS daemon of traind's own (pipes in <state-dir>/mps), where "
                 "nvidia-cuda-mps-control is on PATH; only those trials connect to it. off: they "
                 "take turns on the GPU")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "off"}));
  app.add_option("--worker-nice", options.worker_nice,
                 "How far below traind's own CPU priority the workers run (a nice increment). "
                 "On busy cores traind's threads, which carry every job's events to its "
                 "watchers, and your trainctl then go before training; 0: the same priority")
      ->capture_default_str()
      ->check(CLI::Range(0, 19));
  app.add_option("--http", options.http,
                 "Serve the dashboard, JSON API and /metrics on HOST:PORT (e.g. 127.0.0.1:8080; "
                 "plain HTTP on loopback only, HTTPS with --tls-cert/--tls-key). traind prints "
                 "a one-time login link; scripts send `Authorization: Bearer` with a "
                 "--token-file token or <state-dir>/http.token");
  app.add_option("--slots", raw.slots,
                 "Jobs at once on a device, e.g. --slots cpu=2 (repeatable; default 1 per device)")
      ->check(SlotFlag());
}

}  // namespace

void DeclareFlags(CLI::App& app, DaemonOptions& options, RawFlags& raw) {
  DeclareStartFlags(app, raw);
  DeclareServingFlags(app, options);
  DeclareLimitFlags(app, options);
  DeclareScriptFlags(app, options, raw);
  DeclareHostFlags(app, options, raw);
  DeclareWorkerFlags(app, options, raw);
}

const std::map<std::string, std::string>& UnsetFlagMeanings() {
  static const auto* meanings = new std::map<std::string, std::string>{
      {"listen", "unix:<state-dir>/traind.sock"},
      {"data-root", "the Fashion-MNIST directory only"},
      {"python", "python3=/usr/bin/python3 where it exists"},
      {"slurm-address", "this machine's name"},
      {"name", "this machine's host name"},
      {"http", "no dashboard"},
      {"slots", "1 job at a time per device"},
      {"token-file", "no TCP callers (the Unix socket needs no token)"},
  };
  return *meanings;
}

bool ApplyRawFlags(const RawFlags& raw, DaemonOptions* options) {
  options->cancel_grace = absl::Seconds(raw.cancel_grace_seconds);
  options->script_sandbox = *ParseSandboxMode(raw.script_sandbox);  // checked: IsMember
  options->mps = raw.mps == "auto";                                 // checked: IsMember
  ApplyPythonFlags(raw.python_flags, options);
  ApplySlotFlags(raw.slots, options);
  return ApplyPeerFlags(raw, options);
}

}  // namespace traind
