// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target: the decoder of the RDM connection's control messages (connection request,
// accept, reject, goodbye) on arbitrary bytes, as any local process can send them to a
// listener. Besides memory errors (ASan/UBSan), it checks that whatever the decoder accepts
// re-encodes to the same bytes.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "transport/ofi_control.hpp"

using namespace naa::transport::control;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
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
  return 0;
}
