// trainctl context add|use|list|remove: named connections (address, CA, client certificate,
// token file) in the config file, so `trainctl --context lab watch 42` reaches the lab's traind.
#include <filesystem>

#include "client/commands/commands.h"
#include "client/exit_codes.h"
#include "connect/config_file.h"

namespace traind {
namespace {

// Stored absolute, so the context works from any directory; must exist now.
bool Absolutize(Context& ctx, const char* option, std::string* path) {
  if (path->empty()) return true;
  std::error_code error;
  const auto absolute = std::filesystem::absolute(*path, error);
  if (error || !std::filesystem::is_regular_file(absolute, error)) {
    ctx.err() << "trainctl: " << option << ": no such file: " << *path << "\n";
    return false;
  }
  *path = absolute.lexically_normal().string();
  return true;
}

// Loads the config or reports why not (exit code 2).
bool Load(Context& ctx, ClientConfig* config, int* exit_code) {
  absl::StatusOr<ClientConfig> loaded = LoadClientConfig(ctx.options().config_path);
  if (!loaded.ok()) {
    *exit_code = ctx.UsageError(std::string(loaded.status().message()));
    return false;
  }
  *config = *std::move(loaded);
  return true;
}

bool Save(Context& ctx, const ClientConfig& config, int* exit_code) {
  absl::Status saved = SaveClientConfig(ctx.options().config_path, config);
  if (!saved.ok()) {
    ctx.err() << "trainctl: " << saved.message() << "\n";
    *exit_code = kExitJobFailed;
    return false;
  }
  return true;
}

void AddAdd(CLI::App& parent, Context& ctx, int* exit_code) {
  auto entry = std::make_shared<ContextEntry>();
  auto use = std::make_shared<bool>(false);
  auto force = std::make_shared<bool>(false);
  CLI::App* cmd = parent.add_subcommand("add", "Add (or with --force replace) a context");
  cmd->add_option("name", entry->name, "Context name, e.g. lab")->required();
  // The subcommand's own options shadow trainctl's global ones of the same name.
  cmd->add_option("--addr", entry->addr, "HOST:PORT (or unix:PATH) of traind")->required();
  cmd->add_option("--tls-ca", entry->tls_ca, "CA certificate (PEM) that signed traind's");
  cmd->add_option("--tls-cert", entry->tls_cert, "Client certificate (PEM)");
  cmd->add_option("--tls-key", entry->tls_key, "Private key (PEM) of --tls-cert");
  cmd->add_option("--token-file", entry->token_file, "File holding the bearer token");
  cmd->add_flag("--use", *use, "Make it the current context");
  cmd->add_flag("--force", *force, "Replace a context of the same name");
  cmd->callback([&ctx, exit_code, entry, use, force] {
    if (entry->name.empty() || entry->name.find_first_of(" .\"'[]=#") != std::string::npos) {
      *exit_code =
          ctx.UsageError("name: letters, digits, '-' and '_' only, got '" + entry->name + "'");
      return;
    }
    if (entry->tls_cert.empty() != entry->tls_key.empty()) {
      *exit_code = ctx.UsageError("tls-cert, tls-key: give both or neither");
      return;
    }
    if (!Absolutize(ctx, "tls-ca", &entry->tls_ca) ||
        !Absolutize(ctx, "tls-cert", &entry->tls_cert) ||
        !Absolutize(ctx, "tls-key", &entry->tls_key) ||
        !Absolutize(ctx, "token-file", &entry->token_file)) {
      *exit_code = kExitUsage;
      return;
    }
    ClientConfig config;
    if (!Load(ctx, &config, exit_code)) return;
    auto existing = std::find_if(config.contexts.begin(), config.contexts.end(),
                                 [&](const ContextEntry& e) { return e.name == entry->name; });
    if (existing != config.contexts.end()) {
      if (!*force) {
        *exit_code =
            ctx.UsageError("context '" + entry->name + "' exists; add --force to replace it");
        return;
      }
      *existing = *entry;
    } else {
      config.contexts.push_back(*entry);
    }
    if (*use || config.current_context.empty()) config.current_context = entry->name;
    if (!Save(ctx, config, exit_code)) return;
    ctx.out() << "context " << entry->name << " saved in " << ctx.options().config_path
              << (config.current_context == entry->name ? " (current)" : "") << "\n";
  });
}

void AddUse(CLI::App& parent, Context& ctx, int* exit_code) {
  auto name = std::make_shared<std::string>();
  CLI::App* cmd = parent.add_subcommand("use", "Make a context the current one");
  cmd->add_option("name", *name, "Context name")->required();
  cmd->callback([&ctx, exit_code, name] {
    ClientConfig config;
    if (!Load(ctx, &config, exit_code)) return;
    if (config.Find(*name) == nullptr) {
      *exit_code = ctx.UsageError("no context named '" + *name + "'");
      return;
    }
    config.current_context = *name;
    if (!Save(ctx, config, exit_code)) return;
    ctx.out() << "current context: " << *name << "\n";
  });
}

void AddList(CLI::App& parent, Context& ctx, int* exit_code) {
  CLI::App* cmd = parent.add_subcommand("list", "List contexts (* marks the current one)");
  cmd->callback([&ctx, exit_code] {
    ClientConfig config;
    if (!Load(ctx, &config, exit_code)) return;
    if (ctx.json()) {
      ctx.out() << "[";
      for (size_t i = 0; i < config.contexts.size(); ++i) {
        const ContextEntry& e = config.contexts[i];
        // Names are restricted (see add) and paths come from the file system: quote-safe enough
        // for the characters allowed; escape the two JSON must-escapes anyway.
        auto quote = [](const std::string& s) {
          std::string q = "\"";
          for (char c : s) {
            if (c == '"' || c == '\\') q += '\\';
            q += c;
          }
          return q + "\"";
        };
        ctx.out() << (i ? "," : "") << "{\"name\":" << quote(e.name)
                  << ",\"current\":" << (e.name == config.current_context ? "true" : "false")
                  << ",\"addr\":" << quote(e.addr) << ",\"tlsCa\":" << quote(e.tls_ca)
                  << ",\"tlsCert\":" << quote(e.tls_cert)
                  << ",\"tokenFile\":" << quote(e.token_file) << "}";
      }
      ctx.out() << "]\n";
      return;
    }
    if (config.contexts.empty()) {
      ctx.out() << "no contexts in " << ctx.options().config_path
                << "; add one with `trainctl context add NAME --addr HOST:PORT ...`\n";
      return;
    }
    for (const ContextEntry& e : config.contexts) {
      ctx.out() << (e.name == config.current_context ? "* " : "  ") << e.name << "\t" << e.addr
                << "\t" << (e.tls_ca.empty() ? "system CAs" : "ca " + e.tls_ca)
                << (e.tls_cert.empty() ? "" : ", client cert")
                << (e.token_file.empty() ? ", no token" : ", token file") << "\n";
    }
  });
}

void AddRemove(CLI::App& parent, Context& ctx, int* exit_code) {
  auto name = std::make_shared<std::string>();
  CLI::App* cmd = parent.add_subcommand("remove", "Remove a context");
  cmd->add_option("name", *name, "Context name")->required();
  cmd->callback([&ctx, exit_code, name] {
    ClientConfig config;
    if (!Load(ctx, &config, exit_code)) return;
    const size_t before = config.contexts.size();
    config.contexts.erase(std::remove_if(config.contexts.begin(), config.contexts.end(),
                                         [&](const ContextEntry& e) { return e.name == *name; }),
                          config.contexts.end());
    if (config.contexts.size() == before) {
      *exit_code = ctx.UsageError("no context named '" + *name + "'");
      return;
    }
    if (config.current_context == *name) config.current_context.clear();
    if (!Save(ctx, config, exit_code)) return;
    ctx.out() << "context " << *name << " removed\n";
  });
}

}  // namespace

void AddContextCommand(CLI::App& app, Context& ctx, int* exit_code) {
  CLI::App* cmd =
      app.add_subcommand("context", "Named connections to traind (address, TLS, token) in " +
                                        ctx.options().config_path);
  cmd->require_subcommand(1);
  AddAdd(*cmd, ctx, exit_code);
  AddUse(*cmd, ctx, exit_code);
  AddList(*cmd, ctx, exit_code);
  AddRemove(*cmd, ctx, exit_code);
}

}  // namespace traind
