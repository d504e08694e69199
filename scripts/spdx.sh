#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The licence tag of every source file: "SPDX-License-Identifier: BSD-3-Clause" (LICENSE) in
# a comment on line 1, or on line 2 after a "#!" line.
#   scripts/spdx.sh [--check]   list the files without it; exit 1 if there is one
#   scripts/spdx.sh --fix       add the line to those files (the rule below), then check
# Which files: those git tracks or would track (untracked, not ignored) in this checkout that
# are C, C++, Fortran, shell, Python, Automake/Autoconf, *.in templates, the linker version
# script, man pages or scripts with a "#!" line. Not: documentation (*.md, ChangeLog, LICENSE),
# data (fuzz corpus, images, sanitizer suppressions, the example naa.conf, repo.yaml).
# The comment for each kind of file:
#   .c .h .map             /* SPDX-License-Identifier: BSD-3-Clause */
#   .cpp .hpp              // SPDX-License-Identifier: BSD-3-Clause
#   .f90                   ! SPDX-License-Identifier: BSD-3-Clause
#   man/*.[1-9]            .\" SPDX-License-Identifier: BSD-3-Clause
#   everything else        # SPDX-License-Identifier: BSD-3-Clause
# Needs a git checkout (a release tarball has no list of what is source and what generated).
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
tag='SPDX-License-Identifier: BSD-3-Clause'

mode=${1:---check}
case $mode in
  --check|--fix) ;;
  *) echo "usage: scripts/spdx.sh [--check|--fix]" >&2; exit 2 ;;
esac
git_top=$(git -C "$top" rev-parse --show-toplevel 2>/dev/null || true)
if [[ -z $git_top || $(cd "$git_top" && pwd -P) != "$top" ]]; then
  echo "spdx: $top is not a git checkout: which files are sources is not known" >&2
  exit 3
fi

comment_for() {
  case $1 in
    *.c|*.h|*.map) echo "/* $tag */" ;;
    *.cpp|*.hpp) echo "// $tag" ;;
    *.f90) echo "! $tag" ;;
    man/*.[1-9]) echo ".\\\" $tag" ;;
    *) echo "# $tag" ;;
  esac
}

is_source() {
  case $1 in
    *.md|ChangeLog|LICENSE|test/fuzz/corpus/*|*.png|*.supp|etc/*|*.yaml|.gitignore|*/.gitkeep)
      return 1 ;;
    *.c|*.h|*.cpp|*.hpp|*.f90|*.sh|*.py|*.am|*.ac|*.in|*.map|man/*.[1-9]) return 0 ;;
  esac
  [[ $(head -c 2 "$top/$1") == '#!' ]]
}

has_tag() {
  head -n 3 "$top/$1" | grep -qF "$tag"
}

add_tag() {
  local f=$top/$1 line tmp
  line=$(comment_for "$1")
  tmp=$(mktemp "$f.spdx-XXXXXX")
  if [[ $(head -c 2 "$f") == '#!' ]]; then
    { head -n 1 "$f"; printf '%s\n' "$line"; tail -n +2 "$f"; } > "$tmp"
  else
    { printf '%s\n' "$line"; cat "$f"; } > "$tmp"
  fi
  chmod --reference="$f" "$tmp"
  mv "$tmp" "$f"
}

missing=()
checked=0
while IFS= read -r f; do
  [[ -f $top/$f ]] || continue  # deleted in the work tree, not yet in the index
  is_source "$f" || continue
  checked=$((checked + 1))
  has_tag "$f" && continue
  if [[ $mode == --fix ]]; then
    add_tag "$f"
    echo "spdx: added to $f"
    has_tag "$f" && continue
  fi
  missing+=("$f")
done < <(git -C "$top" ls-files --cached --others --exclude-standard | sort -u)

if ((${#missing[@]})); then
  for f in "${missing[@]}"; do echo "spdx: $f: no \"$tag\" in its first 3 lines"; done
  echo "spdx: ${#missing[@]} of $checked source files lack the licence tag (scripts/spdx.sh --fix adds it)"
  exit 1
fi
echo "spdx: all $checked source files carry \"$tag\""
