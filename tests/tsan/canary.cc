// Proves the ThreadSanitizer build can be believed (deploy/tsan.sh): two threads that take one
// absl::Mutex in turn must draw no report (so the Abseil found through the RPATH is instrumented
// and the suppressions hold: with Debian's Abseil this reports a race), and with `race` as argument
// they instead both write one counter without it, which must be reported.
#include <atomic>
#include <cstring>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace {

absl::Mutex mu;
int guarded = 0;  // under mu
int unguarded = 0;

}  // namespace

int main(int argc, char** argv) {
  const bool race = argc > 1 && std::strcmp(argv[1], "race") == 0;
  std::atomic<bool> go{false};
  auto work = [race, &go] {
    while (!go.load()) {
    }
    // Racing, both threads at once: each thread's writes are ordered after main's store to `go`,
    // not after the other thread's.
    // Nothing after it: a long run of other events would push the first thread's write out of
    // TSan's history, and a race whose other stack cannot be restored is not reported.
    if (race) {
      for (int i = 0; i < 1000; ++i) ++unguarded;
      return;
    }
    for (int i = 0; i < 100000; ++i) {
      absl::MutexLock lock(&mu);
      ++guarded;
    }
  };
  std::thread a(work), b(work);
  go.store(true);
  a.join();
  b.join();
  absl::MutexLock lock(&mu);
  return race || guarded == 200000 ? 0 : 1;
}
