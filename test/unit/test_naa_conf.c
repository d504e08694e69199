/* SPDX-License-Identifier: BSD-3-Clause */
/* naa.conf parsing and the rank spread shared by the SPANK plugin and the Slurm resolver. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rm/naa_conf.h"

static naa_conf parse_ok(const char *text) {
  naa_conf conf;
  char error[256] = "";
  assert_int_equal(naa_conf_parse(text, "t.conf", &conf, error, sizeof error), 0);
  assert_string_equal(error, "");
  return conf;
}

static void parse_fails(const char *text, const char *expected_error) {
  naa_conf conf = {NULL, 7};
  char error[256] = "";
  assert_int_equal(naa_conf_parse(text, "t.conf", &conf, error, sizeof error), -1);
  assert_string_equal(error, expected_error);
  assert_int_equal(conf.n_naas, 7); /* untouched */
}

static void full_file(void **state) {
  (void)state;
  naa_conf conf = parse_ok(
      "# site NAAs\n"
      "\n"
      "naa01   12345  10:2 11:3   # two kernels\n"
      "\t10.0.0.2 4000 10:2\r\n"
      "[fe80::1] 5000 12:3\n"
      "::1 6000 1:1");
  assert_int_equal(conf.n_naas, 4);
  assert_string_equal(conf.naas[0].host, "naa01");
  assert_int_equal(conf.naas[0].port, 12345);
  assert_int_equal(conf.naas[0].line, 3);
  assert_int_equal(conf.naas[0].n_kernels, 2);
  assert_int_equal(naa_conf_kernel_of(&conf.naas[0], 11)->n_inputs, 3);
  assert_null(naa_conf_kernel_of(&conf.naas[0], 12));
  assert_string_equal(conf.naas[1].host, "10.0.0.2");
  assert_int_equal(conf.naas[1].line, 4);
  assert_string_equal(conf.naas[2].host, "fe80::1");
  assert_string_equal(conf.naas[3].host, "::1");
  assert_int_equal(conf.naas[3].line, 6);
  naa_conf_free(&conf);
  assert_null(conf.naas);
}

static void empty_file_has_no_naas(void **state) {
  (void)state;
  naa_conf conf = parse_ok("# nothing yet\n\n   \n");
  assert_int_equal(conf.n_naas, 0);
  assert_int_equal(naa_conf_count(&conf, 10), 0);
  assert_null(naa_conf_pick(&conf, 10, 0));
  naa_conf_free(&conf);
}

static void malformed_lines(void **state) {
  (void)state;
  parse_fails("naa01\n", "t.conf line 1: \"naa01\" lacks a port and function codes");
  parse_fails(
      "ok 1 1:1\nnaa01 12345\n",
      "t.conf line 2: naa01 port 12345 serves no function code (expected <fncode>:<n_inputs> ...)");
  parse_fails("naa01 x 10:2\n", "t.conf line 1: port \"x\" is not a number 1..65535");
  parse_fails("naa01 65536 10:2\n", "t.conf line 1: port \"65536\" is not a number 1..65535");
  parse_fails("naa01 0 10:2\n", "t.conf line 1: port \"0\" is not a number 1..65535");
  parse_fails("naa01 1 10\n", "t.conf line 1: \"10\" is not <fncode>:<n_inputs>");
  parse_fails("naa01 1 128:2\n",
              "t.conf line 1: function code in \"128:2\" is not a number 1..127");
  parse_fails("naa01 1 -1:2\n", "t.conf line 1: function code in \"-1:2\" is not a number 1..127");
  parse_fails("naa01 1 10:32\n",
              "t.conf line 1: number of inputs in \"10:32\" is not a number 1..31");
  parse_fails("naa01 1 10:0\n",
              "t.conf line 1: number of inputs in \"10:0\" is not a number 1..31");
  parse_fails("naa01 1 10:2 10:2\n", "t.conf line 1: function code 10 is listed twice");
  parse_fails("[fe80::1 1 10:2\n", "t.conf line 1: host \"[fe80::1\" lacks the closing ']'");
  parse_fails("a,b 1 10:2\n", "t.conf line 1: host \"a,b\" contains a bracket or a comma");
}

static void pick_spreads_by_rank(void **state) {
  (void)state;
  naa_conf conf = parse_ok("a 1 10:2\nb 2 11:3\nc 3 10:2 11:3\n");
  assert_int_equal(naa_conf_count(&conf, 10), 2);
  assert_int_equal(naa_conf_count(&conf, 12), 0);
  assert_string_equal(naa_conf_pick(&conf, 10, 0)->host, "a");
  assert_string_equal(naa_conf_pick(&conf, 10, 1)->host, "c");
  assert_string_equal(naa_conf_pick(&conf, 10, 2)->host, "a");
  assert_string_equal(naa_conf_pick(&conf, 11, 0)->host, "b");
  assert_string_equal(naa_conf_pick(&conf, 11, 5)->host, "c");
  assert_null(naa_conf_pick(&conf, 12, 0));
  naa_conf_free(&conf);
}

static void spec_entries(void **state) {
  (void)state;
  naa_conf conf = parse_ok("naa01 12345 10:2\n::1 7 3:1\n");
  char buf[64];
  assert_int_equal(naa_conf_spec_entry(&conf.naas[0], 10, buf, sizeof buf), 16);
  assert_string_equal(buf, "naa01:12345:10:2");
  assert_true(naa_conf_spec_entry(&conf.naas[1], 3, buf, sizeof buf) > 0);
  assert_string_equal(buf, "[::1]:7:3:1");
  assert_int_equal(naa_conf_spec_entry(&conf.naas[0], 3, buf, sizeof buf), -1);
  assert_int_equal(naa_conf_spec_entry(&conf.naas[0], 10, buf, 5), -1);
  naa_conf_free(&conf);
}

static void load_reports_the_path(void **state) {
  (void)state;
  naa_conf conf;
  char error[256];
  assert_int_equal(naa_conf_load("/nonexistent/naa.conf", &conf, error, sizeof error), -1);
  assert_string_equal(error, "cannot open /nonexistent/naa.conf: No such file or directory");

  char path[] = "/tmp/naa-conf-test-XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char text[] = "naa01 12345 10:2\nbad line\n";
  assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
  close(fd);
  assert_int_equal(naa_conf_load(path, &conf, error, sizeof error), -1);
  char expected[300];
  snprintf(expected, sizeof expected, "%s line 2: port \"line\" is not a number 1..65535", path);
  assert_string_equal(error, expected);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(full_file),       cmocka_unit_test(empty_file_has_no_naas),
      cmocka_unit_test(malformed_lines), cmocka_unit_test(pick_spreads_by_rank),
      cmocka_unit_test(spec_entries),    cmocka_unit_test(load_reports_the_path),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
