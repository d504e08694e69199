#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# lib/ is layered: a folder includes headers of the folders below it only. The order, lowest
# first (the files at lib/'s top, deadline.hpp, error.hpp and wait_plan.*, are "base"):
#   base, diag, protocol, config, energy, rm, transport, progress, session, api
# The include graph of the folders is derived from the sources (#include "FOLDER/..." and
# #include "TOP.hpp"); an edge upwards or sideways fails, unless it is one of the debts below,
# edges of today's tree that the order does not allow yet: each is to be removed by moving
# what it needs down (and then from this list), never added to.
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
order="base diag protocol config energy rm transport progress session api"
debts="
config->rm          config/settings.hpp and params.cpp use rm's resolver and spread checks
config->transport   config/params.hpp builds transport::TransportOptions
diag->config        diag/log.cpp reads its parameters from config/params
"
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
debt_used=""
while read -r edge file; do
  [ -n "$edge" ] || continue
  from=${edge%%->*} to=${edge##*->}
  rf=$(rank "$from") rt=$(rank "$to")
  if [ "$rf" -lt 0 ] || [ "$rt" -lt 0 ]; then
    echo "layering: FAIL: lib/$file: folder '$from' or '$to' has no place in the order ($order)"
    fail=1
  elif [ "$rt" -lt "$rf" ]; then
    allowed=$((allowed + 1))
  elif printf '%s\n' "$debts" | grep -q "^$edge "; then
    debt_used="$debt_used $edge"
  else
    echo "layering: FAIL: lib/$file: $from includes $to, which is not below it ($order)"
    fail=1
  fi
done <<EOT
$edges
EOT
# A debt paid (no include left on that edge) leaves the list too, so that it cannot come back.
for edge in $(printf '%s\n' "$debts" | awk 'NF {print $1}'); do
  case " $debt_used " in
    *" $edge "*) ;;
    *) echo "layering: FAIL: the debt $edge is paid (no such include left): remove it from the list"; fail=1 ;;
  esac
done
[ $fail -eq 0 ] || exit 1
echo "layering: PASS: $allowed includes downwards; debts still open:" \
  $(printf '%s\n' "$debts" | awk 'NF {print $1}')
