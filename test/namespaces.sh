#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Namespaces follow folders: the C++ code of lib/FOLDER lives in naa::FOLDER (lib/transport/ofi
# in naa::transport::ofi, the files directly in lib/ in naa), or in a namespace nested in it.
# Read from the sources: every declaration inside a namespace block (an anonymous one counts
# as its parent) must be in the folder's namespace, except forward declarations of another
# namespace's classes, which a header may need to name them, and the definitions listed in
# `defines` below (a file that defines another folder's functions by design). Code outside any
# namespace (extern "C" entry points, macros) is not looked at.
# Checked for the folders in `done` below; the others are listed as left, until they move.
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
python=${NAA_PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "namespaces: SKIP: no $python to read the sources with"
  exit 77
fi
exec "$python" - "$srcdir" <<'PY'
import os, re, sys

srcdir = sys.argv[1]
lib = os.path.join(srcdir, 'lib')
done = ['', 'api', 'config', 'diag', 'energy', 'progress', 'protocol', 'rm', 'session', 'transport', 'transport/ofi', 'transport/ofi/shm', 'transport/verbs']
# Linked into each transport module in place of the core: the module's definitions of the
# core's log and wait-plan functions, forwarding to the program that loaded it.
defines = {'transport/module_host.cpp': {'naa::diag::log', 'naa'}}

token = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|^\s*#[^\n]*'
                   r'(?:\\\n[^\n]*)*', re.S | re.M)
opening = re.compile(r'\b(?:inline\s+)?namespace\s*([A-Za-z_][\w:]*)?\s*\{')
forward = re.compile(r'\b(?:class|struct|union)\s+\w+\s*;|\benum\s+(?:class\s+|struct\s+)?\w+'
                     r'\s*(?::\s*[\w:]+\s*)?;')


def namespace_of(folder):
    return '::'.join(['naa'] + ([p for p in folder.split('/')] if folder else []))


def check(path, expected):
    """The namespaces of `path` that hold more than forward declarations and are not
    `expected` or nested in it."""
    with open(path, errors='replace') as f:
        text = token.sub(lambda m: ' ' if not m.group(0).startswith('"') else '""', f.read())
    # stack entries: [namespace path or None for another brace, text directly inside]
    stack, bad, i = [], set(), 0
    current = lambda: next((e[0] for e in reversed(stack) if e[0] is not None), '')
    while i < len(text):
        m = opening.match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == '_')):
            name = m.group(1)
            parent = current()
            full = parent if not name else (parent + '::' + name if parent else name)
            stack.append([full, []])
            i = m.end()
            continue
        c = text[i]
        if c == '{':
            stack.append([None, None])
        elif c == '}':
            if stack:
                entry = stack.pop()
                if entry[0] is not None:
                    body = forward.sub(' ', ''.join(entry[1])).strip(' \t\n;')
                    if body and entry[0] != expected and not entry[0].startswith(expected + '::'):
                        bad.add(entry[0] or '(global anonymous)')
        elif stack:
            # Text directly inside the innermost namespace belongs to it; inside other braces,
            # to the namespace around them.
            for e in reversed(stack):
                if e[0] is not None:
                    e[1].append(c)
                    break
        i += 1
    return sorted(bad)


failures = 0
for folder in done:
    top = os.path.join(lib, folder)
    expected = namespace_of(folder)
    for name in sorted(os.listdir(top)):
        path = os.path.join(top, name)
        if not name.endswith(('.cpp', '.hpp')) or not os.path.isfile(path):
            continue
        for ns in check(path, expected):
            if ns in defines.get(os.path.join(folder, name), ()):
                continue
            print(f'namespaces: lib/{os.path.join(folder, name)}: code in {ns}, not in {expected}')
            failures += 1
folders = sorted(os.path.relpath(d, lib) for d, _, files in os.walk(lib)
                 if any(f.endswith(('.cpp', '.hpp')) for f in files))
folders = ['' if f == '.' else f for f in folders]
left = [f for f in folders if f not in done]
print('namespaces: not checked yet (code still outside naa::FOLDER): ' +
      (', '.join('lib/' + f for f in left) if left else 'none'))
if failures:
    print(f'namespaces: FAIL: {failures} file(s) with code outside their folder\'s namespace')
    sys.exit(1)
print('namespaces: PASS: ' + ', '.join(f'lib/{f} in {namespace_of(f)}' for f in done))
PY
