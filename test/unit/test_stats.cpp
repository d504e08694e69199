// SPDX-License-Identifier: BSD-3-Clause
// How an invocation's stages (session::stats::Stages) divide it into the transfer and the NAA's
// service (naa_stats_get(3)): with our writes seen complete first, the transfer ends there;
// with the NAA's reply seen first (over ofi+shm our writes' completion may come after it), the
// transfer ends when the final write's post returned, which holds what the post copied, never
// at the post's start; a final write that pacing held back starts the service at its post.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <cstdlib>

#include "session/stats.hpp"

namespace {

namespace stats = naa::session::stats;

// The transfer and service (ns) that one completed invocation with these stages adds to a new
// handle's line.
void served(uint64_t handle_id, const stats::Stages &st, double *transfer_ns, double *service_ns) {
  stats::created(handle_id, static_cast<uint8_t>(handle_id), "127.0.0.1:1", {});
  const uint64_t t0 = stats::start(stats::Call::Wait);
  stats::finish(stats::Call::Wait, "naa_wait", t0, handle_id, NAA_SUCCESS, false, &st);
  naa_stats_t totals;
  naa_stats_function_t f[8];
  assert_int_equal(stats::get(&totals, f, 8), NAA_SUCCESS);
  for (size_t i = 0; i < totals.n_functions && i < 8; ++i)
    if (f[i].function_code == handle_id) {
      assert_int_equal(f[i].served, 1);
      *transfer_ns = f[i].transfer_s * 1e9;
      *service_ns = f[i].service_s * 1e9;
      return;
    }
  fail_msg("no line for function code %u", static_cast<unsigned>(handle_id));
}

void written_first(void **) {
  double transfer, service;
  served(1, {1000, 3000, 1100, 2000, 8000, false, 0, ""}, &transfer, &service);
  assert_float_equal(transfer, 2000, 1);  // invoked to written
  assert_float_equal(service, 5000, 1);   // written to replied
}

void reply_first_holds_the_copy(void **) {
  double transfer, service;
  // Written seen at 9000, after the reply at 8000; the final post ran 1100-5000.
  served(2, {1000, 9000, 1100, 5000, 8000, false, 0, ""}, &transfer, &service);
  if (transfer < 3999)
    fail_msg("transfer %.0f ns ends before the final write's post returned (4000 ns)", transfer);
  assert_float_equal(transfer, 4000, 1);
  assert_float_equal(service, 3000, 1);
}

void paced_final_write(void **) {
  double transfer, service;
  // Written at 3000; pacing held the final write back until 4000: the service starts there.
  served(3, {1000, 3000, 4000, 4500, 8000, false, 0, ""}, &transfer, &service);
  assert_float_equal(transfer, 2000, 1);
  assert_float_equal(service, 4000, 1);
}

}  // namespace

int main() {
  setenv("NAA_STATS", "1", 1);
  unsetenv("NAA_TRACE");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(written_first),
      cmocka_unit_test(reply_first_holds_the_copy),
      cmocka_unit_test(paced_final_write),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
