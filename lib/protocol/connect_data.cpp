// SPDX-License-Identifier: BSD-3-Clause
#include "protocol/connect_data.hpp"

#include <cstring>

namespace naa::protocol::mrsp {

std::string in_connect_data(const uint8_t *msg, size_t len, size_t room) {
  if (len == 0 || room < kConnectTagSize || len > room - kConnectTagSize) return {};
  std::string out(kConnectTag, kConnectTagSize);
  out.append(reinterpret_cast<const char *>(msg), len);
  return out;
}

const uint8_t *from_connect_data(const std::string &data, size_t offset, size_t *len) {
  if (offset > data.size() || data.size() - offset <= kConnectTagSize ||
      std::memcmp(data.data() + offset, kConnectTag, kConnectTagSize) != 0)
    return nullptr;
  *len = data.size() - offset - kConnectTagSize;
  return reinterpret_cast<const uint8_t *>(data.data()) + offset + kConnectTagSize;
}

}  // namespace naa::protocol::mrsp
