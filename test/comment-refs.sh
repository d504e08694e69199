#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Comments state a contract and why, not where it came from: no comment in lib/, tools/,
# include/, python/, examples/ or fortran/ names an issue (the word and its number, "#" or not)
# or a session (the word and its number), or carries a date (year-month, year-month-day):
# history belongs in the ChangeLog or doc/. In C and C++
# sources only the comments are read (a message may name a CVE); in Python and Fortran
# sources and scripts, every line that holds a comment or a docstring is.
srcdir=${NAA_SRCDIR:-$(dirname "$0")/..}
python=${NAA_PYTHON:-python3}
if ! command -v "$python" >/dev/null 2>&1; then
  echo "comment-refs: SKIP: no $python to read the sources with"
  exit 77
fi
exec "$python" - "$srcdir" <<'PY'
import os, re, sys

srcdir = sys.argv[1]
ref = re.compile(r'\b[Ii]ssues? #?[0-9]+|\b[Ss]ession [0-9]+\b|\b20[0-9]{2}-[01][0-9]\b')
c_like = ('.c', '.h', '.cpp', '.hpp', '.cc')
# C and C++: a comment, a string or character literal (skipped), anything else.
c_token = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def comments(path, text):
    """(line, text) of each comment of the file."""
    if path.endswith(c_like):
        for m in c_token.finditer(text):
            if m.group(0).startswith('/'):
                yield text.count('\n', 0, m.start()) + 1, m.group(0)
        return
    # Scripts, Python and Fortran: '#' and '!' comments and docstrings; a whole line is taken.
    in_doc = False
    for n, line in enumerate(text.split('\n'), 1):
        quotes = line.count('"""') + line.count("'''")
        if in_doc or quotes or re.search(r'(^|\s)[#!]', line):
            yield n, line
        if quotes % 2:
            in_doc = not in_doc


def sources():
    for top in ('lib', 'tools', 'include', 'python', 'examples', 'fortran'):
        for dirpath, dirs, files in os.walk(os.path.join(srcdir, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith(('.', '_', 'build')))
            for name in sorted(files):
                path = os.path.join(dirpath, name)
                if name.endswith(c_like + ('.py', '.pyi', '.sh', '.f90', '.F90')):
                    yield path
                elif '.' not in name:
                    with open(path, 'rb') as f:
                        if f.read(2) == b'#!':
                            yield path


bad = 0
for path in sources():
    with open(path, errors='replace') as f:
        text = f.read()
    for line, comment in comments(path, text):
        for m in ref.finditer(comment):
            rel = os.path.relpath(path, srcdir)
            at = line + comment.count('\n', 0, m.start())
            print(f'comment-refs: {rel}:{at}: "{m.group(0)}" in a comment')
            bad += 1
if bad:
    print(f'comment-refs: FAIL: {bad} issue, session or date reference(s) in comments: say the contract '
          'and why there, the history in the ChangeLog or doc/')
    sys.exit(1)
print('comment-refs: PASS: no issue, session or date in a comment of lib/, tools/, include/, '
      'python/, examples/ or fortran/')
PY
