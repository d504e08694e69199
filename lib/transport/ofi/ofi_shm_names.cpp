// SPDX-License-Identifier: BSD-3-Clause
#include "transport/ofi/ofi_shm_names.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "diag/error.hpp"
#include "diag/log.hpp"

namespace naa::transport::ofi_detail {

std::string shm_service(uint16_t port) {
  return "naa-" + std::to_string(getuid()) + "-" + std::to_string(port);
}

NameState shm_name_state(const std::string &name) {
  int fd = shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return NameState::Free;
  NameState state = flock(fd, LOCK_EX | LOCK_NB) == 0 ? NameState::Stale : NameState::Live;
  ::close(fd);
  return state;
}

void give_unique_shm_source(fi_info *info) {
  std::random_device random;
  const uint64_t part = (static_cast<uint64_t>(random()) << 32) | random();
  char source[64];
  snprintf(source, sizeof source, "fi_shm://%d-%016" PRIx64, static_cast<int>(getpid()), part);
  char *copy = strdup(source);
  if (copy == nullptr) throw Error(NAA_ERR_NO_RESOURCES, "out of memory");
  free(info->src_addr);
  info->src_addr = copy;
  info->src_addrlen = strlen(source) + 1;
}

int hold_shm_name(const std::string &name) {
  int fd = shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    fd = -1;
  }
  if (fd < 0) NAA_LOG_WARN("cannot lock shm region %s: clients may take it for a dead server's", name.c_str());
  return fd;
}

}  // namespace naa::transport::ofi_detail
