#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Lints every man page with mandoc at warning level and renders it with mandoc and, where
# man-db is installed, with man -l (groff) as man(1) would show it: any message fails.
#   man-lint.sh             the pages of dist_man_MANS ($NAA_MAN_PAGES, set by make check),
#                           which must be exactly the pages in man/ (else one is not installed)
#   man-lint.sh PAGE...     these files (test/install/consumer.sh: the installed pages)
# Without mandoc the test is skipped (exit 77), not failed.
set -u
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
if ! command -v mandoc >/dev/null 2>&1; then
  echo "man-lint: SKIP: mandoc is not installed, so the man pages cannot be linted" \
       "(install mandoc to run this test)"
  exit 77
fi
if [ $# -eq 0 ]; then
  if [ -z "${NAA_MAN_PAGES:-}" ]; then
    echo "man-lint: FAIL: NAA_MAN_PAGES (dist_man_MANS) is not set; run through make check or name the pages"
    exit 1
  fi
  for f in "$srcdir"/man/*.[1-9]; do
    # A link names a page under another of its functions (make install links it the same way).
    if [ -L "$f" ]; then
      target=$(readlink "$f")
      grep -Eq "^\.Nm $(basename "$f" | sed 's/\.[1-9]$//')( ,)?\$" "$srcdir/man/$target" ||
        { echo "man-lint: FAIL: $f links to $target, whose NAME section does not list it"; exit 1; }
      continue
    fi
    case " $NAA_MAN_PAGES " in
      *" man/${f##*/} "*) ;;
      *) echo "man-lint: FAIL: $f is not in dist_man_MANS, so make install would not install it"; exit 1 ;;
    esac
  done
  for p in $NAA_MAN_PAGES; do set -- "$@" "$srcdir/$p"; done
fi
for f in "$@"; do
  [ -f "$f" ] || { echo "man-lint: FAIL: $f does not exist"; exit 1; }
done

echo "man-lint: mandoc -T lint -W warning on $# pages"
out=$(mandoc -T lint -W warning "$@" 2>&1)
status=$?
if [ -n "$out" ] || [ $status -ne 0 ]; then
  printf '%s\n' "$out"
  echo "man-lint: FAIL: mandoc reported the problems above (exit status $status)"
  exit 1
fi

# Rendered, every page must show its NAME section and nothing on stderr; man -l (groff) is
# what a user's man(1) runs, mandoc is there even where man-db is not.
errors=$(mktemp /tmp/naa-man-lint-XXXXXX)
trap 'rm -f "$errors"' EXIT
# check_render PAGE COMMAND...
check_render() {
  page=$1
  shift
  if ! text=$(MANWIDTH=80 "$@" "$page" 2>"$errors"); then
    echo "man-lint: FAIL: $* $page exits with an error: $(cat "$errors")"
    return 1
  fi
  if [ -s "$errors" ]; then
    echo "man-lint: FAIL: $* $page: $(cat "$errors")"
    return 1
  fi
  # Bold headings come as overstrike (X backspace X) when the output is not a terminal.
  if ! printf '%s\n' "$text" | sed 's/.\x08//g' | grep -q '^NAME$'; then
    echo "man-lint: FAIL: $* $page shows no NAME section"
    return 1
  fi
}
renderers="mandoc -T utf8"
have_man=no
if command -v man >/dev/null 2>&1; then
  have_man=yes
  renderers="$renderers, man -l"
else
  echo "man-lint: man(1) (man-db) is not installed: rendering with mandoc only"
fi
failed=0
for f in "$@"; do
  check_render "$f" mandoc -T utf8 || failed=1
  if [ $have_man = yes ]; then check_render "$f" man -l || failed=1; fi
done
[ $failed -eq 0 ] || exit 1
echo "man-lint: all $# pages are clean and render with $renderers"
