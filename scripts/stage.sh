# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced: stage NAME COMMAND... runs COMMAND, then prints "stage NAME: S s" (wall seconds; also
# appended to $NAA_STAGE_LOG if set) and returns COMMAND's status, so that logs show where time goes.
# The seconds are also left in stage_seconds, for a summary.
stage_seconds=0
stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  stage_seconds=$((SECONDS - t0))
  echo "stage $name: $stage_seconds s"
  [[ -z ${NAA_STAGE_LOG:-} ]] || echo "stage $name: $stage_seconds s" >> "$NAA_STAGE_LOG"
  return $rc
}
