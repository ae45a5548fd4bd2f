// DashboardServer: `traind --http ADDR`. Serves, with cpp-httplib:
//   /                      the dashboard (web/: queue, job, sweep and device pages)
//   /login                 GET ?token=ONE_TIME (traind's printed link) or POST token=BEARER
//   /api/v1/METHOD         POST, the Trainer service's unary calls in protobuf's JSON mapping
//   /api/v1/jobs/ID/events GET, a job's events as Server-Sent Events from ?from_seq= (or the
//                          Last-Event-ID a reconnecting EventSource sends): no gap, no repeat
//   /api/v1/jobs/ID/export, /api/v1/sweeps/ID/export   ?format=csv|jsonl (common/metric_rows.h)
//   /api/v1/jobs/ID/artifacts/NAME                     a job's artifact (best, final)
//   /metrics               Prometheus' text format (prometheus_metrics.h); admins only
// Security is the gRPC listeners': without TLS it listens only on loopback; every request needs a
// session cookie (HttpOnly, SameSite=Strict; POSTs also its X-CSRF-Token) or
// `Authorization: Bearer TOKEN` (a --token-file token, or the state directory's http.token, which
// acts as the local user). API calls go through RpcGateway, so the service decides everything.
// Thread-safe.
#ifndef TRAIND_SERVER_HTTP_DASHBOARD_SERVER_H_
#define TRAIND_SERVER_HTTP_DASHBOARD_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/access_control.h"
#include "server/http/http_sessions.h"
#include "server/http/job_feeds.h"
#include "server/http/prometheus_metrics.h"
#include "server/http/rpc_gateway.h"

namespace httplib {
class Server;
class Request;
class Response;
}  // namespace httplib

namespace traind {

class DashboardServer {
 public:
  struct Options {
    std::string address;   // HOST:PORT; port 0 picks a free one
    std::string tls_cert;  // PEM files; both or neither
    std::string tls_key;
    std::string token_path;           // where the local user's API token is written (0600)
    int max_request_bytes = 1 << 20;  // bodies are read before authentication: keep them small
    int threads = 128;                // each open event stream holds one
    int max_streams = 100;  // open event streams; past it 503 (keeps threads for other requests)
  };
  // Binds and starts serving. `local_session_secret` is what AccessControl accepts from this
  // server's in-process calls for local sessions.
  static absl::StatusOr<std::unique_ptr<DashboardServer>> Start(
      Options options, std::shared_ptr<grpc::Channel> in_process, AccessControl* access,
      std::string local_session_secret, std::unique_ptr<PrometheusMetrics> metrics);
  ~DashboardServer();  // Stop()

  // Ends open event streams and stops listening; returns when every request thread is done.
  void Stop();

  // e.g. "http://127.0.0.1:8080" (the bound port).
  const std::string& url() const { return url_; }
  // A new one-time link that logs a browser in as the local user.
  std::string NewLoginUrl();

 private:
  DashboardServer(Options options, std::shared_ptr<grpc::Channel> in_process, AccessControl* access,
                  std::string local_session_secret, std::unique_ptr<PrometheusMetrics> metrics);
  void Route();
  // Route's two halves: the page, its assets and the browser's session (login, logout); the JSON
  // API (the service's RPCs, event streams, exports, artifacts) and /metrics.
  void RoutePagesAndSessions();
  void RouteApi();
  // Who sent `request`, or nullopt with `response` set to the refusal (401, or 403 for a POST
  // without its session's CSRF token).
  std::optional<HttpIdentity> Authenticate(const httplib::Request& request,
                                           httplib::Response& response);
  // One of the server's long responses (an event stream, an export, a download): it holds a thread
  // for as long as it lasts, so it counts against max_streams and, for a token holder, against its
  // --max-watchers-per-token like a gRPC watch. Null, with `response` set to the refusal (503,
  // 429), when there is no room.
  struct StreamSlot;
  std::shared_ptr<StreamSlot> AcquireStream(const HttpIdentity& who, httplib::Response& response);
  // Whether a browser request's Origin (when it has one) is this server's own.
  bool SameOrigin(const httplib::Request& request) const;
  void ServeEvents(const HttpIdentity& who, int64_t job_id, int64_t from_seq,
                   httplib::Response& response);
  void ServeExport(const HttpIdentity& who, std::vector<int64_t> job_ids, const std::string& format,
                   const std::string& name, httplib::Response& response);
  void ServeArtifact(const HttpIdentity& who, int64_t job_id, const std::string& name,
                     httplib::Response& response);

  const Options options_;
  AccessControl* const access_;
  const std::string local_token_;  // http.token's content: acts as the local user
  std::unique_ptr<PrometheusMetrics> metrics_;
  RpcGateway gateway_;
  JobFeeds feeds_{&gateway_};  // after gateway_, which it uses
  HttpSessions sessions_;
  std::unique_ptr<httplib::Server> server_;
  std::thread listener_;
  std::string url_;
  std::atomic<int> open_streams_{0};
  std::atomic<bool> stopping_{false};
};

}  // namespace traind

#endif  // TRAIND_SERVER_HTTP_DASHBOARD_SERVER_H_
