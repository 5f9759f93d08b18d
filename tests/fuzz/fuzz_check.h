// What the fuzzers check besides what ASan and UBSan catch. A failed check
// prints what broke and aborts, which libFuzzer reports as a crash and saves
// the input for. Unlike assert(), it stays on in every build type.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace rrs::fuzz {

[[noreturn]] inline void check_failed(const char* file, int line, const char* cond,
                                      const std::string& detail) {
  std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n  %s\n", file, line, cond, detail.c_str());
  std::abort();
}

}  // namespace rrs::fuzz

// `detail` (a std::string expression) is evaluated only when the check fails.
#define FUZZ_CHECK(cond, detail)                                                   \
  do {                                                                             \
    if (!(cond)) ::rrs::fuzz::check_failed(__FILE__, __LINE__, #cond, (detail));  \
  } while (0)
