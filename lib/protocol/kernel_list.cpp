// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/kernel_list.hpp"

#include <algorithm>
#include <cstring>

namespace naa::protocol::kernel_list {
namespace {

constexpr uint8_t kMaxCode = 127;

bool tagged(const uint8_t *at, size_t len, size_t need) {
  return at != nullptr && len >= need && std::memcmp(at, kTag, kTagSize) == 0;
}

}  // namespace

void encode_ask(uint8_t from, uint8_t *out) {
  std::memcpy(out, kTag, kTagSize);
  out[kTagSize] = from;
}

bool find_ask(const uint8_t *at, size_t len, uint8_t *from) {
  if (!tagged(at, len, kAskSize)) return false;
  *from = at[kTagSize];
  return true;
}

std::string encode_answer(const std::vector<Kernel> &all, uint8_t from, size_t room) {
  std::string entries;
  uint8_t n = 0, next = 0;
  for (const Kernel &k : all) {
    if (k.function_code < from || k.function_code > kMaxCode) continue;
    const size_t name = std::min(k.name.size(), kMaxName);
    if (kAnswerHeaderSize + entries.size() + 3 + name > room) {
      next = k.function_code;
      break;
    }
    entries += static_cast<char>(k.function_code);
    entries += static_cast<char>(k.kind);
    entries += static_cast<char>(name);
    entries.append(k.name, 0, name);
    ++n;
  }
  // A page without a kernel and with more to come would make the asker go round forever.
  if (kAnswerHeaderSize > room || (n == 0 && next != 0)) return "";
  std::string out(kTag, kTagSize);
  out += static_cast<char>(n);
  out += static_cast<char>(next);
  return out + entries;
}

bool find_answer(const uint8_t *at, size_t len, uint8_t from, Page *page) {
  if (!tagged(at, len, kAnswerHeaderSize)) return false;
  Page got;
  const uint8_t n = at[kTagSize];
  got.next = at[kTagSize + 1];
  size_t pos = kAnswerHeaderSize;
  unsigned lowest = std::max<unsigned>(from, 1);
  for (uint8_t i = 0; i < n; ++i) {
    if (len - pos < 3) return false;
    Kernel k;
    k.function_code = at[pos];
    k.kind = at[pos + 1];
    const uint8_t name = at[pos + 2];
    pos += 3;
    if (k.function_code < lowest || k.function_code > kMaxCode || k.kind > kPlugin ||
        name > kMaxName || len - pos < name)
      return false;
    k.name.assign(reinterpret_cast<const char *>(at) + pos, name);
    pos += name;
    // Printable ASCII only: the names go onto terminals and into logs.
    for (char &c : k.name)
      if (c < 0x20 || c > 0x7e) c = '?';
    lowest = k.function_code + 1u;
    got.kernels.push_back(std::move(k));
  }
  if (got.next != 0 && (n == 0 || got.next < lowest || got.next > kMaxCode)) return false;
  *page = std::move(got);
  return true;
}

}  // namespace naa::protocol::kernel_list
