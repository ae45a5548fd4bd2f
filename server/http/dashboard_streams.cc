// The dashboard's streams: a job's events as server-sent events (resuming after Last-Event-ID),
// the export of jobs' metrics as CSV or JSON lines, and an artifact's download. Each refuses (no
// such job, someone else's) with a real HTTP status before its stream starts.
#include <fcntl.h>
#include <httplib.h>
#include <unistd.h>

#include <cstring>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/artifact_names.h"
#include "common/grpc_status.h"
#include "common/metric_rows.h"
#include "common/status_macros.h"
#include "common/write_all.h"
#include "server/http/dashboard_server.h"
#include "server/http/http_replies.h"
#include "server/http/job_feeds.h"

namespace traind {
namespace {

// A quiet stream writes an SSE comment this often: the write is how a closed tab is noticed.
constexpr absl::Duration kKeepAlive = absl::Seconds(10);
// Events read per ListJobEvents call of an export.
constexpr int kExportPage = 2000;

}  // namespace

void DashboardServer::ServeEvents(const HttpIdentity& who, int64_t job_id, int64_t from_seq,
                                  httplib::Response& response) {
  // Refusals (no such job, someone else's) as real HTTP statuses, before the stream starts.
  trainer::v1::GetJobRequest get;
  get.set_id(job_id);
  trainer::v1::Job job;
  const grpc::Status found = gateway_.stub().GetJob(gateway_.ContextFor(who).get(), get, &job);
  if (!found.ok()) return SendError(response, found);
  // Each tab holds a thread: counted like a gRPC watch (--max-watchers-per-token), though the
  // tabs on one job share the daemon's reading of it.
  std::shared_ptr<StreamSlot> slot = AcquireStream(who, response);
  if (slot == nullptr) return;
  std::shared_ptr<JobFeed> feed = feeds_.Attach(job_id);
  // Where this tab is in the job's events: index i is seq i + 1.
  auto next = std::make_shared<size_t>(static_cast<size_t>(std::max<int64_t>(from_seq, 1) - 1));
  auto quiet_since = std::make_shared<absl::Time>(absl::Now());
  response.set_header("X-Accel-Buffering", "no");  // proxies: do not hold events back
  response.status = 200;  // a whole stream even if a Range was asked for (cpp-httplib: 206)
  response.set_chunked_content_provider(
      "text/event-stream",
      [this, feed, slot, next, quiet_since](size_t, httplib::DataSink& sink) {
        std::string chunk;
        switch (feed->Take(*next, &chunk, absl::Seconds(1))) {
          case JobFeed::kChunk:
            ++*next;
            *quiet_since = absl::Now();
            return sink.write(chunk.data(), chunk.size());
          case JobFeed::kEnd:
            // The job ended (OK) or the watch was refused: say so, so the page stops
            // reconnecting.
            sink.write(chunk.data(), chunk.size());
            sink.done();
            return true;
          case JobFeed::kTimeout:
            if (stopping_) return false;
            if (absl::Now() - *quiet_since >= kKeepAlive) {
              *quiet_since = absl::Now();
              return sink.write(": keep-alive\n\n", 14);
            }
            return true;
        }
        return false;
      },
      [feed, slot](bool) {});  // both are released with the last copy of this lambda
}

void DashboardServer::ServeExport(const HttpIdentity& who, std::vector<int64_t> job_ids,
                                  const std::string& format_name, const std::string& name,
                                  httplib::Response& response) {
  const absl::StatusOr<RowFormat> format = ParseRowFormat("format", format_name);
  if (!format.ok()) {
    return SendError(response, format.status());
  }
  // The first page decides the status (someone else's job: 403), then the rest streams.
  struct Cursor {
    std::vector<int64_t> ids;
    size_t index = 0;
    int64_t from_seq = 1;
    std::string pending;
  };
  std::shared_ptr<StreamSlot> slot = AcquireStream(who, response);
  if (slot == nullptr) return;
  auto cursor = std::make_shared<Cursor>();
  cursor->ids = std::move(job_ids);
  cursor->pending = MetricRowsHeader(*format);
  auto next_page = [this, who, cursor, format = *format]() -> grpc::Status {
    trainer::v1::ListJobEventsRequest request;
    request.set_id(cursor->ids[cursor->index]);
    request.set_from_seq(cursor->from_seq);
    request.set_page_size(kExportPage);
    trainer::v1::ListJobEventsResponse page;
    grpc::Status status =
        gateway_.stub().ListJobEvents(gateway_.ContextFor(who).get(), request, &page);
    if (!status.ok()) return status;
    for (const auto& event : page.events()) {
      AppendMetricRow(request.id(), event, format, &cursor->pending);
    }
    cursor->from_seq = page.next_seq();
    if (cursor->from_seq == 0) {
      ++cursor->index;
      cursor->from_seq = 1;
    }
    return grpc::Status::OK;
  };
  if (!cursor->ids.empty()) {
    const grpc::Status first = next_page();
    if (!first.ok()) return SendError(response, first);
  }
  response.set_header("Content-Disposition",
                      absl::StrCat("attachment; filename=\"", name,
                                   *format == RowFormat::kCsv ? ".csv" : ".jsonl", "\""));
  response.status = 200;  // a whole stream even if a Range was asked for (cpp-httplib: 206)
  response.set_chunked_content_provider(
      *format == RowFormat::kCsv ? "text/csv; charset=utf-8" : "application/x-ndjson",
      [cursor, next_page, slot](size_t, httplib::DataSink& sink) {
        if (!cursor->pending.empty()) {
          const bool written = sink.write(cursor->pending.data(), cursor->pending.size());
          cursor->pending.clear();
          return written;
        }
        if (cursor->index >= cursor->ids.size()) {
          sink.done();
          return true;
        }
        // A job deleted meanwhile ends the transfer early, visibly (no final chunk).
        return next_page().ok();
      });
}

void DashboardServer::ServeArtifact(const HttpIdentity& who, int64_t job_id,
                                    const std::string& name, httplib::Response& response) {
  struct Download {
    std::unique_ptr<grpc::ClientContext> context;
    std::unique_ptr<grpc::ClientReader<trainer::v1::DownloadArtifactResponse>> reader;
    std::string pending;
  };
  std::shared_ptr<StreamSlot> slot = AcquireStream(who, response);
  if (slot == nullptr) return;
  auto download = std::make_shared<Download>();
  download->context = gateway_.ContextFor(who);
  trainer::v1::DownloadArtifactRequest request;
  request.set_id(job_id);
  request.set_name(name);
  download->reader = gateway_.stub().DownloadArtifact(download->context.get(), request);
  trainer::v1::DownloadArtifactResponse first;
  if (!download->reader->Read(&first) || !first.has_artifact()) {
    const grpc::Status status = download->reader->Finish();
    if (status.ok())
      return SendError(response, absl::InternalError("the artifact stream was empty"));
    return SendError(response, status);
  }
  const trainer::v1::Artifact artifact = first.artifact();
  response.set_header("Content-Disposition", absl::StrCat("attachment; filename=\"",
                                                          DefaultDownloadName(job_id, name), "\""));
  response.set_header("X-Checksum-Sha256", artifact.sha256());
  // Chunked, without a length: with one, cpp-httplib would answer Range requests from this
  // provider, which streams from the first byte only. The size and digest are in headers for the
  // client.
  response.set_header("X-Content-Size", std::to_string(artifact.size_bytes()));
  response.status = 200;  // a whole stream even if a Range was asked for (cpp-httplib: 206)
  response.set_chunked_content_provider(
      "application/octet-stream",
      [download, slot](size_t, httplib::DataSink& sink) {
        trainer::v1::DownloadArtifactResponse part;
        if (!download->reader->Read(&part)) {
          // The end: complete only if the daemon says so; else cut short, visibly (no last chunk).
          if (!download->reader->Finish().ok()) return false;
          sink.done();
          return true;
        }
        return sink.write(part.chunk().data(), part.chunk().size());
      },
      [download](bool success) {
        if (success) return;  // Finish() was called
        download->context->TryCancel();
        (void)download->reader->Finish();
      });
}

}  // namespace traind
