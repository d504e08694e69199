/* SPDX-License-Identifier: BSD-3-Clause */
/* C half of test_fortran_binding: what the C compiler makes of naa.h, for the Fortran half to
 * compare with the bind(C) types and constants of the naa module, plus the two libc calls
 * Fortran 2008 cannot make portably (setenv, and finding a port nothing listens on). */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "naa.h"

/* Keep in step with test_fortran_binding.f90. */
#define N_LAYOUT 59
#define N_CONSTANTS 31

void naa_test_c_layout(size_t out[N_LAYOUT]) {
  size_t i = 0;
  out[i++] = sizeof(naa_param_t);
  out[i++] = offsetof(naa_param_t, addr);
  out[i++] = offsetof(naa_param_t, size);
  out[i++] = offsetof(naa_param_t, single_send);
  out[i++] = sizeof(naa_param_t[2]) / 2; /* array stride */
  out[i++] = sizeof(naa_handle);
  out[i++] = offsetof(naa_handle, id);
  out[i++] = sizeof(naa_status);
  out[i++] = offsetof(naa_status, naa_return_code);
  out[i++] = offsetof(naa_status, immediate);
  out[i++] = offsetof(naa_status, bytes_received);
  out[i++] = offsetof(naa_status, function_code);
  out[i++] = offsetof(naa_status, error);
  out[i++] = sizeof(naa_attr_t);
  out[i++] = offsetof(naa_attr_t, size);
  out[i++] = offsetof(naa_attr_t, version);
  out[i++] = offsetof(naa_attr_t, naa);
  out[i++] = offsetof(naa_attr_t, transport);
  out[i++] = offsetof(naa_attr_t, timeout_ms);
  out[i++] = offsetof(naa_attr_t, progress);
  out[i++] = offsetof(naa_attr_t, auth_key);
  out[i++] = offsetof(naa_attr_t, local_ip);
  out[i++] = offsetof(naa_attr_t, device);
  out[i++] = offsetof(naa_attr_t, pacing_us);
  out[i++] = offsetof(naa_attr_t, params);
  out[i++] = offsetof(naa_attr_t, connect_timeout_ms);
  out[i++] = offsetof(naa_attr_t, reconnect);
  out[i++] = sizeof(naa_stats_function_t);
  out[i++] = offsetof(naa_stats_function_t, naa);
  out[i++] = offsetof(naa_stats_function_t, invocations);
  out[i++] = offsetof(naa_stats_function_t, invoke_s);
  out[i++] = offsetof(naa_stats_function_t, served);
  out[i++] = offsetof(naa_stats_function_t, transfer_s);
  out[i++] = offsetof(naa_stats_function_t, service_s);
  out[i++] = sizeof(naa_stats_function_t[2]) / 2;
  out[i++] = sizeof(naa_stats_t);
  out[i++] = offsetof(naa_stats_t, errors);
  out[i++] = offsetof(naa_stats_t, n_functions);
  out[i++] = sizeof(naa_stats_energy_function_t);
  out[i++] = offsetof(naa_stats_energy_function_t, naa);
  out[i++] = offsetof(naa_stats_energy_function_t, windows);
  out[i++] = offsetof(naa_stats_energy_function_t, window_s);
  out[i++] = offsetof(naa_stats_energy_function_t, host_j);
  out[i++] = offsetof(naa_stats_energy_function_t, bytes);
  out[i++] = offsetof(naa_stats_energy_function_t, naa_runs);
  out[i++] = offsetof(naa_stats_energy_function_t, naa_j);
  out[i++] = offsetof(naa_stats_energy_function_t, naa_bytes);
  out[i++] = offsetof(naa_stats_energy_function_t, naa_source);
  out[i++] = sizeof(naa_stats_energy_function_t[2]) / 2;
  out[i++] = sizeof(naa_stats_energy_t);
  out[i++] = offsetof(naa_stats_energy_t, host_source);
  out[i++] = offsetof(naa_stats_energy_t, host_unavailable);
  out[i++] = offsetof(naa_stats_energy_t, n_functions);
  out[i++] = sizeof(naa_handle_info_t);
  out[i++] = offsetof(naa_handle_info_t, transport);
  out[i++] = offsetof(naa_handle_info_t, function_code);
  out[i++] = offsetof(naa_handle_info_t, regions);
  out[i++] = offsetof(naa_handle_info_t, pacing_us);
  out[i++] = offsetof(naa_handle_info_t, progress);
}

void naa_test_c_constants(int out[N_CONSTANTS]) {
  int i = 0;
  out[i++] = NAA_SUCCESS;
  out[i++] = NAA_ERR_INVALID_ARGUMENT;
  out[i++] = NAA_ERR_INVALID_HANDLE;
  out[i++] = NAA_ERR_NO_NAA;
  out[i++] = NAA_ERR_CONNECTION;
  out[i++] = NAA_ERR_TRANSPORT;
  out[i++] = NAA_ERR_TIMEOUT;
  out[i++] = NAA_ERR_NAA;
  out[i++] = NAA_ERR_NO_RESOURCES;
  out[i++] = NAA_ERR_PROTOCOL;
  out[i++] = NAA_ERR_STATE;
  out[i++] = NAA_ERR_CONFIG;
  out[i++] = NAA_ERR_UNSUPPORTED;
  out[i++] = NAA_ERR_INTERNAL;
  out[i++] = NAA_RC_SUCCESS;
  out[i++] = NAA_RC_SOCKET_NOT_AVAILABLE;
  out[i++] = NAA_RC_KERNEL_TIMEOUT;
  out[i++] = NAA_RC_APPLICATION_MIN;
  out[i++] = NAA_RC_APPLICATION_MAX;
  out[i++] = NAA_VERSION_MAJOR;
  out[i++] = NAA_VERSION_MINOR;
  out[i++] = NAA_VERSION_PATCH;
  out[i++] = NAA_ERR_IN_STATUS;
  out[i++] = NAA_UNDEFINED;
  out[i++] = NAA_ATTR_VERSION;
  out[i++] = NAA_ATTR_UNSET;
  out[i++] = NAA_LOG_LEVEL_ERROR;
  out[i++] = NAA_LOG_LEVEL_WARN;
  out[i++] = NAA_LOG_LEVEL_INFO;
  out[i++] = NAA_LOG_LEVEL_DEBUG;
  out[i++] = NAA_ERR_CANCELED;
}

int naa_test_c_setenv(const char *name, const char *value) {
  return setenv(name, value, 1);
}

/* A loopback TCP port that was free a moment ago (bound and released), or -1. */
int naa_test_c_unused_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = -1;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}
