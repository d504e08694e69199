// SPDX-License-Identifier: BSD-3-Clause
// naa-bench's reading of fi_pingpong's output (tools/naa-bench/fi_pingpong_output.cpp), on
// output fi_pingpong 1.17 printed on a Debian 12 machine: its usec/xfer is half a round trip.
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <setjmp.h>
#include <string>

extern "C" {
#include <cmocka.h>
}

#include "fi_pingpong_output.hpp"

using naa::bench::parse_fi_pingpong;

// fi_pingpong -p tcp -e msg -P 45000 -S 1 -I 1000 127.0.0.1, against its server.
static const char kTcpClient[] =
    "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n"
    "1       1k      =1k      1.9k        0.38s      0.01     191.02       0.01\n";
// fi_pingpong -p shm -e rdm -P 45001 -S 1 -I 100 127.0.0.1.
static const char kShmClient[] =
    "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n"
    "1       100     =100     200         0.12s      0.00     606.60       0.00\n";

static void round_trip_is_twice_usec_per_xfer(void **) {
  auto tcp = parse_fi_pingpong(kTcpClient);
  assert_true(tcp.ok);
  assert_true(tcp.round_trip_us > 382.03 && tcp.round_trip_us < 382.05);
  auto shm = parse_fi_pingpong(kShmClient);
  assert_true(shm.ok);
  assert_true(shm.round_trip_us > 1213.19 && shm.round_trip_us < 1213.21);
}

static void column_found_by_its_heading(void **) {
  // Blank lines and a provider warning ahead of the table do not move the column.
  auto r = parse_fi_pingpong(std::string("\n[warn] something\n\n") + kTcpClient);
  assert_true(r.ok);
  assert_true(r.round_trip_us > 382.03 && r.round_trip_us < 382.05);
}

static void bad_output_names_the_line(void **) {
  auto none =
      parse_fi_pingpong("[error] util/pingpong.c:408 : failed to connect: Connection refused\n");
  assert_false(none.ok);
  assert_non_null(std::strstr(none.error.c_str(), "no heading naming usec/xfer"));
  assert_non_null(std::strstr(none.error.c_str(), "Connection refused"));

  auto heading_only = parse_fi_pingpong(
      "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n");
  assert_false(heading_only.ok);
  assert_non_null(std::strstr(heading_only.error.c_str(), "no result line"));

  auto short_line = parse_fi_pingpong(
      "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n1 1k =1k\n");
  assert_false(short_line.ok);
  assert_non_null(std::strstr(short_line.error.c_str(), "'1 1k =1k'"));

  auto not_number = parse_fi_pingpong(
      "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n"
      "1       1k      =1k      1.9k        0.38s      0.01     fast       0.01\n");
  assert_false(not_number.ok);
  assert_non_null(std::strstr(not_number.error.c_str(), "'fast' is not a positive number"));
}

int main() {
  const CMUnitTest tests[] = {cmocka_unit_test(round_trip_is_twice_usec_per_xfer),
                              cmocka_unit_test(column_found_by_its_heading),
                              cmocka_unit_test(bad_output_names_the_line)};
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
