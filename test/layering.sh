#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# lib/ is layered: a folder includes headers of the folders below it only. The order, lowest
# first (the files at lib/'s top, deadline.hpp, error.hpp and wait_plan.*, are "base"):
#   base, protocol, config, diag, energy, rm, transport, progress, session, api
# config (the runtime parameters) is below diag, whose log reads its level there, as
# libfabric's log reads fi_param; a layer with parameters of its own declares them in its own
# folder (rm/params, transport/params), never in config. The include graph of the folders is
# derived from the sources (#include "FOLDER/..." and #include "TOP.hpp"); an edge upwards or
# sideways fails.
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
order="base protocol config diag energy rm transport progress session api"
rank() {
  i=0
  for l in $order; do
    [ "$l" = "$1" ] && { echo $i; return; }
    i=$((i + 1))
  done
  echo -1
}
[ -d "$srcdir/lib" ] || { echo "layering: FAIL: no $srcdir/lib"; exit 1; }
edges=$(
  cd "$srcdir/lib" || exit 1
  find . -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.hpp' | sort | while read -r f; do
    from=$(echo "$f" | cut -d/ -f2)
    case $from in *.*) from=base ;; esac
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while read -r inc; do
      case $inc in
        */*) to=${inc%%/*} ;;
        *) [ -f "$inc" ] && to=base || continue ;;  # lib/TOP.hpp; else a file beside $f
      esac
      [ -d "$to" ] || [ "$to" = base ] || continue  # not a folder of lib/ (a system header)
      [ "$to" = "$from" ] || echo "$from->$to ${f#./}"
    done
  done
)
fail=0
allowed=0
while read -r edge file; do
  [ -n "$edge" ] || continue
  from=${edge%%->*} to=${edge##*->}
  rf=$(rank "$from") rt=$(rank "$to")
  if [ "$rf" -lt 0 ] || [ "$rt" -lt 0 ]; then
    echo "layering: FAIL: lib/$file: folder '$from' or '$to' has no place in the order ($order)"
    fail=1
  elif [ "$rt" -lt "$rf" ]; then
    allowed=$((allowed + 1))
  else
    echo "layering: FAIL: lib/$file: $from includes $to, which is not below it ($order)"
    fail=1
  fi
done <<EOT
$edges
EOT
[ $fail -eq 0 ] || exit 1
echo "layering: PASS: $allowed includes, each downwards"
