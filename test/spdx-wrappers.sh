#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# scripts/spdx.sh passes over the libtool wrapper scripts an in-source build leaves untracked in
# the checkout, and over nothing else: in a scratch git repository holding a copy of
# scripts/spdx.sh, an untracked copy of a real wrapper (naa-bench's) passes; an untracked "#!"
# script without the tag, and the same wrapper once tracked, are reported. Skipped (exit 77)
# without git or when naa-bench is no libtool wrapper (a build without shared libraries).
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
wrapper=${NAA_TOOLS:-tools}/naa-bench/naa-bench
if ! command -v git >/dev/null 2>&1; then
  echo "spdx-wrappers: SKIP: git is not installed"
  exit 77
fi
if ! head -n 4 "$wrapper" 2>/dev/null | grep -q 'temporary wrapper script'; then
  echo "spdx-wrappers: SKIP: $wrapper is no libtool wrapper script (no shared libnaa)"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/spdx-wrappers.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
mkdir "$tmp/scripts" "$tmp/tools" && cp "$srcdir/scripts/spdx.sh" "$tmp/scripts/" || exit 99
git -C "$tmp" init -q && git -C "$tmp" add scripts/spdx.sh || exit 99

cp "$wrapper" "$tmp/tools/naa-bench" || exit 99
if out=$(bash "$tmp/scripts/spdx.sh" --check); then
  echo "spdx-wrappers: ok: an untracked libtool wrapper is passed over: $out"
else
  echo "spdx-wrappers: FAIL: an untracked libtool wrapper was reported: $out"
  fail=1
fi

printf '#!/bin/sh\n# temporary wrapper script\necho hi\n' > "$tmp/tools/script" || exit 99
if out=$(bash "$tmp/scripts/spdx.sh" --check); then
  echo "spdx-wrappers: FAIL: an untracked script without the tag passed: $out"
  fail=1
else
  echo "spdx-wrappers: ok: an untracked script without libtool's marker is reported"
fi
rm "$tmp/tools/script"

git -C "$tmp" add tools/naa-bench || exit 99
if out=$(bash "$tmp/scripts/spdx.sh" --check); then
  echo "spdx-wrappers: FAIL: a tracked libtool wrapper without the tag passed: $out"
  fail=1
else
  echo "spdx-wrappers: ok: a tracked file is checked whatever it holds"
fi
exit $fail
