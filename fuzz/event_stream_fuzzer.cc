// Fuzz target: the bytes a worker writes on its event pipe (length-delimited JobEvents), as the
// daemon reads them (server/worker_process.cc, server/scheduler.cc): decoded by DelimitedReader in
// whatever chunks the pipe delivers, then folded into the job's row (server/job_fold.cc) and
// serialized as the store does. Checks, besides "no crash, leak or undefined behaviour":
//   - how the bytes are split into chunks changes nothing (same events, same error, same rest);
//   - a clean stream repeated past the reader's compaction threshold decodes to the same events
//     repeated.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "google/protobuf/stubs/logging.h"
#include "server/job_fold.h"
#include "supervise/delimited_reader.h"
#include "trainer/v1/trainer.pb.h"

namespace {

struct Decoded {
  std::vector<std::string> events;  // each event re-serialized, to compare runs
  bool data_loss = false;
  size_t pending = 0;
};

void Fail(const char* what) {
  std::fprintf(stderr, "event_stream_fuzzer: %s\n", what);
  std::abort();
}

// Feeds `bytes` in chunks of the sizes `chunk` yields, reading every whole event after each one,
// the way WorkerProcess::ReadEvent alternates read() and Next().
template <typename ChunkSize>
Decoded Decode(const std::string& bytes, ChunkSize chunk, trainer::v1::Job* job) {
  Decoded out;
  traind::DelimitedReader reader;
  size_t pos = 0;
  while (pos < bytes.size() && !out.data_loss) {
    const size_t n = std::min(bytes.size() - pos, chunk());
    reader.Append(bytes.data() + pos, n);
    pos += n;
    while (true) {
      trainer::v1::JobEvent event;
      bool got_one = false;
      if (!reader.Next(&event, &got_one).ok()) {
        out.data_loss = true;
        break;
      }
      if (!got_one) break;
      out.events.push_back(event.SerializeAsString());
      if (job != nullptr) {
        // The store assigns seq and folds every event, the daemon's state changes included.
        event.set_seq(job->last_seq() + 1);
        traind::ApplyEvent(event, job);
      }
    }
  }
  out.pending = reader.pending_bytes();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Strings that are not UTF-8 make the parse fail (DATA_LOSS) and protobuf log a line each time.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);

  // All at once, folding the events into a job as Store::AppendEvent does.
  trainer::v1::Job job;
  const Decoded whole = Decode(
      bytes, [&] { return bytes.size(); }, &job);
  (void)job.SerializeAsString();
  (void)traind::IsTerminal(job.state());

  // In small chunks whose sizes follow from the input: a pipe splits writes anywhere.
  uint32_t state = static_cast<uint32_t>(size) * 2654435761u + 1;
  const Decoded chunked = Decode(
      bytes,
      [&] {
        state = state * 1103515245u + 12345u;
        return static_cast<size_t>(1 + (state >> 16) % 17);
      },
      nullptr);
  if (whole.events != chunked.events) Fail("chunking changed the decoded events");
  if (whole.data_loss != chunked.data_loss) Fail("chunking changed whether the stream is corrupt");
  if (!whole.data_loss && whole.pending != chunked.pending) Fail("chunking changed the rest");

  // A clean stream, repeated until the reader compacts its buffer (past 64 KiB consumed).
  if (!whole.data_loss && whole.pending == 0 && !whole.events.empty() && size >= 8) {
    const size_t copies = (1 << 16) / size + 2;
    std::string repeated;
    repeated.reserve(copies * size);
    for (size_t i = 0; i < copies; ++i) repeated += bytes;
    const Decoded again = Decode(
        repeated, [] { return size_t{4096}; }, nullptr);
    if (again.data_loss || again.pending != 0 ||
        again.events.size() != copies * whole.events.size()) {
      Fail("a repeated clean stream did not decode to the events repeated");
    }
    for (size_t i = 0; i < again.events.size(); ++i) {
      if (again.events[i] != whole.events[i % whole.events.size()]) {
        Fail("a repeated clean stream decoded to other events");
      }
    }
  }
  return 0;
}
