#include "server/http/http_sessions.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/escaping.h"
#include "common/random_secret.h"

namespace traind {

HttpSessions::HttpSessions(absl::Duration lifetime, absl::Duration login_link_lifetime)
    : lifetime_(lifetime), login_link_lifetime_(login_link_lifetime) {}

std::string HttpSessions::NewLoginToken() {
  std::string token = RandomSecret();
  absl::MutexLock lock(&mu_);
  login_tokens_[token] = absl::Now() + login_link_lifetime_;
  return token;
}

std::optional<HttpSession> HttpSessions::RedeemLoginToken(const std::string& token) {
  {
    absl::MutexLock lock(&mu_);
    // A hash lookup's time depends on the token, but only through its hash; the tokens are 256
    // random bits, so nothing about one can be learned a character at a time.
    const auto it = login_tokens_.find(token);
    if (it == login_tokens_.end()) return std::nullopt;
    const bool live = it->second > absl::Now();
    login_tokens_.erase(it);  // spent either way
    if (!live) return std::nullopt;
  }
  return Create(HttpIdentity{true, "", "local", true});
}

HttpSession HttpSessions::Create(HttpIdentity identity) {
  HttpSession session{RandomSecret(), RandomSecret(), std::move(identity), absl::Now() + lifetime_};
  absl::MutexLock lock(&mu_);
  // Forget expired sessions now and then, so a browser that logs in daily holds no memory.
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (it->second.expires <= absl::Now()) {
      sessions_.erase(it++);
    } else {
      ++it;
    }
  }
  if (sessions_.size() >= kMaxSessions) {
    auto oldest = sessions_.begin();
    for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
      if (it->second.expires < oldest->second.expires) oldest = it;
    }
    sessions_.erase(oldest);
  }
  sessions_[session.id] = session;
  return session;
}

std::optional<HttpSession> HttpSessions::Find(const std::string& id) {
  absl::MutexLock lock(&mu_);
  const auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires <= absl::Now()) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void HttpSessions::Remove(const std::string& id) {
  absl::MutexLock lock(&mu_);
  sessions_.erase(id);
}

}  // namespace traind
