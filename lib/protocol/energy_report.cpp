// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/energy_report.hpp"

#include <algorithm>
#include <cstring>

namespace naa::protocol::energy_report {
namespace {

constexpr uint32_t kMantissaBits = 19, kMaxMantissa = (1u << kMantissaBits) - 1, kMaxExponent = 31;
constexpr uint32_t kUnknown = 0xffffff;

bool tagged(const uint8_t *after, size_t len, size_t need) {
  return after != nullptr && len >= need && std::memcmp(after, kTag, kTagSize) == 0;
}

}  // namespace

bool find_ask(const uint8_t *after, size_t len) {
  return tagged(after, len, kAskSize);
}

std::string encode_answer(const std::string &source) {
  const size_t n = std::min(source.size(), kMaxSourceName);
  std::string out(kTag, kTagSize);
  out += static_cast<char>(n);
  out.append(source, 0, n);
  return out;
}

bool find_answer(const uint8_t *after, size_t len, std::string *source) {
  if (!tagged(after, len, kTagSize + 1) || after[kTagSize] > kMaxSourceName ||
      len - kTagSize - 1 < after[kTagSize])
    return false;
  source->assign(reinterpret_cast<const char *>(after) + kTagSize + 1, after[kTagSize]);
  // Printable ASCII only: the name goes into log lines and statistics.
  for (char &c : *source)
    if (c < 0x20 || c > 0x7e) c = '?';
  return true;
}

uint32_t in_immediate(std::optional<uint64_t> uj) {
  uint32_t e = kUnknown;
  if (uj) {
    uint32_t exponent = 0;
    uint64_t mantissa = *uj;
    while (mantissa > kMaxMantissa && exponent < kMaxExponent) mantissa >>= 1, ++exponent;
    // Above the range, and at the code that says unknown: the largest figure there is.
    mantissa =
        std::min<uint64_t>(mantissa, exponent == kMaxExponent ? kMaxMantissa - 1 : kMaxMantissa);
    e = exponent << kMantissaBits | static_cast<uint32_t>(mantissa);
  }
  return (e >> 8) << 16 | (e & 0xff);
}

std::optional<uint64_t> from_immediate(uint32_t r) {
  const uint32_t e = (r >> 16) << 8 | (r & 0xff);
  if (e == kUnknown) return std::nullopt;
  return uint64_t{e & kMaxMantissa} << (e >> kMantissaBits);
}

}  // namespace naa::protocol::energy_report
