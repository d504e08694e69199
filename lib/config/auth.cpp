// SPDX-License-Identifier: BSD-3-Clause
#include "config/auth.hpp"

#include <cstdlib>

#include "config/small_file.h"
#include "error.hpp"

namespace naa::config::auth {
namespace {

const std::string kMagic = "NAA1";
// The most a key file may hold: its first line is the key, at most kMaxKeyLength bytes.
constexpr size_t kMaxKeyFileBytes = 64 * 1024;

}  // namespace

std::string checked_key(std::string key, const std::string &source, naa_error_t code) {
  if (key.size() > kMaxKeyLength)
    throw Error(code, source + ": the key has " + std::to_string(key.size()) +
                          " bytes, more than the " + std::to_string(kMaxKeyLength) +
                          " a connection request can carry");
  return key;
}

std::string key_from_file(const std::string &path) {
  char why[512];
  size_t length = 0;
  char *text = naa_read_small_file(path.c_str(), kMaxKeyFileBytes, &length, why, sizeof why);
  if (text == nullptr)
    throw Error(NAA_ERR_CONFIG, std::string("cannot read the authentication key file: ") + why);
  std::string key(text, length);
  std::free(text);
  key = key.substr(0, key.find('\n'));  // the first line
  if (!key.empty() && key.back() == '\r') key.pop_back();
  if (key.empty())
    throw Error(NAA_ERR_CONFIG, "the authentication key file '" + path + "' is empty");
  return checked_key(key, "key file " + path);
}

std::string encode(const std::string &key) {
  return kMagic + static_cast<char>(key.size()) + key;
}

size_t encoded_length(const std::string &private_data) {
  if (private_data.compare(0, kMagic.size(), kMagic) != 0 || private_data.size() <= kMagic.size())
    return 0;
  const size_t length = kMagic.size() + 1 + static_cast<unsigned char>(private_data[kMagic.size()]);
  return length <= private_data.size() ? length : 0;
}

namespace {
constexpr char kClientIdentity[] = {'N', 'A', 'A', 'c'};
constexpr size_t kPrivateDataRoom = 56;  // rdma_cm's REQ (PS_TCP)
}  // namespace

std::string connect_data(const std::string &key) {
  std::string data = key.empty() ? std::string() : encode(key);
  if (data.size() + sizeof kClientIdentity <= kPrivateDataRoom)
    data.append(kClientIdentity, sizeof kClientIdentity);
  return data;
}

bool from_libnaa(const std::string &private_data) {
  return private_data.compare(encoded_length(private_data), sizeof kClientIdentity, kClientIdentity,
                              sizeof kClientIdentity) == 0;
}

size_t connect_data_length(const std::string &private_data) {
  return encoded_length(private_data) + (from_libnaa(private_data) ? sizeof kClientIdentity : 0);
}

bool matches(const std::string &private_data, const std::string &key) {
  const std::string want = encode(key);
  if (private_data.size() < want.size()) return false;
  // Padding beyond the key (InfiniBand's zeros) is allowed; the length byte fixes the key's end.
  unsigned char diff = 0;
  for (size_t i = 0; i < want.size(); ++i)
    diff |= static_cast<unsigned char>(private_data[i] ^ want[i]);
  return diff == 0;
}

}  // namespace naa::config::auth
