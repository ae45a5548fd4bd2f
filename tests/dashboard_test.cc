// The dashboard's server side end to end: a real traind with --http, called over real HTTP the way
// a browser, curl or an attacker would (httplib's client; nothing filtered by the page).
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/paths.h"
#include "common/sha256.h"
#include "tests/daemon_fixture.h"

namespace traind {
namespace {

using trainer::v1::Job;

constexpr char kUser[] = "dashboard-user-token-0123";
constexpr char kAdmin[] = "dashboard-admin-token-012";

class DashboardTest : public DaemonTest {
 protected:
  void SetUp() override {
    http_ = "127.0.0.1:0";
    limits_.max_watchers = 2;
    const std::string tokens = "/tmp/traind-dashboard-tokens-" + std::to_string(getpid());
    WriteTokenFile(tokens, absl::StrCat(kUser, " carol user\n", kAdmin, " dave admin\n"));
    token_file_ = tokens;
    DaemonTest::SetUp();
    ASSERT_NE(daemon_->dashboard(), nullptr);
    const std::string url = daemon_->dashboard()->url();  // http://127.0.0.1:PORT
    ASSERT_TRUE(absl::SimpleAtoi(url.substr(url.rfind(':') + 1), &port_)) << url;
    auto token = ReadTextFile(state_dir_ + "/http.token");
    ASSERT_TRUE(token.ok()) << token.status();
    local_token_ = std::string(absl::StripTrailingAsciiWhitespace(*token));
  }
  void TearDown() override {
    DaemonTest::TearDown();
    std::filesystem::remove(token_file_);
  }

  httplib::Client Client() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(120, 0);
    return client;
  }
  static httplib::Headers Bearer(const std::string& token) {
    return {{"Authorization", "Bearer " + token}};
  }
  httplib::Result Post(const std::string& method, const std::string& body,
                       const httplib::Headers& headers) const {
    return Client().Post(("/api/v1/" + method).c_str(), headers, body, "application/json");
  }

  // Logs in with a fresh one-time link: the session cookie ("traind_session=...") and its CSRF
  // token.
  std::pair<std::string, std::string> LogIn() {
    const std::string link = daemon_->dashboard()->NewLoginUrl();
    auto login = Client().Get(link.substr(link.find("/login")).c_str());
    EXPECT_TRUE(login);
    EXPECT_EQ(login->status, 303);
    const std::string set_cookie = login->get_header_value("Set-Cookie");
    const std::string cookie = set_cookie.substr(0, set_cookie.find(';'));
    auto session = Client().Get("/api/v1/session", {{"Cookie", cookie}});
    EXPECT_EQ(session->status, 200);
    const std::string body = session->body;
    const size_t at = body.find("\"csrfToken\":\"") + 13;
    return {cookie, body.substr(at, body.find('"', at) - at)};
  }

  // The ids ("id: N" lines) of a job's Server-Sent Events, read until the stream's end event.
  std::vector<int64_t> ReadEventIds(int64_t job, const httplib::Headers& headers,
                                    const std::string& query, std::string* end_event) {
    std::string stream;
    auto result = Client().Get(("/api/v1/jobs/" + std::to_string(job) + "/events" + query).c_str(),
                               headers, [&](const char* data, size_t length) {
                                 stream.append(data, length);
                                 return true;
                               });
    EXPECT_TRUE(result);
    EXPECT_EQ(result->status, 200) << stream;
    EXPECT_TRUE(absl::StrContains(result->get_header_value("Content-Type"), "text/event-stream"));
    std::vector<int64_t> ids;
    for (absl::string_view line : absl::StrSplit(stream, '\n')) {
      int64_t id = 0;
      if (absl::ConsumePrefix(&line, "id: ") && absl::SimpleAtoi(line, &id)) ids.push_back(id);
    }
    const size_t end = stream.find("event: end\ndata: ");
    if (end_event != nullptr && end != std::string::npos) *end_event = stream.substr(end + 17);
    return ids;
  }

  int port_ = 0;
  std::string local_token_;
};

TEST_F(DashboardTest, APageWithoutATokenGets401AndALoginLinkWorksOnce) {
  auto page = Client().Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 401);
  EXPECT_TRUE(absl::StrContains(page->body, "<form method=\"post\" action=\"/login\">"));
  EXPECT_EQ(Client().Post("/api/v1/ListJobs", "{}", "application/json")->status, 401);
  EXPECT_EQ(Client().Get("/metrics")->status, 401);
  EXPECT_EQ(Client().Get("/api/v1/jobs/1/events")->status, 401);
  EXPECT_EQ(Client().Get("/login?token=0123456789abcdef")->status, 401);

  const std::string link = daemon_->dashboard()->NewLoginUrl();
  const std::string path = link.substr(link.find("/login"));
  auto login = Client().Get(path.c_str());
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 303);
  const std::string cookie = login->get_header_value("Set-Cookie");
  EXPECT_TRUE(absl::StrContains(cookie, "HttpOnly")) << cookie;
  EXPECT_TRUE(absl::StrContains(cookie, "SameSite=Strict")) << cookie;
  EXPECT_EQ(Client().Get(path.c_str())->status, 401) << "a login link works once";

  auto home = Client().Get("/", {{"Cookie", cookie.substr(0, cookie.find(';'))}});
  EXPECT_EQ(home->status, 200);
  EXPECT_TRUE(absl::StrContains(home->body, "/app.js"));
  EXPECT_EQ(home->get_header_value("X-Frame-Options"), "DENY");
  EXPECT_TRUE(
      absl::StrContains(home->get_header_value("Content-Security-Policy"), "default-src 'self'"));
  // The page's script and the chart library are served from traind itself.
  EXPECT_EQ(Client().Get("/uPlot.iife.min.js")->status, 200);
}

TEST_F(DashboardTest, ACookieSessionNeedsItsCsrfTokenToPost) {
  const auto [cookie, csrf] = LogIn();
  ASSERT_FALSE(csrf.empty());
  EXPECT_EQ(Post("ListJobs", "{}", {{"Cookie", cookie}})->status, 403);
  EXPECT_EQ(Post("ListJobs", "{}", {{"Cookie", cookie}, {"X-CSRF-Token", "forged"}})->status, 403);
  auto listed = Post("ListJobs", "{}", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}});
  EXPECT_EQ(listed->status, 200) << listed->body;
  EXPECT_TRUE(absl::StrContains(listed->body, "\"jobs\"")) << listed->body;

  // A page of another origin cannot use the session even with its token (it could not read it).
  EXPECT_EQ(Post("ListJobs", "{}",
                 {{"Cookie", cookie}, {"X-CSRF-Token", csrf}, {"Origin", "http://evil.example"}})
                ->status,
            403);
  auto logout = Client().Post("/logout", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}, "", "");
  EXPECT_EQ(logout->status, 204);
  EXPECT_EQ(Post("ListJobs", "{}", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}})->status, 401);
}

TEST_F(DashboardTest, TheJsonApiIsTheServiceWithItsValidation) {
  const httplib::Headers local = Bearer(local_token_);
  auto bad =
      Post("SubmitJob", R"({"spec": {"model": "mlp", "dataset": "fake", "epochs": -3}})", local);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_TRUE(absl::StrContains(bad->body, "\"code\":\"INVALID_ARGUMENT\"")) << bad->body;
  EXPECT_TRUE(absl::StrContains(bad->body, "epochs")) << bad->body;

  EXPECT_EQ(Post("SubmitJob", "{not json", local)->status, 400);
  EXPECT_EQ(Post("SubmitJob", R"({"spec": {"no_such_field": 1}})", local)->status, 400);
  EXPECT_EQ(Post("NoSuchMethod", "{}", local)->status, 404);
  EXPECT_EQ(Post("WatchJob", "{}", local)->status, 404) << "streams have their own routes";
  EXPECT_EQ(Post("GetJob", R"({"id": "999"})", local)->status, 404);
  EXPECT_EQ(Post("ListJobs", "{}", Bearer("wrong-token-0123456789"))->status, 401);
  EXPECT_EQ(Client().Get("/api/v1/jobs/abc/events", local)->status, 404);
  EXPECT_EQ(Client().Get("/api/v1/jobs/99999999999999999999/events", local)->status, 400);
  // Past --max-request-bytes: refused before any parsing.
  EXPECT_EQ(Post("SubmitJob", std::string(5 << 20, ' '), local)->status, 413);

  auto good = Post("SubmitJob",
                   R"({"spec": {"model": "mlp", "dataset": "fake", "device": "cpu",
                       "epochs": 1, "limitTrain": 256, "limitTest": 64}})",
                   local);
  ASSERT_EQ(good->status, 200) << good->body;
  EXPECT_TRUE(absl::StrContains(good->body, "\"owner\":\"local\"")) << good->body;
}

TEST_F(DashboardTest, TheEventStreamHasEveryEventOnceAndResumesAfterLastEventId) {
  const int64_t id = SubmitSmall();
  std::string end;
  const std::vector<int64_t> ids = ReadEventIds(id, Bearer(local_token_), "?from_seq=1", &end);
  const std::vector<trainer::v1::JobEvent> stored = Events(id);
  ASSERT_EQ(GetJob(id).state(), Job::SUCCEEDED);
  ASSERT_EQ(ids.size(), stored.size());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], static_cast<int64_t>(i + 1));
  EXPECT_TRUE(absl::StartsWith(end, "{\"code\":\"OK\"")) << end;

  // A reconnecting EventSource sends the last id it saw: the stream continues right after it.
  const int64_t seen = static_cast<int64_t>(ids.size()) / 2;
  const std::vector<int64_t> rest = ReadEventIds(
      id, {{"Authorization", "Bearer " + local_token_}, {"Last-Event-ID", std::to_string(seen)}},
      "", nullptr);
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(rest.front(), seen + 1);
  EXPECT_EQ(rest.size(), ids.size() - static_cast<size_t>(seen));
}

TEST_F(DashboardTest, ExportIsTheSameFileAsTrainctlExport) {
  const int64_t id = SubmitSmall();
  WaitForState(id, Job::SUCCEEDED);
  auto csv = Client().Get(("/api/v1/jobs/" + std::to_string(id) + "/export?format=csv").c_str(),
                          Bearer(local_token_));
  ASSERT_EQ(csv->status, 200) << csv->body;
  const Result cli = Trainctl({"export", std::to_string(id)});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(csv->body, cli.out);
  EXPECT_TRUE(absl::StartsWith(csv->body, "job,seq,time,kind,epoch,batch,loss,accuracy,"));
  int steps = 0, epochs = 0, finals = 0;
  for (const auto& event : Events(id)) {
    steps += event.has_step();
    epochs += event.has_epoch_summary();
    finals += event.has_final_result();
  }
  const std::vector<std::string> lines = absl::StrSplit(csv->body, '\n', absl::SkipEmpty());
  EXPECT_EQ(static_cast<int>(lines.size()), 1 + steps + epochs + finals);
  EXPECT_GT(steps, 0);

  auto jsonl = Client().Get(("/api/v1/jobs/" + std::to_string(id) + "/export?format=jsonl").c_str(),
                            Bearer(local_token_));
  ASSERT_EQ(jsonl->status, 200);
  const std::vector<std::string> rows = absl::StrSplit(jsonl->body, '\n', absl::SkipEmpty());
  EXPECT_EQ(rows.size(), lines.size() - 1);
  EXPECT_EQ(Client()
                .Get(("/api/v1/jobs/" + std::to_string(id) + "/export?format=xml").c_str(),
                     Bearer(local_token_))
                ->status,
            400);
  // The job's weights, whole and as announced, even when a Range is asked for.
  auto final_pt =
      Client().Get(("/api/v1/jobs/" + std::to_string(id) + "/artifacts/final").c_str(),
                   {{"Authorization", "Bearer " + local_token_}, {"Range", "bytes=10-"}});
  ASSERT_EQ(final_pt->status, 200) << final_pt->body;
  Sha256 hash;
  hash.Update(final_pt->body);
  EXPECT_EQ(hash.HexDigest(), final_pt->get_header_value("X-Checksum-Sha256"));
  EXPECT_EQ(std::to_string(final_pt->body.size()), final_pt->get_header_value("X-Content-Size"));
  EXPECT_EQ(Client()
                .Get(("/api/v1/jobs/" + std::to_string(id) + "/artifacts/nope").c_str(),
                     Bearer(local_token_))
                ->status,
            404);
  const Result bad = Trainctl({"export", std::to_string(id), "--format", "xml"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(bad.err, "--format: 'xml' is not one of: csv, jsonl")) << bad.err;
}

TEST_F(DashboardTest, UserTokensActOnTheirOwnJobsOnlyAndMetricsNeedAnAdmin) {
  const Result paused = Trainctl({"pause"});
  ASSERT_EQ(paused.exit_code, 0) << paused.err;
  const int64_t local_job = SubmitSmall();
  const std::string get = R"({"id": ")" + std::to_string(local_job) + R"("})";
  EXPECT_EQ(Post("GetJob", get, Bearer(kUser))->status, 403);
  EXPECT_EQ(Post("CancelJob", get, Bearer(kUser))->status, 403);
  EXPECT_EQ(
      Client()
          .Get(("/api/v1/jobs/" + std::to_string(local_job) + "/events").c_str(), Bearer(kUser))
          ->status,
      403);
  EXPECT_EQ(Post("GetJob", get, Bearer(kAdmin))->status, 200);
  EXPECT_EQ(Client().Get("/metrics", Bearer(kUser))->status, 403);
  auto metrics = Client().Get("/metrics", Bearer(kAdmin));
  ASSERT_EQ(metrics->status, 200);
  EXPECT_TRUE(absl::StrContains(metrics->body, "traind_jobs{state=\"queued\"} 1")) << metrics->body;
  EXPECT_TRUE(absl::StrContains(metrics->body, "traind_queue_paused 1")) << metrics->body;
  // A token logs a browser in as its owner.
  auto login =
      Client().Post("/login", "token=" + std::string(kUser), "application/x-www-form-urlencoded");
  EXPECT_EQ(login->status, 303);
  auto wrong = Client().Post("/login", "token=not-a-token", "application/x-www-form-urlencoded");
  EXPECT_EQ(wrong->status, 401);
  // Another site's form may not log this browser in as someone (login CSRF); nor may a URL.
  auto forged = Client().Post("/login", {{"Origin", "http://evil.example"}},
                              "token=" + std::string(kUser), "application/x-www-form-urlencoded");
  EXPECT_EQ(forged->status, 403);
  EXPECT_EQ(Client().Post(("/login?token=" + std::string(kUser)).c_str(), "", "")->status, 403);
}

TEST_F(DashboardTest, ATokensOpenEventStreamsCountAgainstItsWatcherLimit) {
  ASSERT_EQ(Trainctl({"pause"}).exit_code, 0);
  auto submitted =
      Post("SubmitJob", R"({"spec": {"model": "mlp", "dataset": "fake"}})", Bearer(kUser));
  ASSERT_EQ(submitted->status, 200) << submitted->body;
  const size_t at = submitted->body.find("\"id\":\"") + 6;
  const std::string id = submitted->body.substr(at, submitted->body.find('"', at) - at);
  const std::string path = "/api/v1/jobs/" + id + "/events";
  std::atomic<int> opened{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> streams;
  for (int i = 0; i < 2; ++i) {  // the limit (limits_.max_watchers)
    streams.emplace_back([&] {
      httplib::Client client = Client();
      bool counted = false;
      client.Get(path.c_str(), Bearer(kUser), [&](const char*, size_t) {
        if (!counted) opened += counted = true;
        return !stop;
      });
    });
  }
  while (opened < 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto third = Client().Get(path.c_str(), Bearer(kUser));
  EXPECT_EQ(third->status, 429) << third->body;
  EXPECT_TRUE(absl::StrContains(third->body, "--max-watchers-per-token")) << third->body;
  // The local user is not limited.
  EXPECT_EQ(Client()
                .Get(path.c_str(), Bearer(local_token_), [](const char*, size_t) { return false; })
                .error(),
            httplib::Error::Canceled);
  stop = true;
  StopDaemon();  // ends the two streams
  for (auto& stream : streams) stream.join();
}

TEST_F(DashboardTest, PriorityChangesAQueuedJobAndRefusesAStartedOne) {
  ASSERT_EQ(Trainctl({"pause"}).exit_code, 0);
  const int64_t first = SubmitSmall();
  const int64_t second = SubmitSmall();
  const Result raised = Trainctl({"priority", std::to_string(second), "10"});
  ASSERT_EQ(raised.exit_code, 0) << raised.err;
  EXPECT_EQ(raised.out, "job " + std::to_string(second) + ": priority 10\n");
  EXPECT_EQ(GetJob(second).priority(), 10);
  // The raised job, though younger, runs first.
  ASSERT_EQ(Trainctl({"resume"}).exit_code, 0);
  const Job done = WaitForState(second, Job::SUCCEEDED);
  const Job other = WaitForState(first, Job::SUCCEEDED);
  EXPECT_LE(absl::FromUnixSeconds(done.start_time().seconds()),
            absl::FromUnixSeconds(other.start_time().seconds()));
  const Result late = Trainctl({"priority", std::to_string(first), "3"});
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_TRUE(absl::StrContains(late.err, "only a queued job's priority can change")) << late.err;
  EXPECT_EQ(Trainctl({"priority", "999", "3"}).exit_code, 2);
  EXPECT_EQ(Trainctl({"priority", std::to_string(first)}).exit_code, 2);
}

TEST_F(DashboardTest, StoppingTheDaemonEndsOpenEventStreams) {
  ASSERT_EQ(Trainctl({"pause"}).exit_code, 0);
  const int64_t id = SubmitSmall();  // stays queued: its stream would wait forever
  std::atomic<bool> started{false};
  std::thread reader([&] {
    httplib::Client client = Client();
    client.Get(("/api/v1/jobs/" + std::to_string(id) + "/events").c_str(), Bearer(local_token_),
               [&](const char*, size_t) {
                 started = true;
                 return true;
               });
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  StopDaemon();  // returns only when every request thread ended
  reader.join();
}

TEST(DashboardStartTest, PlainHttpListensOnlyOnLoopback) {
  const std::string dir = "/tmp/traind-dashboard-start-" + std::to_string(getpid());
  DaemonOptions options;
  options.state_dir = dir;
  options.worker_path = TRAIND_WORKER_PATH;
  options.http = "0.0.0.0:0";
  auto daemon = Daemon::Start(options);
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(daemon.status().message(), "only on loopback")) << daemon.status();
  options.http = "127.0.0.1";
  daemon = Daemon::Start(options);
  ASSERT_FALSE(daemon.ok());
  EXPECT_TRUE(absl::StrContains(daemon.status().message(), "is not HOST:PORT")) << daemon.status();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace traind

namespace traind {
namespace {

// With the TLS certificate of the gRPC listeners the dashboard is HTTPS, may listen beyond
// loopback, and its session cookie is marked Secure.
TEST(DashboardTlsTest, HttpsListensBeyondLoopbackAndMarksTheCookieSecure) {
  const std::string dir = "/tmp/traind-dashboard-tls-" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string make_cert =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj "
      "/CN=localhost -addext subjectAltName=IP:127.0.0.1 -keyout " +
      dir + "/key.pem -out " + dir + "/cert.pem >/dev/null 2>&1";
  if (std::system(make_cert.c_str()) != 0) GTEST_SKIP() << "openssl cannot make a certificate";
  DaemonOptions options;
  options.state_dir = dir + "/state";
  options.worker_path = TRAIND_WORKER_PATH;
  options.http = "0.0.0.0:0";
  options.tls_cert = dir + "/cert.pem";
  options.tls_key = dir + "/key.pem";
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string url = (*daemon)->dashboard()->url();
  ASSERT_TRUE(absl::StartsWith(url, "https://0.0.0.0:")) << url;
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(url.substr(url.rfind(':') + 1), &port));

  httplib::SSLClient client("127.0.0.1", port);
  client.set_ca_cert_path((dir + "/cert.pem").c_str());
  client.enable_server_certificate_verification(true);
  auto page = client.Get("/");
  ASSERT_TRUE(page) << httplib::to_string(page.error());
  EXPECT_EQ(page->status, 401);
  const std::string link = (*daemon)->dashboard()->NewLoginUrl();
  auto login = client.Get(link.substr(link.find("/login")).c_str());
  ASSERT_TRUE(login);
  EXPECT_EQ(login->status, 303);
  EXPECT_TRUE(absl::StrContains(login->get_header_value("Set-Cookie"), "; Secure"))
      << login->get_header_value("Set-Cookie");
  // Plain HTTP gets no page from a TLS port.
  httplib::Client plain("127.0.0.1", port);
  plain.set_read_timeout(5, 0);
  auto refused = plain.Get("/");
  EXPECT_TRUE(!refused || refused->status != 200);
  daemon->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace traind
