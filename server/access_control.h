// AccessControl: who may call traind, what each caller may do, and how much each may hold.
//
// Callers on the Unix socket are local (the socket is 0600 in a 0700 directory, so the file
// system already decided): they need no token and are admins. Callers over TCP must send
// `authorization: Bearer <token>` matching a line of --token-file (`TOKEN [NAME [ROLE]]`, ROLE
// `user` or `admin`, optionally followed by `,run-code`: that token may run programs, script
// jobs; the local owner may); tokens are compared in constant time. A `user` token (the default
// role) acts on its own jobs, sweeps and uploads only; an `admin` token on everyone's, and may
// pause the queue. Which RPC needs what is decided in one table (rpc_policy.h). Each user token may
// hold at most `max_queued_jobs` queued jobs, `max_watchers` open watches and `max_uploads` uploads
// in flight; local callers are not limited. Thread-safe.
#ifndef TRAIND_SERVER_ACCESS_CONTROL_H_
#define TRAIND_SERVER_ACCESS_CONTROL_H_

#include <grpcpp/grpcpp.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/message.h"
#include "server/log_limiter.h"

namespace traind {

enum class Role { kUser, kAdmin };

// Who made a call. `owner` is what jobs record ("local", or the token's name).
struct Caller {
  std::string owner;
  bool limited = false;  // a token holder: limits apply
  Role role = Role::kUser;
  // May submit a program to run (a script job: code execution as traind's user). The local
  // owner may; a token only where its line grants `run-code`.
  bool may_run_code = false;

  bool is_admin() const { return role == Role::kAdmin; }
  // Whether this caller may read and change what `resource_owner` owns.
  bool MayActFor(const std::string& resource_owner) const {
    return is_admin() || resource_owner == owner;
  }
};

// PERMISSION_DENIED for `caller` acting on `what` (e.g. "job 7") owned by someone else: says who
// may, never who owns it.
absl::Status NotYours(const Caller& caller, const std::string& what);

class AccessControl {
 public:
  struct Limits {
    int max_queued_jobs = 1000;  // per token
    int max_watchers = 64;       // per token
    // Uploads in flight per token (traind --max-uploads-per-token); counted by QuotaLedger
    // (quota_ledger.h), which the upload path asks, together with the storage quota. 0: none.
    int max_uploads = 4;
  };

  // Tokens from `token_file`: one per line, optionally followed by whitespace and a name (the
  // owner recorded on its jobs; default "token-<line>") and a role (`user`, the default, or
  // `admin`); blank lines and `#` comments skipped. Several tokens may share a name (rotation)
  // if they agree on its role. Empty `token_file`: no tokens; only the Unix socket is served
  // then (Daemon::Start refuses TCP listeners without tokens).
  static absl::StatusOr<std::unique_ptr<AccessControl>> Create(const std::string& token_file,
                                                               Limits limits);

  // The caller of `context` if it may call `method` (a method name of trainer.v1.Trainer, e.g.
  // "SubmitJob"): UNAUTHENTICATED without a valid token (logged to stderr with the peer's
  // address), PERMISSION_DENIED when its role may not call `method`, and PERMISSION_DENIED for a
  // method the policy table does not know (a new RPC is refused until it is given a policy); then
  // INVALID_ARGUMENT when a field of `request` (null for a client stream, whose messages are
  // checked as they come) is over its bound (CheckMessageBounds). No I/O: fit for a reaction.
  absl::StatusOr<Caller> Admit(const grpc::ServerContextBase& context, const std::string& method,
                               const google::protobuf::Message* request) const;

  // The caller `presented` (a bearer token, without "Bearer ") belongs to, or UNAUTHENTICATED
  // (logged with `peer`). The dashboard authenticates its own pages and logins with this, so an
  // HTTP caller is judged by the same tokens as a gRPC one.
  absl::StatusOr<Caller> AuthenticateToken(const std::string& presented, bool presented_any,
                                           const std::string& peer) const;

  // The dashboard (server/http/) calls the service on an in-process channel: with the caller's
  // bearer token, or for a local browser session (one that logged in with traind's one-time
  // link) with `x-traind-local-session: SECRET`, which makes the call local. Callers with a
  // network address may not use it. Set once, before the server starts; empty (the default): none.
  void set_local_session_secret(std::string secret) { local_session_secret_ = std::move(secret); }
  static constexpr const char* kLocalSessionHeader = "x-traind-local-session";

  // Held by an open watch; gives the slot back when destroyed.
  class WatchLease {
   public:
    WatchLease(AccessControl* owner, std::string token_owner)
        : access_(owner), owner_(std::move(token_owner)) {}
    ~WatchLease();
    WatchLease(const WatchLease&) = delete;
    WatchLease& operator=(const WatchLease&) = delete;

   private:
    AccessControl* access_;
    std::string owner_;
  };
  // A watch slot for `caller`, or RESOURCE_EXHAUSTED at the limit. Null lease: unlimited.
  absl::StatusOr<std::unique_ptr<WatchLease>> AcquireWatch(const Caller& caller);

  // Whether a job `owner` queued may start under the token file traind runs with now: a token
  // removed, or a run-code grant taken away, since it was queued (and traind restarted) reaches
  // the jobs still queued. OK, or PERMISSION_DENIED saying what changed. "local" always may.
  absl::Status MayStart(const std::string& owner, bool runs_program) const;

  const Limits& limits() const { return limits_; }
  bool has_tokens() const { return !tokens_.empty(); }

 private:
  struct Token {
    std::string secret;
    std::string owner;
    Role role = Role::kUser;
    bool may_run_code = false;
  };
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContextBase& context) const;
  AccessControl(std::vector<Token> tokens, Limits limits)
      : tokens_(std::move(tokens)), limits_(limits) {}

  const std::vector<Token> tokens_;
  const Limits limits_;
  std::string local_session_secret_;
  // Refused calls are logged, but a caller can make any number of them: 20 lines per 10 s.
  mutable LogLimiter refused_log_{{20, absl::Seconds(10), "refused calls"}, &std::cerr};
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, int> watchers_ ABSL_GUARDED_BY(mu_);
};

// True when a and b are equal; the time taken depends only on their lengths.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace traind

#endif  // TRAIND_SERVER_ACCESS_CONTROL_H_
