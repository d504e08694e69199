#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# No NAA_LOG_* call carries a side effect in its arguments: NAA_LOG skips its arguments below
# NAA_LOG_LEVEL, so what they do would happen at some levels only. Flags the obvious ones in
# lib/ and tools/: increments, decrements, assignments, and calls that change state (a list of
# names below: dlerror clears the loader's error, unanswered doubles a pacing guard, and the
# container and atomic mutators). A value needed both for the line and for the behaviour is
# computed before the call.
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
python=${NAA_PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "log-args: SKIP: no $python to read the sources with"
  exit 77
fi
exec "$python" - "$srcdir" <<'PY'
import os, re, sys

srcdir = sys.argv[1]
call = re.compile(r'\bNAA_LOG(?:_ERROR|_WARN|_INFO|_DEBUG)?\s*\(')
mutating = re.compile(
    r'\+\+|--|(?<![=!<>+\-*/%&|^])=(?!=)|[+\-*/%&|^]=|<<=|>>='
    r'|\bdlerror\s*\(|(?:\.|->)(?:unanswered|store|exchange|fetch_\w+|push\w*|pop\w*|emplace\w*'
    r'|erase|insert|reset|release|clear|swap)\s*\(')
strings = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', re.S)
bad = 0
for top in ('lib', 'tools'):
    for dirpath, _, files in os.walk(os.path.join(srcdir, top)):
        for name in sorted(files):
            if not name.endswith(('.c', '.cpp', '.h', '.hpp')):
                continue
            path = os.path.join(dirpath, name)
            with open(path, errors='replace') as f:
                text = f.read()
            for m in call.finditer(text):
                if re.search(r'#\s*define\s+\S*$', text[max(0, m.start() - 40):m.start()]):
                    continue  # the macros' own definitions
                i, depth, quote = m.end(), 1, None
                while depth and i < len(text):
                    c = text[i]
                    if quote:
                        if c == '\\':
                            i += 1
                        elif c == quote:
                            quote = None
                    elif c in '"\'':
                        quote = c
                    elif c == '(':
                        depth += 1
                    elif c == ')':
                        depth -= 1
                    i += 1
                args = strings.sub('""', text[m.end():i - 1])
                found = mutating.search(args)
                if found:
                    line = text.count('\n', 0, m.start()) + 1
                    rel = os.path.relpath(path, srcdir)
                    print(f'log-args: {rel}:{line}: "{found.group(0)}" in the arguments of a log call')
                    bad += 1
if bad:
    print(f'log-args: FAIL: {bad} log call(s) with a side effect in their arguments')
    sys.exit(1)
print('log-args: PASS: no log call in lib/ or tools/ changes state in its arguments')
PY
