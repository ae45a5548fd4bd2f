#include "server/http/dashboard_server.h"

#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/artifact_names.h"
#include "common/grpc_status.h"
#include "common/loopback.h"
#include "common/metric_rows.h"
#include "common/random_secret.h"
#include "common/status_macros.h"
#include "common/write_all.h"
#include "server/http/http_replies.h"
#include "server/http/job_feeds.h"
#include "server/http/web_assets.h"

namespace traind {
namespace {

constexpr const char* kCookie = "traind_session";

// HOST and PORT of "HOST:PORT" or "[V6]:PORT".
absl::StatusOr<std::pair<std::string, int>> SplitAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("http: '", address.substr(0, 64), "' is not HOST:PORT (e.g. 127.0.0.1:8080)"));
  }
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return std::make_pair(host, port);
}

// The value of cookie `name` in a Cookie header, or "".
std::string CookieValue(const std::string& header, const std::string& name) {
  for (absl::string_view part : absl::StrSplit(header, ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (absl::ConsumePrefix(&part, name) && absl::ConsumePrefix(&part, "=")) {
      return std::string(part);
    }
  }
  return "";
}

void ServeAsset(const std::string& path, httplib::Response& response, int status = 200) {
  const WebAsset* asset = FindWebAsset(path);
  if (asset == nullptr) {
    response.status = 404;
    response.set_content("not found\n", "text/plain");
    return;
  }
  response.status = status;
  response.set_content(reinterpret_cast<const char*>(asset->data), asset->size,
                       asset->content_type);
}

// The login form, as a `status` response; with `message` (a constant of ours, never a request's
// text: it is not escaped) above the form.
void ServeLoginForm(httplib::Response& response, int status, const char* message = nullptr) {
  ServeAsset("/login.html", response, status);
  if (message == nullptr) return;
  std::string page = response.body;
  const size_t at = page.find("<!--message-->");
  if (at == std::string::npos) return;
  page.replace(at, std::strlen("<!--message-->"),
               absl::StrCat("<p id=\"error\" role=\"alert\">", message, "</p>"));
  response.set_content(page, "text/html; charset=utf-8");
}

// The id in a route's capture `group`; a 400 reply when it is not a positive 64-bit integer.
std::optional<int64_t> IdFrom(const httplib::Request& request, httplib::Response& response,
                              int group = 1) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(request.matches[group].str(), &id) || id <= 0) {
    SendError(response, absl::InvalidArgumentError("id: must be a positive 64-bit integer"));
    return std::nullopt;
  }
  return id;
}

}  // namespace

struct DashboardServer::StreamSlot {
  explicit StreamSlot(std::atomic<int>* open) : open_streams(open) {}
  ~StreamSlot() { open_streams->fetch_sub(1); }
  std::atomic<int>* const open_streams;
  std::unique_ptr<AccessControl::WatchLease> lease;  // null: not limited (the local user)
};

std::shared_ptr<DashboardServer::StreamSlot> DashboardServer::AcquireStream(
    const HttpIdentity& who, httplib::Response& response) {
  if (open_streams_.fetch_add(1) >= options_.max_streams) {
    open_streams_.fetch_sub(1);
    SendError(response,
              absl::UnavailableError("too many open streams and downloads; try again later"));
    return nullptr;
  }
  auto slot = std::make_shared<StreamSlot>(&open_streams_);
  absl::StatusOr<std::unique_ptr<AccessControl::WatchLease>> lease = access_->AcquireWatch(
      Caller{who.owner, /*limited=*/!who.local, who.admin ? Role::kAdmin : Role::kUser});
  if (!lease.ok()) {
    SendError(response, lease.status());
    return nullptr;  // the slot gives its place back
  }
  slot->lease = *std::move(lease);
  return slot;
}

bool DashboardServer::SameOrigin(const httplib::Request& request) const {
  const std::string origin = request.get_header_value("Origin");
  if (origin.empty()) return true;  // not a browser's cross-site request: browsers send Origin
  const bool tls = !options_.tls_cert.empty();
  return origin == absl::StrCat(tls ? "https://" : "http://", request.get_header_value("Host"));
}

DashboardServer::DashboardServer(Options options, std::shared_ptr<grpc::Channel> in_process,
                                 AccessControl* access, std::string local_session_secret,
                                 std::unique_ptr<PrometheusMetrics> metrics)
    : options_(std::move(options)),
      access_(access),
      local_token_(RandomSecret()),
      metrics_(std::move(metrics)),
      gateway_(std::move(in_process), std::move(local_session_secret)) {}

absl::StatusOr<std::unique_ptr<DashboardServer>> DashboardServer::Start(
    Options options, std::shared_ptr<grpc::Channel> in_process, AccessControl* access,
    std::string local_session_secret, std::unique_ptr<PrometheusMetrics> metrics) {
  const bool tls = !options.tls_cert.empty();
  if (tls != !options.tls_key.empty()) {
    return absl::InvalidArgumentError("http: --tls-cert and --tls-key go together");
  }
  ASSIGN_OR_RETURN(const auto address, SplitAddress(options.address));
  const std::string& host = address.first;
  const int port = address.second;
  if (!tls && !IsLoopbackAddress(options.address)) {
    return absl::InvalidArgumentError(
        absl::StrCat("http: ", options.address.substr(0, 64),
                     ": without TLS (--tls-cert, --tls-key) the dashboard listens only on loopback "
                     "(e.g. 127.0.0.1:8080); browse from elsewhere through TLS or an SSH tunnel"));
  }
  std::unique_ptr<DashboardServer> dashboard(new DashboardServer(
      options, std::move(in_process), access, std::move(local_session_secret), std::move(metrics)));
  if (tls) {
    auto server =
        std::make_unique<httplib::SSLServer>(options.tls_cert.c_str(), options.tls_key.c_str());
    if (!server->is_valid()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "http: cannot use the TLS certificate ", options.tls_cert, " and key ", options.tls_key));
    }
    dashboard->server_ = std::move(server);
  } else {
    dashboard->server_ = std::make_unique<httplib::Server>();
  }

  // The local user's API token: for curl, scripts and Prometheus on this machine. The state
  // directory is 0700 and the file 0600, so it is as private as the Unix socket.
  if (!options.token_path.empty()) {
    unlink(options.token_path.c_str());  // a stale one (or a link someone put there)
    const int fd = open(options.token_path.c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || !WriteAll(fd, dashboard->local_token_ + "\n")) {
      if (fd >= 0) close(fd);
      return absl::FailedPreconditionError(
          absl::StrCat("http: cannot write ", options.token_path, ": ", std::strerror(errno)));
    }
    close(fd);
  }

  httplib::Server& server = *dashboard->server_;
  const int threads = options.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_payload_max_length(options.max_request_bytes);
  // One request per connection. cpp-httplib waits for a keep-alive connection's next request by
  // polling it every 10 ms, so 50 idle browser connections cost thousands of wake-ups a second
  // next to the training they watch (bench/dashboard_load.py); a new loopback or LAN connection per
  // API call costs less. Event streams are one long response each and are not affected.
  server.set_keep_alive_max_count(1);
  server.set_default_headers({
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      // The login link's token never leaves in a Referer to another site. Not "no-referrer": with
      // it a browser sends `Origin: null` on the page's own form posts, and the login form's POST
      // would be refused as cross-site.
      {"Referrer-Policy", "same-origin"},
      {"Cache-Control", "no-store"},
      {"Content-Security-Policy",
       "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"},
  });
  dashboard->Route();
  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(
        absl::StrCat("http: cannot listen on ", options.address, " (in use?)"));
  }
  const bool v6 = host.find(':') != std::string::npos;
  dashboard->url_ =
      absl::StrCat(tls ? "https://" : "http://", v6 ? "[" : "", host, v6 ? "]" : "", ":", bound);
  dashboard->listener_ = std::thread([&server] { server.listen_after_bind(); });
  // cpp-httplib's stop() does nothing until the listener runs: wait for it, so that a Stop() right
  // after Start() (a daemon failing to start) cannot wait forever for the thread.
  for (int i = 0; i < 5000 && !server.is_running(); ++i) absl::SleepFor(absl::Milliseconds(1));
  return dashboard;
}

DashboardServer::~DashboardServer() { Stop(); }

void DashboardServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (server_) server_->stop();  // open streams see stopping_ within a second and end
  if (listener_.joinable()) listener_.join();
  if (!options_.token_path.empty()) unlink(options_.token_path.c_str());
}

std::string DashboardServer::NewLoginUrl() {
  return absl::StrCat(url_, "/login?token=", sessions_.NewLoginToken());
}

std::optional<HttpIdentity> DashboardServer::Authenticate(const httplib::Request& request,
                                                          httplib::Response& response) {
  const std::string authorization = request.get_header_value("Authorization");
  if (!authorization.empty()) {
    absl::string_view token = authorization;
    if (!absl::ConsumePrefix(&token, "Bearer ")) {
      SendError(response, absl::UnauthenticatedError("Authorization: expected 'Bearer TOKEN'"));
      return std::nullopt;
    }
    // No CSRF check: a bearer token is never sent by a browser on its own.
    if (ConstantTimeEquals(std::string(token), local_token_)) {
      return HttpIdentity{true, "", "local", true};
    }
    const absl::StatusOr<Caller> caller = access_->AuthenticateToken(
        std::string(token), true, absl::StrCat("http:", request.remote_addr));
    if (!caller.ok()) {
      SendError(response, caller.status());
      return std::nullopt;
    }
    return HttpIdentity{false, std::string(token), caller->owner, caller->is_admin()};
  }
  const std::optional<HttpSession> session =
      sessions_.Find(CookieValue(request.get_header_value("Cookie"), kCookie));
  if (!session.has_value()) {
    SendError(response, absl::UnauthenticatedError(
                            "log in first: open the link traind printed, or send "
                            "`Authorization: Bearer TOKEN` (--token-file, or the state "
                            "directory's http.token)"));
    return std::nullopt;
  }
  if (request.method != "GET" && request.method != "HEAD" &&
      (!SameOrigin(request) ||
       !ConstantTimeEquals(request.get_header_value("X-CSRF-Token"), session->csrf))) {
    SendError(response,
              absl::PermissionDeniedError("X-CSRF-Token: missing or not this session's (GET "
                                          "/api/v1/session gives it)"));
    return std::nullopt;
  }
  return session->identity;
}

void DashboardServer::Route() {
  RoutePagesAndSessions();
  RouteApi();
}

void DashboardServer::RoutePagesAndSessions() {
  httplib::Server& server = *server_;
  const bool secure = !options_.tls_cert.empty();
  auto set_cookie = [secure](httplib::Response& response, const std::string& value, int max_age) {
    response.set_header("Set-Cookie", absl::StrCat(kCookie, "=", value,
                                                   "; Path=/; HttpOnly; SameSite=Strict; Max-Age=",
                                                   max_age, secure ? "; Secure" : ""));
  };

  // The page itself; without a session the login form, as a 401.
  server.Get("/", [this](const httplib::Request& request, httplib::Response& response) {
    httplib::Response refusal;
    if (Authenticate(request, refusal).has_value()) {
      ServeAsset("/index.html", response);
    } else {
      ServeLoginForm(response, 401);
    }
  });
  // Scripts and styles hold no data: served to anyone, so the login form has its styles.
  server.Get(R"(/([A-Za-z0-9_.-]+\.(js|css|svg)))",
             [](const httplib::Request& request, httplib::Response& response) {
               ServeAsset(request.path, response);
             });
  server.Get("/login",
             [this, set_cookie](const httplib::Request& request, httplib::Response& response) {
               const std::optional<HttpSession> session =
                   sessions_.RedeemLoginToken(request.get_param_value("token"));
               if (!session.has_value()) {
                 std::cerr << "traind: dashboard: refused a login link from " << request.remote_addr
                           << " (unknown, used or expired)\n";
                 ServeLoginForm(response, 401,
                                "That login link was already used or has expired: each link "
                                "logs in once. Paste a token below.");
                 return;
               }
               set_cookie(response, session->id, 7 * 24 * 3600);
               response.set_redirect("/", 303);  // off the URL that held the token
             });
  server.Post("/login",
              [this, set_cookie](const httplib::Request& request, httplib::Response& response) {
                // A login from another site's form would log this browser in as someone else (login
                // CSRF); a token in the URL would end up in logs and history.
                if (!SameOrigin(request) || request.target.find('?') != std::string::npos) {
                  std::cerr << "traind: dashboard: refused a login form from "
                            << request.remote_addr << " sent from another site (Origin: "
                            << request.get_header_value("Origin").substr(0, 100) << ")\n";
                  ServeLoginForm(response, 403,
                                 "This form was sent from another page or site. Open the "
                                 "dashboard's own address and log in there.");
                  return;
                }
                const std::string token = request.get_param_value("token");
                std::optional<HttpIdentity> identity;
                if (ConstantTimeEquals(token, local_token_)) {
                  identity = HttpIdentity{true, "", "local", true};
                } else if (const absl::StatusOr<Caller> caller = access_->AuthenticateToken(
                               token, !token.empty(), absl::StrCat("http:", request.remote_addr));
                           caller.ok()) {
                  identity = HttpIdentity{false, token, caller->owner, caller->is_admin()};
                }
                if (!identity.has_value()) {
                  ServeLoginForm(response, 401,
                                 "That token was not accepted: it is neither traind's http.token "
                                 "nor a token of its --token-file.");
                  return;
                }
                set_cookie(response, sessions_.Create(*identity).id, 7 * 24 * 3600);
                response.set_redirect("/", 303);
              });
  server.Post("/logout",
              [this, set_cookie](const httplib::Request& request, httplib::Response& response) {
                if (!Authenticate(request, response)) return;
                sessions_.Remove(CookieValue(request.get_header_value("Cookie"), kCookie));
                set_cookie(response, "", 0);
                response.status = 204;
              });
  server.Get(
      "/api/v1/session", [this](const httplib::Request& request, httplib::Response& response) {
        const std::optional<HttpIdentity> who = Authenticate(request, response);
        if (!who) return;
        // The CSRF token belongs to a cookie session; a bearer caller needs none.
        const std::optional<HttpSession> session =
            request.has_header("Authorization")
                ? std::nullopt
                : sessions_.Find(CookieValue(request.get_header_value("Cookie"), kCookie));
        response.set_content(absl::StrCat("{\"owner\":", RpcGateway::JsonQuote(who->owner),
                                          ",\"admin\":", who->admin ? "true" : "false",
                                          ",\"csrfToken\":\"", session ? session->csrf : "", "\"}"),
                             kJsonContentType);
      });
}

void DashboardServer::RouteApi() {
  httplib::Server& server = *server_;
  server.Post(R"(/api/v1/([A-Za-z]+))", [this](const httplib::Request& request,
                                               httplib::Response& response) {
    const std::optional<HttpIdentity> who = Authenticate(request, response);
    if (!who) return;
    const JsonReply reply = gateway_.CallJson(*who, request.matches[1].str(), request.body);
    response.status = reply.http_status;
    response.set_content(reply.body, kJsonContentType);
  });
  server.Get(R"(/api/v1/jobs/(\d+)/events)", [this](const httplib::Request& request,
                                                    httplib::Response& response) {
    const std::optional<HttpIdentity> who = Authenticate(request, response);
    if (!who) return;
    const std::optional<int64_t> id = IdFrom(request, response);
    if (!id) return;
    // A reconnecting EventSource says where it stopped; otherwise ?from_seq= (default: all).
    int64_t from_seq = 1;
    int64_t last_seen = 0;
    if (absl::SimpleAtoi(request.get_header_value("Last-Event-ID"), &last_seen) && last_seen >= 0 &&
        last_seen < std::numeric_limits<int64_t>::max()) {
      from_seq = last_seen + 1;
    } else if (request.has_param("from_seq") &&
               (!absl::SimpleAtoi(request.get_param_value("from_seq"), &from_seq) ||
                from_seq < 0)) {
      SendError(response, absl::InvalidArgumentError("from_seq: must be a non-negative integer"));
      return;
    }
    ServeEvents(*who, *id, from_seq, response);
  });
  server.Get(R"(/api/v1/(jobs|sweeps)/(\d+)/export)",
             [this](const httplib::Request& request, httplib::Response& response) {
               const std::optional<HttpIdentity> who = Authenticate(request, response);
               if (!who) return;
               const std::optional<int64_t> id = IdFrom(request, response, 2);
               if (!id) return;
               std::vector<int64_t> ids = {*id};
               std::string name = absl::StrCat("job", *id);
               if (request.matches[1].str() == "sweeps") {
                 trainer::v1::GetSweepRequest get;
                 get.set_id(*id);
                 trainer::v1::Sweep sweep;
                 const grpc::Status status =
                     gateway_.stub().GetSweep(gateway_.ContextFor(*who).get(), get, &sweep);
                 if (!status.ok()) return SendError(response, status);
                 ids.assign(sweep.job_ids().begin(), sweep.job_ids().end());
                 name = absl::StrCat("sweep", *id);
               }
               const std::string format =
                   request.has_param("format") ? request.get_param_value("format") : "csv";
               ServeExport(*who, std::move(ids), format, name, response);
             });
  // Weights are a plain name, a program's file its path in TRAIND_OUTPUT_DIR (the daemon checks
  // which it may be). cpp-httplib bounds the path (CPPHTTPLIB_REQUEST_URI_MAX_LENGTH, 8 KiB), and
  // with it what the matcher walks.
  server.Get(R"(/api/v1/jobs/(\d+)/artifacts/(.+))",
             [this](const httplib::Request& request, httplib::Response& response) {
               const std::optional<HttpIdentity> who = Authenticate(request, response);
               if (!who) return;
               const std::optional<int64_t> id = IdFrom(request, response);
               if (!id) return;
               ServeArtifact(*who, *id, request.matches[2].str(), response);
             });
  server.Get("/metrics", [this](const httplib::Request& request, httplib::Response& response) {
    const std::optional<HttpIdentity> who = Authenticate(request, response);
    if (!who) return;
    if (!who->admin) {
      return SendError(response,
                       absl::PermissionDeniedError("/metrics: describes everyone's jobs; needs an "
                                                   "admin token or the local user"));
    }
    const absl::StatusOr<std::string> text = metrics_->Render();
    if (!text.ok()) {
      return SendError(response, text.status());
    }
    response.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });
}

}  // namespace traind
