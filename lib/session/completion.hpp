// SPDX-License-Identifier: BSD-3-Clause
// naa_waitall, naa_waitany, naa_testany and naa_testall: MPI's completion over many requests,
// for handles. The caller (api.cpp) has looked every handle up and keeps them alive for the
// call; inactive ones (NAA_HANDLE_NULL, and for the test calls nothing in flight) are null
// here; inactive ones are ignored, as MPI ignores inactive requests (the wait calls find those
// with nothing in flight themselves).
#pragma once

#include <vector>

#include "naa.h"
#include "session/session.hpp"

namespace naa::session {

using Sessions = std::vector<Session *>;

// statuses may be null. Return as naa_waitall/naa_testall (NAA_ERR_IN_STATUS for any error).
// The test calls are given the number of each handle's invocation in flight as the call began
// (Session::in_flight): one that ended elsewhere meanwhile is reported so (Session::end), its
// successor never in its place; the wait calls learn them as they join each handle's wait.
int wait_all(const Sessions &sessions, naa_status *statuses);
int test_all(const Sessions &sessions, const std::vector<uint64_t> &invocations, bool *flag,
             naa_status *statuses);
// status may be null. Return the completed handle's result, as naa_wait would.
int wait_any(const Sessions &sessions, int *index, naa_status *status);
int test_any(const Sessions &sessions, const std::vector<uint64_t> &invocations, int *index,
             bool *flag, naa_status *status);

}  // namespace naa::session
