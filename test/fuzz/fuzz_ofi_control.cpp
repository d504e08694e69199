// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the decoder of the RDM connection's control messages (connection request,
// accept, reject, goodbye) on arbitrary bytes, as any local process can send them to a
// listener, and what an shm listener then believes of a request's name and pid
// (shm/request.hpp: it looks at /proc and /dev/shm, and removes nothing). Besides memory
// errors (ASan/UBSan), it checks that whatever the decoder accepts re-encodes to the same
// bytes, and that no name is taken for a pid it does not carry.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "transport/ofi/ofi_control.hpp"
#include "transport/ofi/shm/request.hpp"

using namespace naa::transport::ofi::control;
namespace shm = naa::transport::ofi::shm;

namespace {

void believe(const std::string &name, uint32_t pid) {
  std::string why;
  const pid_t named = shm::name_pid(name);
  if (named < 0) std::abort();
  if (shm::request_plausible(name, pid, &why)) {
    if (static_cast<uint32_t>(named) != pid || !why.empty()) std::abort();
  } else if (why.empty()) {
    std::abort();  // a refusal always says why
  }
  if (shm::region_of(name, static_cast<pid_t>(pid)) && static_cast<uint32_t>(named) != pid)
    std::abort();
  const std::string object = shm::region_object(name);
  if (!object.empty() && object[0] != '/') std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The bytes as a pid and a name, as a request's fields may be anything.
  if (size >= 4) {
    uint32_t pid;
    std::memcpy(&pid, data, sizeof pid);
    believe(std::string(reinterpret_cast<const char *>(data + 4), size - 4), pid);
  }
  Message m;
  std::string why;
  if (!decode(data, size, &m, &why)) {
    if (why.empty()) std::abort();  // a refusal always says why
    return 0;
  }
  uint8_t out[kMaxMessage];
  size_t len = encode(m, out, sizeof out);
  if (len != size || std::memcmp(out, data, size) != 0) std::abort();
  (void)type_name(m.type);
  if (m.type == Type::Request) believe(m.name, m.pid);
  return 0;
}
