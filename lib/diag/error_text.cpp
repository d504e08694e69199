// SPDX-License-Identifier: BSD-3-Clause
#include "diag/error_text.hpp"

#include "naa.h"
#include "naa_kernel.h"

static_assert(NAA_RC_KERNEL_CRASHED == NAA_KERNEL_RC_CRASHED &&
              NAA_RC_UNKNOWN_FUNCTION == NAA_KERNEL_RC_UNKNOWN_FUNCTION &&
              NAA_RC_KERNEL_TIMEOUT == NAA_KERNEL_RC_TIMEOUT);

namespace naa::diag {

const char *error_text(int error) {
  switch (error) {
    case NAA_SUCCESS:
      return "success";
    case NAA_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case NAA_ERR_INVALID_HANDLE:
      return "invalid handle (never created, finalized, or stale)";
    case NAA_ERR_NO_NAA:
      return "no NAA is configured for this function code";
    case NAA_ERR_CONNECTION:
      return "cannot connect to the NAA, or the connection was lost";
    case NAA_ERR_TRANSPORT:
      return "transport (RDMA/libfabric) error";
    case NAA_ERR_TIMEOUT:
      return "timed out (see NAA_TIMEOUT; connecting: NAA_CONNECT_TIMEOUT)";
    case NAA_ERR_NAA:
      return "the NAA returned an error code (see naa_status)";
    case NAA_ERR_NO_RESOURCES:
      return "out of resources (memory or memory registration)";
    case NAA_ERR_PROTOCOL:
      return "NAA protocol (MRSP) error";
    case NAA_ERR_STATE:
      return "operation not valid in the handle's current state";
    case NAA_ERR_CONFIG:
      return "malformed runtime configuration (NAA_SPEC, NAA_TRANSPORT, ...)";
    case NAA_ERR_UNSUPPORTED:
      return "not supported by this build or on this machine";
    case NAA_ERR_INTERNAL:
      return "internal libnaa error";
    case NAA_ERR_IN_STATUS:
      return "some handles failed: see each naa_status.error";
    case NAA_ERR_CANCELED:
      return "the invocation was cancelled (naa_cancel)";
    default:
      return "unknown error";
  }
}

const char *rc_text(int rc) {
  switch (rc) {
    case NAA_RC_SUCCESS:
      return "success";
    case NAA_RC_SOCKET_NOT_AVAILABLE:
      return "socket not available (the NAA could not take the connection)";
    case NAA_RC_KERNEL_TIMEOUT:
      return "kernel timeout (the kernel overran the NAA's time limit)";
    case NAA_RC_KERNEL_CRASHED:
      return "kernel crashed (naa-server: its isolated worker process died)";
    case NAA_RC_UNKNOWN_FUNCTION:
      return "unknown function code (the NAA has no kernel for it)";
    // Application codes, which naa-server's built-in kernels use as naa_kernel.h defines them.
    case NAA_KERNEL_RC_BAD_LAYOUT:
      return "application error 0x10 (naa-server's kernels: wrong number or kind of regions)";
    case NAA_KERNEL_RC_BAD_SIZE:
      return "application error 0x11 (naa-server's kernels: region sizes do not fit together)";
    default:
      if (rc >= NAA_RC_APPLICATION_MIN && rc <= NAA_RC_APPLICATION_MAX)
        return "application error (0x10..0x7f: the kernel's own code)";
      return "unknown NAA return code";
  }
}

}  // namespace naa::diag
