// SPDX-License-Identifier: BSD-3-Clause
// naa-server's WorkerPool (tools/naa-server/worker_pool.cpp) joins the threads that ended, and
// looks at its list of threads only when one has: naa-server's accept loop reaps on every
// pass, and with 1000 clients the walks were a tenth of an idle server's CPU. A thread that
// cannot be made leaves nothing behind.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
extern "C" {
#include <cmocka.h>
}

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <future>
#include <system_error>
#include <thread>

#include "../../tools/naa-server/worker_pool.hpp"

using naa::server::WorkerPool;
using namespace std::chrono_literals;

namespace {

// The address space of this process, in bytes (the first field of /proc/self/statm, in pages).
size_t address_space() {
  unsigned long pages = 0;
  FILE *f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
  std::fclose(f);
  return pages * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// A thread that cannot be made (here: no room in the address space for its 8 MiB stack, as a
// root-owned naa-server is not held back by RLIMIT_NPROC) makes run() throw and leaves no entry:
// before, the pool kept a Thread without a thread, and stop() (the destructor) threw joining
// it, which ended naa-server. In a child process, whose address space is limited; first of the
// cases, before any thread's stack is cached for reuse.
void test_a_thread_not_made_leaves_nothing(void **) {
  const pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    const rlimit limit{address_space() + (1u << 20), address_space() + (1u << 20)};
    int code = 0;
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    {
      WorkerPool pool(0, 1ms);
      bool threw = false;
      try {
        pool.run([] {});
      } catch (const std::system_error &) {
        threw = true;
      }
      if (!threw)
        code = 3;  // the limit left room for a thread: nothing to see
      else if (pool.threads() != 0)
        code = 1;
    }
    _exit(code);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
    fprintf(stderr, "  skipped: a limited address space did not keep a thread from being made\n");
    skip();
  }
  fprintf(stderr, "  a thread that could not be made: child %s %d\n",
          WIFEXITED(status) ? "exited with" : "killed by signal",
          WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  assert_true(WIFEXITED(status));
  assert_int_equal(WEXITSTATUS(status), 0);
}

void test_ended_threads_are_joined(void **) {
  WorkerPool pool(1, 20ms);  // one thread parks, for 20 ms
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i)
    pool.run([&] {
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
      cmocka_unit_test(test_a_thread_not_made_leaves_nothing),
      cmocka_unit_test(test_ended_threads_are_joined),
      cmocka_unit_test(test_a_thread_ending_later_is_joined),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
