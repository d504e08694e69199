# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced: stage NAME COMMAND... runs COMMAND, then prints "stage NAME: S s" (wall seconds; also
# appended to $NAA_STAGE_LOG if set) and returns COMMAND's status, so that logs show where time goes.
stage() {
  local name=$1 t0=$SECONDS rc=0
  shift
  "$@" || rc=$?
  echo "stage $name: $((SECONDS - t0)) s"
  [[ -z ${NAA_STAGE_LOG:-} ]] || echo "stage $name: $((SECONDS - t0)) s" >> "$NAA_STAGE_LOG"
  return $rc
}
