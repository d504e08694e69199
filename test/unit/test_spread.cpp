// SPDX-License-Identifier: BSD-3-Clause
// Spreading processes over the NAAs of a function code: the rank from the launcher's environment
// picks the first NAA the same way for NAA_SPEC and naa.conf, later handles of one process move
// on to the least used, and a Slurm job that says what it asked for in its environment needs
// no query of slurmctld.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <unistd.h>
// cmocka 1.1.5 does not declare its functions extern "C" itself.
extern "C" {
#include <cmocka.h>
}

#include <memory>
#include <string>
#include <vector>

#include "error.hpp"
#include "config/params.hpp"
#include "transport/params.hpp"
#include "rm/resolver.hpp"
#include "rm/spread.hpp"

using naa::rm::pick;
using naa::rm::process_rank;
using naa::rm::resolve;
using naa::rm::Target;

namespace {

const char *const kRankVariables[] = {"PMIX_RANK",
                                      "OMPI_COMM_WORLD_RANK",
                                      "PMI_RANK",
                                      "SLURM_PROCID",
                                      "OMPI_COMM_WORLD_LOCAL_RANK",
                                      "MPI_LOCALRANKID",
                                      "SLURM_LOCALID",
                                      "NAA_SPEC",
                                      "NAA_SPREAD",
                                      "NAA_CONF",
                                      "SLURM_JOB_ID",
                                      "SLURM_SPANK_NAA_CODES",
                                      "SLURM_JOB_LICENSES"};

int clean_environment(void **) {
  for (const char *name : kRankVariables) unsetenv(name);
  return 0;
}

std::unique_ptr<Target> resolve_here(uint8_t code, size_t n_inputs) {
  return resolve(code, n_inputs, naa::transport::read_parameters());
}

void pick_starts_at_rank_mod_n(void **) {
  const auto all = [](size_t) { return true; };
  const auto unused = [](size_t) { return 0u; };
  for (unsigned long rank = 0; rank < 12; ++rank)
    assert_int_equal(pick(3, rank, all, unused), rank % 3);
}

void pick_prefers_least_used_then_first_from_rank(void **) {
  const auto all = [](size_t) { return true; };
  const unsigned uses[] = {1, 0, 1, 0};
  const auto use = [&](size_t i) { return uses[i]; };
  assert_int_equal(pick(4, 0, all, use), 1);
  assert_int_equal(pick(4, 2, all, use), 3);  // from 2 on: 2 (used), 3 (free)
  assert_int_equal(pick(4, 3, all, use), 3);
}

void pick_skips_what_does_not_fit(void **) {
  const auto unused = [](size_t) { return 0u; };
  assert_int_equal(pick(
                       3, 0, [](size_t i) { return i == 2; }, unused),
                   2);
  assert_int_equal(pick(
                       3, 0, [](size_t) { return false; }, unused),
                   3);
}

void rank_from_the_launcher_first(void **) {
  assert_int_equal(process_rank("rank").rank, 0);
  assert_true(process_rank("rank").from.empty());
  setenv("SLURM_PROCID", "0", 1);  // the allocation's, inherited by the ranks mpirun starts
  setenv("OMPI_COMM_WORLD_RANK", "7", 1);
  assert_int_equal(process_rank("rank").rank, 7);
  assert_string_equal(process_rank("rank").from.c_str(), "OMPI_COMM_WORLD_RANK");
  setenv("PMIX_RANK", "x", 1);  // not a number: skipped
  assert_int_equal(process_rank("rank").rank, 7);
  setenv("SLURM_LOCALID", "3", 1);
  assert_int_equal(process_rank("local").rank, 3);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "2", 1);
  assert_int_equal(process_rank("local").rank, 2);
  assert_int_equal(process_rank("").rank, 7);  // unset NAA_SPREAD: rank
  try {
    process_rank("node");
    fail_msg("NAA_SPREAD=node accepted");
  } catch (const naa::Error &e) {
    assert_int_equal(e.code(), NAA_ERR_CONFIG);
  }
}

// Each test names its own NAAs: a failed assertion leaves its live Targets counted.

// 16 processes, one handle each, NAA_SPEC listing two NAAs for code 10: 8 on each, rank r on
// entry r mod 2 + 1.
void naa_spec_spreads_ranks(void **) {
  setenv("NAA_SPEC", "a:1:10:2,b:2:10:2,c:3:11:1", 1);
  unsigned on_a = 0;
  for (int rank = 0; rank < 16; ++rank) {
    setenv("OMPI_COMM_WORLD_RANK", std::to_string(rank).c_str(), 1);
    const auto t = resolve_here(10, 2);
    assert_string_equal(t->host().c_str(), rank % 2 == 0 ? "a" : "b");
    on_a += t->host() == "a";
  }
  assert_int_equal(on_a, 8);
}

void later_handles_move_to_least_used(void **) {
  setenv("NAA_SPEC", "p:1:10:2,q:2:10:2,s:3:10:2", 1);
  setenv("PMI_RANK", "1", 1);
  const auto first = resolve_here(10, 2), second = resolve_here(10, 2), third = resolve_here(10, 2);
  assert_string_equal(first->host().c_str(), "q");
  assert_string_equal(second->host().c_str(), "s");
  assert_string_equal(third->host().c_str(), "p");
  const auto fourth = resolve_here(10, 2);  // all used once: from the rank's NAA on again
  assert_string_equal(fourth->host().c_str(), "q");
}

void local_rank_when_asked(void **) {
  setenv("NAA_SPEC", "x:1:10:2,y:2:10:2", 1);
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_LOCALID", "0", 1);
  assert_string_equal(resolve_here(10, 2)->host().c_str(), "y");
  setenv("NAA_SPREAD", "local", 1);
  assert_string_equal(resolve_here(10, 2)->host().c_str(), "x");
}

// The same rule for naa.conf in a Slurm job whose environment says it asked for --naa=10: no
// slurmctld exists here, so a query would fail.
void naa_conf_spreads_ranks_without_asking_slurm(void **) {
  char path[] = "/tmp/test_spread.XXXXXX";
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  const std::string conf = "a 1 10:2\nb 2 11:1 10:2\n";
  assert_int_equal(write(fd, conf.data(), conf.size()), static_cast<ssize_t>(conf.size()));
  close(fd);
  setenv("NAA_CONF", path, 1);
  setenv("SLURM_JOB_ID", "4242", 1);
  setenv("SLURM_SPANK_NAA_CODES", "10,11", 1);
  for (int rank = 0; rank < 16; ++rank) {
    setenv("PMIX_RANK", std::to_string(rank).c_str(), 1);
    assert_string_equal(resolve_here(10, 2)->host().c_str(), rank % 2 == 0 ? "a" : "b");
    assert_string_equal(resolve_here(11, 1)->host().c_str(), "b");
  }
  unsetenv("SLURM_SPANK_NAA_CODES");
  setenv("SLURM_JOB_LICENSES", "naa:1", 1);
  assert_string_equal(resolve_here(10, 2)->host().c_str(), "b");
  unlink(path);
}

}  // namespace

int main() {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pick_starts_at_rank_mod_n),
      cmocka_unit_test(pick_prefers_least_used_then_first_from_rank),
      cmocka_unit_test(pick_skips_what_does_not_fit),
      cmocka_unit_test_setup(rank_from_the_launcher_first, clean_environment),
      cmocka_unit_test_setup(naa_spec_spreads_ranks, clean_environment),
      cmocka_unit_test_setup(later_handles_move_to_least_used, clean_environment),
      cmocka_unit_test_setup(local_rank_when_asked, clean_environment),
      cmocka_unit_test_setup(naa_conf_spreads_ranks_without_asking_slurm, clean_environment),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
