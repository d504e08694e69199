#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The C and C++ sources follow .clang-format (Debian 12's clang-format, version 14).
#   scripts/format.sh [--check]   list the files clang-format would change; exit 1 if any
#   scripts/format.sh --fix       reformat them in place
# Which files: the *.c, *.h, *.cpp and *.hpp files git tracks or would track (untracked, not
# ignored). Another clang-format major version formats differently, so only version 14 is
# accepted (exit 4 otherwise); outside a git checkout the list of sources is not known (exit 3).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
mode=${1:---check}
case $mode in
  --check|--fix) ;;
  *) echo "usage: scripts/format.sh [--check|--fix]" >&2; exit 2 ;;
esac
cf=${CLANG_FORMAT:-}
if [[ -z $cf ]]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1; then cf=$c; break; fi
  done
fi
if [[ -z $cf ]] || ! "$cf" --version 2>/dev/null | grep -q 'version 14\.'; then
  echo "format: clang-format 14 not found (Debian 12: apt-get install clang-format)" >&2
  exit 4
fi
git_top=$(git -C "$top" rev-parse --show-toplevel 2>/dev/null || true)
if [[ -z $git_top || $(cd "$git_top" && pwd -P) != "$top" ]]; then
  echo "format: $top is not a git checkout: which files are sources is not known" >&2
  exit 3
fi
cd "$top"
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.c' '*.h' '*.cpp' '*.hpp' |
                     while read -r f; do [[ -f $f ]] && echo "$f"; done)
if [[ $mode == --fix ]]; then
  "$cf" -i --style=file "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "format: $f differs from .clang-format (scripts/format.sh --fix)"
    bad=1
  fi
done
[[ $bad == 0 ]] && echo "format: ${#files[@]} files follow .clang-format"
exit $bad
