// SPDX-License-Identifier: BSD-3-Clause
// What libnaa does when it is loaded, before the program's main or from dlopen: its
// dependencies' constructors have run by then, the program has installed no handler yet.
#include "diag/signal_defaults.hpp"

namespace naa::api {
namespace {

__attribute__((constructor)) void on_load() {
  diag::restore_signal_defaults();
}

}  // namespace
}  // namespace naa::api
