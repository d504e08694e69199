// SPDX-License-Identifier: BSD-3-Clause
// Static English texts for codes: naa_strerror(3) and naa_rc_string(3), also for the code
// that is not behind the C ABI (naa-server, naa-info, the causes naa_last_error keeps).
#pragma once

namespace naa::diag {

// An naa_error_t code ("unknown error" for others).
const char *error_text(int error);
// An NAA return code (naa_status.naa_return_code).
const char *rc_text(int naa_return_code);

}  // namespace naa::diag
