// SPDX-License-Identifier: BSD-3-Clause
// For the tests that link a transport's convenience library to read its internals: the
// registry's rows of that transport use the linked code rather than its module
// (registry.hpp, use_linked_entry), so that the state a test reads is that of the connections
// it opens. Built in (--enable-builtin-transports), the rows use the same code already.
#pragma once

#include "transport/registry.hpp"

namespace naa::transport {
const Entry *ofi_entry();
const Entry *shm_entry();
namespace verbs {
const Entry *verbs_entry();
}
}  // namespace naa::transport

namespace naa::test {

inline void use_linked_ofi() {
  transport::use_linked_entry("ofi", transport::ofi_entry);
  transport::use_linked_entry("ofi+shm", transport::shm_entry);
}

inline void use_linked_verbs() {
  transport::use_linked_entry("verbs", transport::verbs::verbs_entry);
}

}  // namespace naa::test
