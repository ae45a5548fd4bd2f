#include "server/access_control.h"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/message_bounds.h"
#include "common/status_macros.h"
#include "common/terminal_text.h"
#include "server/rpc_policy.h"

namespace traind {

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  const size_t n = std::max(a.size(), b.size());
  // Volatile keeps the compiler from turning the loop into an early-exit memcmp.
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | (x ^ y);
  }
  return diff == 0;
}

// Tokens are passwords: a token file every user of the machine may read (or write) is refused, as
// ssh refuses such a key. A device or pipe (/dev/null in tests) is not a file anyone wrote tokens
// in.
static absl::Status CheckTokenFileMode(const std::string& token_file) {
  struct stat info {};
  if (stat(token_file.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return absl::OkStatus();
  if ((info.st_mode & (S_IROTH | S_IWOTH)) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "token-file: %s can be %s by every user of this machine (mode %04o); its tokens are "
      "passwords: chmod 600 %s",
      token_file, (info.st_mode & S_IROTH) ? "read" : "written", info.st_mode & 07777, token_file));
}

absl::StatusOr<std::unique_ptr<AccessControl>> AccessControl::Create(const std::string& token_file,
                                                                     Limits limits) {
  std::vector<Token> tokens;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in)
      return absl::InvalidArgumentError(absl::StrCat("token-file: cannot read ", token_file));
    RETURN_IF_ERROR(CheckTokenFileMode(token_file));
    std::map<std::string, int> line_of_token;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const std::string trimmed(absl::StripAsciiWhitespace(line));
      if (trimmed.empty() || trimmed[0] == '#') continue;
      std::vector<std::string> fields =
          absl::StrSplit(trimmed, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (fields.size() > 3) {
        return absl::InvalidArgumentError(absl::StrCat("token-file: ", token_file, ":", number,
                                                       ": expected TOKEN [NAME [ROLE]], got ",
                                                       fields.size(), " fields"));
      }
      if (fields[0].size() < 16) {
        return absl::InvalidArgumentError(absl::StrCat(
            "token-file: ", token_file, ":", number,
            ": a token must have at least 16 characters (deploy/make-certs.sh makes one)"));
      }
      Token token{fields[0], fields.size() >= 2 ? fields[1] : absl::StrCat("token-", number),
                  Role::kUser};
      if (fields.size() == 3) {
        absl::string_view role = fields[2];
        if (absl::ConsumeSuffix(&role, ",run-code")) token.may_run_code = true;
        if (role == "admin") {
          token.role = Role::kAdmin;
        } else if (role != "user") {
          return absl::InvalidArgumentError(
              absl::StrCat("token-file: ", token_file, ":", number, ": role '", fields[2],
                           "' is not one of: user, admin, user,run-code, admin,run-code"));
        }
      }
      if (token.owner == "local") {
        return absl::InvalidArgumentError(
            absl::StrCat("token-file: ", token_file, ":", number,
                         ": the name 'local' is reserved for callers on the Unix socket"));
      }
      for (const Token& other : tokens) {
        if (other.owner == token.owner &&
            (other.role != token.role || other.may_run_code != token.may_run_code)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "token-file: ", token_file, ":", number, ": '", token.owner,
              "' has another token with a different role; tokens of one name share its role"));
        }
      }
      if (auto [earlier, added] = line_of_token.emplace(token.secret, number); !added) {
        return absl::InvalidArgumentError(
            absl::StrCat("token-file: ", token_file, ":", number, ": the same token as line ",
                         earlier->second, ": a token names one caller (give each its own token)"));
      }
      tokens.push_back(std::move(token));
    }
    if (tokens.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("token-file: ", token_file, " has no tokens"));
    }
  }
  return std::unique_ptr<AccessControl>(new AccessControl(std::move(tokens), limits));
}

absl::Status AccessControl::MayStart(const std::string& owner, bool runs_program) const {
  if (owner.empty() || owner == "local") return absl::OkStatus();
  const Token* found = nullptr;
  for (const Token& token : tokens_) {
    if (token.owner == owner) found = &token;
  }
  if (found == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("not started: '", owner,
                     "' has no token in traind's --token-file any more (it was queued before)"));
  }
  if (runs_program && !found->may_run_code) {
    return absl::PermissionDeniedError(absl::StrCat(
        "not started: '", owner,
        "' may no longer run programs on this traind (its token lost the run-code grant after "
        "the job was queued)"));
  }
  return absl::OkStatus();
}

absl::Status NotYours(const Caller& caller, const std::string& what) {
  return absl::PermissionDeniedError(absl::StrCat(
      what, " is not yours: '", caller.owner,
      "' may act only on its own jobs, sweeps and uploads (an admin token may act on all)"));
}

absl::StatusOr<Caller> AccessControl::Admit(const grpc::ServerContextBase& context,
                                            const std::string& method,
                                            const google::protobuf::Message* request) const {
  ASSIGN_OR_RETURN(Caller caller, Authenticate(context));
  const RpcPolicy* policy = FindRpcPolicy(method);
  if (policy == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat(method, ": this call has no access policy; nobody may make it"));
  }
  if (policy->scope == RpcScope::kAdmin && !caller.is_admin()) {
    return absl::PermissionDeniedError(
        absl::StrCat(method, ": needs an admin token; '", caller.owner, "' is a user"));
  }
  // Before any work: every string and list of the request within its bound.
  if (request != nullptr) RETURN_IF_ERROR(CheckMessageBounds(*request));
  return caller;
}

absl::StatusOr<Caller> AccessControl::Authenticate(const grpc::ServerContextBase& context) const {
  const std::string peer = context.peer();
  // The Unix socket is 0600 in a 0700 directory: whoever reaches it is the daemon's own user.
  if (absl::StartsWith(peer, "unix:"))
    return Caller{"local", false, Role::kAdmin, /*may_run_code=*/true};

  const auto& metadata = context.client_metadata();
  // An in-process call from the dashboard for a browser that logged in with the one-time link.
  // The secret is what proves it (256 random bits that never leave the process); the peer check
  // is a second fence: gRPC names in-process peers "inproc" or (1.51) "unknown", never an address.
  const bool network_peer = absl::StartsWith(peer, "ipv4:") || absl::StartsWith(peer, "ipv6:");
  if (!network_peer && !local_session_secret_.empty()) {
    const auto session = metadata.find(kLocalSessionHeader);
    if (session != metadata.end() &&
        ConstantTimeEquals(std::string(session->second.data(), session->second.size()),
                           local_session_secret_)) {
      return Caller{"local", false, Role::kAdmin, /*may_run_code=*/true};
    }
  }
  std::string presented;
  const auto it = metadata.find("authorization");
  if (it != metadata.end()) {
    const std::string value(it->second.data(), it->second.size());
    if (absl::StartsWith(value, "Bearer ")) presented = value.substr(7);
  }
  return AuthenticateToken(presented, it != metadata.end(), peer);
}

absl::StatusOr<Caller> AccessControl::AuthenticateToken(const std::string& presented,
                                                        bool presented_any,
                                                        const std::string& peer) const {
  const Token* match = nullptr;
  for (const Token& token : tokens_) {  // no early exit: every token costs the same
    if (ConstantTimeEquals(presented, token.secret) && match == nullptr) match = &token;
  }
  if (match == nullptr) {
    const char* why = presented_any ? "wrong bearer token" : "no bearer token";
    refused_log_.Log(absl::StrCat("traind: refused a call from ", TerminalSafe(peer), ": ", why));
    return absl::UnauthenticatedError(
        absl::StrCat(why,
                     ": send `authorization: Bearer TOKEN` with a token from traind's --token-file "
                     "(trainctl: --token-file or TRAINCTL_TOKEN_FILE)"));
  }
  return Caller{match->owner, true, match->role, match->may_run_code};
}

absl::StatusOr<std::unique_ptr<AccessControl::WatchLease>> AccessControl::AcquireWatch(
    const Caller& caller) {
  if (!caller.limited) return std::unique_ptr<WatchLease>();
  absl::MutexLock lock(&mu_);
  int& open = watchers_[caller.owner];
  if (open >= limits_.max_watchers) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "watchers: '", caller.owner, "' already has ", open, " open watches; the limit is ",
        limits_.max_watchers, " (traind --max-watchers-per-token)"));
  }
  ++open;
  return std::make_unique<WatchLease>(this, caller.owner);
}

AccessControl::WatchLease::~WatchLease() {
  absl::MutexLock lock(&access_->mu_);
  if (--access_->watchers_[owner_] == 0) access_->watchers_.erase(owner_);
}

}  // namespace traind
