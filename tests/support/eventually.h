// Polling for a condition with a deadline: every wait in a test is bounded.
#pragma once

#include <chrono>
#include <thread>

namespace rrs::test {

// Polls `done` every `every` until it holds (true) or `within` passes (false).
template <class Pred>
bool eventually(Pred done, std::chrono::milliseconds within,
                std::chrono::milliseconds every = std::chrono::milliseconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
  return true;
}

}  // namespace rrs::test
