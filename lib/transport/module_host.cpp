// SPDX-License-Identifier: BSD-3-Clause
// Linked into each transport module (module.hpp): the functions of libnaa's core that the
// transports call, each forwarding to the loading program's own through the ModuleHost it
// handed to bind_host. A module links no part of the core itself, so the log, its handler and
// the descriptor gate stay one per process whichever program loads the module.
#include <cstdarg>
#include <cstdio>

#include "transport/descriptor_gate.hpp"
#include "transport/host.hpp"
#include "transport/module.hpp"
#include "transport/module_host.hpp"
#include "transport/transport.hpp"

namespace naa {
namespace transport {
namespace {

const ModuleHost *host = nullptr;

}  // namespace

// A process with two cores (a test that links the core beside libnaa.so) loads the module once:
// it serves the first core that bound it.
void bind_host(const ModuleHost *h) {
  if (host == nullptr) host = h;
}

std::mutex &descriptor_gate() {
  return host->descriptor_gate();
}
bool descriptors_spare(size_t count) {
  return host->descriptors_spare(count);
}
bool accepts_spare() {
  return host->accepts_spare();
}
void DescriptorClaim::hold(bool waiting) {
  host->claim_hold(this, waiting);
}

sockaddr_in resolve_ipv4(const std::string &name, uint16_t port, naa_error_t code) {
  return host->resolve_ipv4(name, port, code);
}
void require_resolvable(const std::string &name) {
  host->require_resolvable(name);
}
in_addr local_ipv4(const std::string &local_ip) {
  return host->local_ipv4(local_ip);
}
bool is_local_host(const std::string &name) {
  return host->is_local_host(name);
}
std::string private_data_text(const void *data, size_t length) {
  return host->private_data_text(data, length);
}

}  // namespace transport

namespace diag::log {

Level threshold() {
  return transport::host->log_threshold();
}

// Formatted here, as the host's write takes no va_list; lines are as long as the host's.
void write(Level level, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  transport::host->log_write(level, "%s", line);
}

}  // namespace diag::log

// The wait plan (wait_plan.hpp), base functions the module takes from its host.
WaitPlan wait_plan(nanoseconds expected, microseconds spin, bool woken) {
  return transport::host->wait_plan(expected, spin, woken);
}
microseconds idle_nap(nanoseconds idle) {
  return transport::host->idle_nap(idle);
}
microseconds idle_slice(nanoseconds idle) {
  return transport::host->idle_slice(idle);
}
void yielding_pollers_add(int delta) {
  transport::host->yielding_pollers_add(delta);
}

}  // namespace naa
