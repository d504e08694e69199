// SPDX-License-Identifier: BSD-3-Clause
// vecadd.cpp: the C++ twin of vecadd.c with include/naa.hpp: c = a + b on N doubles, twice,
// b single-send. Errors arrive as naa::error; the handle finalizes itself.
//
//   naa-server --port 12345 &
//   NAA_SPEC=127.0.0.1:12345:10:2 ./vecadd_cpp [N]
#include <naa.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

namespace {

constexpr std::uint32_t FN_VECADD_F64 = 10;  // naa-server's built-in vecadd_f64 kernel

std::size_t count_wrong(const std::vector<double> &a, const std::vector<double> &b,
                        const std::vector<double> &c) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < c.size(); i++) bad += c[i] != a[i] + b[i];
  return bad;
}

}  // namespace

int main(int argc, char **argv) {
  const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 1000000;
  if (n == 0) {
    std::fprintf(stderr, "usage: vecadd_cpp [N > 0]\n");
    return 2;
  }
  std::vector<double> a(n), b(n), c(n, -1.0);
  for (std::size_t i = 0; i < n; i++) a[i] = double(i), b[i] = 2.0 * double(i);

  try {
    naa::handle h(FN_VECADD_F64, {a, naa::buffer(b).single_send()}, {c});

    h.invoke();
    std::optional<naa_status> polled;
    unsigned long polls = 0;
    while (!(polled = h.test())) polls++;  // a real code would do other work here
    const std::size_t bad1 = count_wrong(a, b, c);

    // Round 2: new a; b stays on the NAA, so the host copy may change without effect.
    const std::vector<double> b_sent = b;
    for (std::size_t i = 0; i < n; i++) a[i] = 0.5 * double(i), b[i] = -7.0, c[i] = -1.0;
    h.invoke();
    const naa_status st = h.wait();
    const std::size_t bad2 = count_wrong(a, b_sent, c);

    if (bad1 || bad2) {
      std::printf("vecadd_cpp: FAILED: %zu wrong elements in round 1, %zu in round 2 (of %zu)\n",
                  bad1, bad2, n);
      return 1;
    }
    std::printf(
        "vecadd_cpp: %zu doubles, 2 invocations: all %zu elements correct "
        "(c[%zu] = %.1f, NAA return code 0x%02x, %lu polls)\n",
        n, 2 * n, n - 1, c[n - 1], st.naa_return_code, polls);
  } catch (const naa::error &e) {
    std::fprintf(stderr, "vecadd_cpp: %s (%d)\n", e.what(), int(e.code()));
    return 1;
  }
  return 0;
}
