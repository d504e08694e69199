#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs one test of make check under a time limit (LOG_COMPILER), so that a test that hangs
# fails with a line saying so instead of holding up the suite for ever (a client once spun
# for 20 minutes inside libfabric on a lock that a crashed server had held). The limit is
# NAA_TEST_LIMIT_S seconds (default 600), stretched by NAA_TEST_TIME_SCALE as the tests' own
# deadlines are under the sanitizers, and at most 1200.
limit=$(awk -v l="${NAA_TEST_LIMIT_S:-600}" -v s="${NAA_TEST_TIME_SCALE:-1}" \
  'BEGIN { x = l * s; if (x > 1200) x = 1200; printf "%d", x }')
timeout -k 10 "$limit" "$@"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
  echo "limit.sh: $* ran longer than $limit s and was killed (hung?)"
fi
exit "$rc"
