// SPDX-License-Identifier: BSD-3-Clause
// The cause of the last failure a program can read (naa_last_error(3)): per handle, and per
// thread for the calls that have none yet (a failed naa_create). Only failures write here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "naa.h"

namespace naa::diag::last_error {

// A failure returned as a code (not thrown) from deep inside a call: logged at info, as the
// caller sees the code, and its cause kept for record(). Returns code.
int returned(naa_error_t code, const std::string &cause);

// A public call on handle_id (0: none) returned code != 0; cause is guarded()'s (empty if it
// threw nothing). Keeps "function: cause" for the handle and the calling thread.
void record(const char *function, uint64_t handle_id, int code, std::string cause);

// naa_finalize: the handle's record goes with it.
void forget(uint64_t handle_id);

// naa_last_error(): handle_id 0 is the calling thread's last failure.
int read(uint64_t handle_id, bool of_thread, char *buf, size_t len);

}  // namespace naa::diag::last_error
