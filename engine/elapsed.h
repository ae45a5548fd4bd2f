// Elapsed time on the steady clock, for a job's timings (start-up phases, epochs, the training
// time a resumed job counts on from).
#ifndef TRAIND_ENGINE_ELAPSED_H_
#define TRAIND_ENGINE_ELAPSED_H_

#include <chrono>

namespace traind {

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Now moved back by `seconds`: a clock that counts on from time spent before.
inline std::chrono::steady_clock::time_point ClockMinus(double seconds) {
  return std::chrono::steady_clock::now() -
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(seconds));
}

}  // namespace traind

#endif  // TRAIND_ENGINE_ELAPSED_H_
