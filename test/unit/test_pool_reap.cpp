// SPDX-License-Identifier: BSD-3-Clause
// naa-server's WorkerPool (tools/naa-server/worker_pool.cpp) joins the threads that ended, and
// looks at its list of threads only when one has: naa-server's accept loop reaps on every
// pass, and with 1000 clients the walks were a tenth of an idle server's CPU.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
extern "C" {
#include <cmocka.h>
}

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "../../tools/naa-server/worker_pool.hpp"

using naa::server::WorkerPool;
using namespace std::chrono_literals;

namespace {

void test_ended_threads_are_joined(void **) {
  WorkerPool pool(1, 20ms);  // one thread parks, for 20 ms
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) pool.run([&] {
      std::this_thread::sleep_for(10ms);  // all three at once: three threads
      ++ran;
    });
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while ((ran.load() < 3 || pool.threads() > 0) && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(5ms);
    pool.reap();
  }
  fprintf(stderr, "  3 jobs run, %zu threads not joined\n", pool.threads());
  assert_int_equal(ran.load(), 3);
  assert_int_equal(pool.threads(), 0);
}

void test_a_thread_ending_later_is_joined(void **) {
  WorkerPool pool(0, 1ms);  // none parks
  std::promise<void> go;
  std::shared_future<void> released = go.get_future().share();
  pool.run([released] { released.wait(); });
  pool.reap();  // nothing ended yet: the list stays
  assert_int_equal(pool.threads(), 1);
  go.set_value();
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  while (pool.threads() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(5ms);
    pool.reap();
  }
  assert_int_equal(pool.threads(), 0);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ended_threads_are_joined),
      cmocka_unit_test(test_a_thread_ending_later_is_joined),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
