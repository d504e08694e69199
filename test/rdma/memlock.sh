#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Registration beyond RLIMIT_MEMLOCK fails with NAA_ERR_NO_RESOURCES and a message naming
# `ulimit -l`. rdma-vm runs commands as root with no limit, so the client runs as nobody with
# 8 MiB, as on a cluster node with default limits; its files are copied to the guest's /tmp so
# that nobody can read them wherever the build lives.
set -eu
command -v setpriv > /dev/null || { echo "setpriv (util-linux) is missing" >&2; exit 77; }
. "$NAA_SRCDIR/test/integration/lib.sh"
start_server
dir=$(mktemp -d /tmp/naa-memlock-XXXXXX)
cp "$NAA_EXAMPLES/.libs/vecadd" "$dir/"
cp -L "$(dirname "$NAA_TOOLS")/lib/.libs/libnaa.so.0" "$dir/"
# The verbs module beside it (none where the transports are built into libnaa): a libnaa
# outside its build tree loads modules from NAA_MODULE_DIR.
module="$(dirname "$NAA_TOOLS")/lib/.libs/libnaa-verbs.so"
[ ! -e "$module" ] || cp -L "$module" "$dir/"
chmod -R a+rX "$dir"
rc=0
NAA_MODULE_DIR=$dir NAA_TRANSPORT=verbs NAA_SPEC="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2" LD_LIBRARY_PATH=$dir \
  setpriv --reuid=65534 --regid=65534 --clear-groups bash -c "ulimit -l 8192; exec $dir/vecadd 2000000" \
  > "$naa_test_dir/out" 2>&1 || rc=$?
cat "$naa_test_dir/out"
rm -rf "$dir"
[ $rc -ne 0 ] || { echo "vecadd succeeded although 16 MiB exceed an 8 MiB memlock limit" >&2; exit 1; }
grep -q "the locked-memory limit is 8192 KiB: raise it with \`ulimit -l unlimited\`" "$naa_test_dir/out"
grep -q "naa_create failed: .*(8)" "$naa_test_dir/out"
