// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/energy_report.hpp"

#include <algorithm>
#include <cstring>

#include "protocol/big_endian.hpp"

namespace naa::energy_report {
namespace {

using wire::get_be;
using wire::put_be;

bool tagged(const uint8_t *after, size_t len, size_t need) {
  return after != nullptr && len >= need && std::memcmp(after, kTag, kTagSize) == 0;
}

}  // namespace

void encode_ask(const Ask &ask, uint8_t *out) {
  std::memcpy(out, kTag, kTagSize);
  put_be(out + kTagSize, ask.address, 8);
  put_be(out + kTagSize + 8, ask.rkey, 4);
}

bool find_ask(const uint8_t *after, size_t len, Ask *ask) {
  if (!tagged(after, len, kAskSize)) return false;
  ask->address = get_be(after + kTagSize, 8);
  ask->rkey = static_cast<uint32_t>(get_be(after + kTagSize + 8, 4));
  return true;
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

void encode_record(const Record &r, uint8_t *out) {
  put_be(out, r.uj, 8);
  put_be(out + 8, r.reply, 4);
  out[12] = r.measured ? kMeasured : 0;
  out[13] = out[14] = out[15] = 0;
}

Record decode_record(const uint8_t *in) {
  return Record{get_be(in, 8), static_cast<uint32_t>(get_be(in + 8, 4)), (in[12] & kMeasured) != 0};
}

}  // namespace naa::energy_report
