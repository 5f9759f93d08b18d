// Small text helpers for checking what programs print.
#pragma once

#include <algorithm>
#include <cctype>
#include <string>

namespace rrs::test {

// `s` in lower case (ASCII), to look for a word whatever its case.
inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace rrs::test
