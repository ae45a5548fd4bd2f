// HttpSessions: who a browser is. traind prints a one-time login link; following it (or posting a
// bearer token to /login) creates a session whose id becomes an HttpOnly, SameSite=Strict cookie.
// Each session has its own CSRF token, which the page sends back on every state-changing request.
// Sessions live in memory: a restarted traind asks browsers to log in again. Thread-safe.
#ifndef TRAIND_SERVER_HTTP_HTTP_SESSIONS_H_
#define TRAIND_SERVER_HTTP_HTTP_SESSIONS_H_

#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace traind {

// Whom an HTTP request acts for: the daemon's own user (a one-time link, or the state
// directory's http.token), or the holder of a --token-file token.
struct HttpIdentity {
  bool local = false;
  std::string bearer_token;  // when not local: sent with every call the dashboard makes for it
  std::string owner;         // "local" or the token's name
  bool admin = false;
};

struct HttpSession {
  std::string id;    // the cookie's value
  std::string csrf;  // X-CSRF-Token on POST
  HttpIdentity identity;
  absl::Time expires;
};

class HttpSessions {
 public:
  explicit HttpSessions(absl::Duration lifetime = absl::Hours(24 * 7),
                        absl::Duration login_link_lifetime = absl::Hours(24));

  // A new one-time login token for the local user, valid until used or its lifetime ends.
  std::string NewLoginToken();
  // The session a one-time token opens (the token is spent), or nullopt.
  std::optional<HttpSession> RedeemLoginToken(const std::string& token);

  // At most kMaxSessions live at once: past it the one closest to expiry is dropped (its browser
  // logs in again), so logging in in a loop cannot grow traind's memory.
  static constexpr size_t kMaxSessions = 1000;
  HttpSession Create(HttpIdentity identity);
  // The live session `id` names, or nullopt (unknown or expired).
  std::optional<HttpSession> Find(const std::string& id);
  void Remove(const std::string& id);

 private:
  const absl::Duration lifetime_;
  const absl::Duration login_link_lifetime_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, absl::Time> login_tokens_ ABSL_GUARDED_BY(mu_);  // -> expiry
  absl::flat_hash_map<std::string, HttpSession> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace traind

#endif  // TRAIND_SERVER_HTTP_HTTP_SESSIONS_H_
