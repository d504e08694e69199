#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The code examples of the man pages (.Bd -literal blocks) and of README.md and doc/*.md
# (```c and ```fortran blocks) as a reader copies them: every complete C program (one with
# main) is compiled against the build and run against a real naa-server, whose NAA_SPEC
# serves every built-in kernel with its number of inputs; every Fortran block is compiled
# (with `use naa`, inside a program) against the module, and run when it offloads: without
# a failed call (NAA_STATS' errors), which catches a kernel called with the wrong inputs. C fragments, which need the
# declarations around them, are counted, not built. (doc/quickstart.md's program is also run
# against an installation by test/install/quickstart.sh.)
set -eu
. "$NAA_SRCDIR/test/integration/lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "doc_examples: SKIP: python3 is not installed"; exit 77; }
cc=${CC:-cc}
# A sanitizer build's libnaa links only into programs built with the same -fsanitize flags.
san=${NAA_SANITIZE_FLAGS:-}
dir=$naa_test_dir/examples
mkdir -p "$dir"
python3 - "$NAA_SRCDIR" "$dir" <<'PY'
import glob, os, re, sys
src, out = sys.argv[1:]
def roff(text):
    for a, b in (("\\e", "\\"), ("\\(aq", "'"), ("\\-", "-"), ("\\&", ""), ("\\(dq", '"')):
        text = text.replace(a, b)
    return text
blocks = []  # (where, language, text)
for page in sorted(glob.glob(os.path.join(src, "man", "*.[1-9]"))):
    lines, block, start = open(page).read().split("\n"), None, 0
    for n, line in enumerate(lines, 1):
        if line.startswith(".Bd -literal"):
            block, start = [], n
        elif line.startswith(".Ed") and block is not None:
            text = roff("\n".join(block)) + "\n"
            lang = "c" if "#include" in text or re.search(r"\bnaa_\w+\(", text) and ";" in text else \
                   "fortran" if re.search(r"^\s*(use naa|type\(naa_)", text, re.M) else None
            if lang:
                blocks.append(("%s:%d" % (os.path.relpath(page, src), start), lang, text))
            block = None
        elif block is not None:
            block.append(line)
for md in [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "doc", "*.md"))):
    lines, block, start, lang = open(md).read().split("\n"), None, 0, None
    for n, line in enumerate(lines, 1):
        m = re.match(r"```(\w+)", line)
        if block is None and m:
            block, start, lang = [], n, m.group(1)
        elif block is not None and line.startswith("```"):
            if lang in ("c", "fortran"):
                blocks.append(("%s:%d" % (os.path.relpath(md, src), start), lang, "\n".join(block) + "\n"))
            block = None
        elif block is not None:
            block.append(line)
with open(os.path.join(out, "list"), "w") as listing:
    for i, (where, lang, text) in enumerate(blocks):
        kind = "fortran" if lang == "fortran" else "program" if re.search(r"\bint main\s*\(", text) else "fragment"
        name = "ex%03d.%s" % (i, "f90" if kind == "fortran" else "c")
        open(os.path.join(out, name), "w").write(text)
        listing.write("%s %s %s\n" % (name, kind, where))
PY
# Every built-in kernel of naa-server, with its number of inputs (naa-server --list-kernels).
start_server
spec="$NAA_TEST_HOST:$NAA_TEST_PORT:10:2,$NAA_TEST_HOST:$NAA_TEST_PORT:1:1,$NAA_TEST_HOST:$NAA_TEST_PORT:2:1"
spec="$spec,$NAA_TEST_HOST:$NAA_TEST_PORT:3:1,$NAA_TEST_HOST:$NAA_TEST_PORT:11:3,$NAA_TEST_HOST:$NAA_TEST_PORT:12:3"
fmod=$(find "$NAA_BUILDDIR" -name naa.mod -print -quit 2>/dev/null || :)
failed=0 programs=0 fortran=0 fragments=0
while read -r name kind where; do
  case $kind in
    program)
      programs=$((programs + 1))
      if ! $cc $san -std=c11 -Wall -Werror -I"$NAA_SRCDIR/include" -o "$dir/${name%.c}" "$dir/$name" \
        -L"$NAA_BUILDDIR/lib/.libs" -lnaa >"$dir/$name.log" 2>&1; then
        echo "doc_examples: FAIL: the program of $where does not build:"; cat "$dir/$name.log"; failed=1; continue
      fi
      if LD_LIBRARY_PATH=$NAA_BUILDDIR/lib/.libs NAA_SPEC=$spec NAA_TIMEOUT=60 "$dir/${name%.c}" \
        >"$dir/$name.out" 2>&1; then
        echo "doc_examples: $where: built and ran"
      else
        echo "doc_examples: FAIL: the program of $where exited with $? against naa-server:"; cat "$dir/$name.out"; failed=1
      fi ;;
    fortran)
      fortran=$((fortran + 1))
      if [ -z "$fmod" ] || ! command -v gfortran >/dev/null 2>&1; then
        echo "doc_examples: $where: Fortran not built, not compiled"; continue
      fi
      { echo "program example"; echo "use, intrinsic :: iso_c_binding"; echo "use naa"
        grep -v '^ *use naa *$' "$dir/$name"; echo "end program example"; } >"$dir/prog_$name"
      if ! gfortran $san -I"$(dirname "$fmod")" -o "$dir/${name%.f90}" "$dir/prog_$name" \
        -L"$NAA_BUILDDIR/lib/.libs" -lnaaf -lnaa >"$dir/$name.log" 2>&1; then
        echo "doc_examples: FAIL: the Fortran of $where does not compile:"; cat "$dir/$name.log"; failed=1; continue
      fi
      # A block that offloads runs, and must have done so without a failed call: a call of a
      # kernel with the wrong inputs is counted among NAA_STATS' errors.
      if ! grep -q "naa_create" "$dir/$name"; then echo "doc_examples: $where: Fortran compiles"; continue; fi
      if LD_LIBRARY_PATH=$NAA_BUILDDIR/lib/.libs NAA_SPEC=$spec NAA_TIMEOUT=60 NAA_STATS=1 \
        "$dir/${name%.f90}" >"$dir/$name.out" 2>&1 && grep -q "errors: none" "$dir/$name.out" &&
        grep -q "function 10 .* [1-9][0-9]* invocations" "$dir/$name.out"; then
        echo "doc_examples: $where: Fortran compiles and offloads"
      else
        echo "doc_examples: FAIL: the Fortran of $where does not offload cleanly:"; cat "$dir/$name.out"; failed=1
      fi ;;
    fragment) fragments=$((fragments + 1)) ;;
  esac
done <"$dir/list"
echo "doc_examples: $programs C programs built and run, $fortran Fortran blocks compiled (run where they offload), $fragments C fragments counted (not buildable alone)"
[ "$programs" -ge 2 ] || { echo "doc_examples: FAIL: found $programs C programs, expected at least naa_create(3)'s and the quick start's"; failed=1; }
exit $failed
