# SPDX-License-Identifier: BSD-3-Clause
"""Every example block of the man pages (.Bd -literal) and of README.md and doc/*.md (``` fences),
as a reader copies it, built and run against the naa-server that doc_examples.sh started.

What a block is follows from its language or from a marker on the line before it (roff:
`.\\" example: SPEC`; Markdown: `<!-- example: SPEC -->`); a page may set the default of its
blocks without one (`<!-- examples: SPEC -->`). SPEC is a kind, then options after commas:
  program             a complete C, C++ or Python program: built and run
  WRAPPER             a fragment, built inside WRAPPER (WRAPPERS below says what each supplies),
                      and run
  session             a shell session of the man pages' kind: the `$ ` lines run, the rest is
                      output; `$ echo $?` followed by N is the status the command before ends with
  shell               shell commands, run
  text                no code: output, a syntax, a diagram, a file's lines
  not run: WHY        code that cannot run here (another host, Slurm, an installation, minutes);
                      the options its naa-server, naa-bench, naa-info and naa-trace command lines
                      give must be listed by that tool's --help (unless the page set the marker)
Options: `not run: WHY` (a fragment is built, not run), `shows a failure` (the example's point
is a failed call: NAA_STATS must count one), VAR=VALUE (set for the run).
Without a marker: C/C++ with main is a program, Fortran is built inside a program (and run when
it calls naa_create), Python runs, ```sh runs, ```text is text; any other block fails the test,
so that an example nobody checks cannot come in. Blocks with the same text run once.

Programs run with NAA_SPEC naming every built-in kernel of the test's naa-server with its
number of inputs, the examples' ports 12345 and 12346 replaced by its port, and NAA_STATS=1:
a call that failed (a kernel called with the wrong inputs) fails the example. The shell blocks
of a page run in order in one bash in a directory of their own (a server one block starts
serves the next), with naa-server, naa-info, naa-bench and naa-trace of the build first in PATH
./vecadd the build's example and ./libmykernels.so the test suite's kernel library: a naa-server started on 12345 or 12346 takes a free port
(--port 0 and a ready file the script waits for) that the page's later commands get instead;
a naa-server in the foreground serves for 2 s (times NAA_TEST_TIME_SCALE; timeout's status 124
is its success), on a free port where the example names none."""
import glob, hashlib, os, re, subprocess, sys

src, out, port = sys.argv[1], sys.argv[2], sys.argv[3]
env = dict(os.environ)
build, examples = env["NAA_BUILDDIR"], env["NAA_EXAMPLES"]
libs = os.path.join(build, "lib", ".libs")
san = env.get("NAA_SANITIZE_FLAGS", "").split()
scale = float(env.get("NAA_TEST_TIME_SCALE", "1") or 1)
spec = ",".join("127.0.0.1:%s:%s" % (port, f) for f in ("10:2", "1:1", "2:1", "3:1", "11:3", "12:3"))
run_env = dict(env, NAA_SPEC=spec, NAA_TIMEOUT="60", NAA_STATS="1",
               LD_LIBRARY_PATH=libs + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else ""))

C_HEAD = """#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <naa.h>
#define N 1000
static double a[N], b[N], c[N];
static size_t n = N;
static bool give_up = true;
static void do_other_work(void) {}
static void consume(int i) { (void)i; }
int main(void)
{
"""
PARAMS = """    naa_param_t in[2] = {{a, sizeof a, false}, {b, sizeof b, false}}, out[1] = {{c, sizeof c, false}};
    naa_param_t in2[2] = {{a, sizeof a, false}, {b, sizeof b, false}}, out2[1] = {{c, sizeof c, false}};
"""
# WRAPPER: (language, text before the fragment, text after it)
WRAPPERS = {
    # inside main, with buffers a, b, c of n doubles, do_other_work(), consume(i), give_up
    "c-main": ("c", C_HEAD, "    return 0;\n}\n"),
    # ... and in/out (and in2/out2) for function code 10
    "c-params": ("c", C_HEAD + PARAMS, "    return 0;\n}\n"),
    # ... and naa_handle h = NAA_HANDLE_NULL, finalized afterwards when the fragment created it
    "c-null": ("c", C_HEAD + PARAMS + "    naa_handle h = NAA_HANDLE_NULL;\n",
               "    if (h.id != NAA_HANDLE_NULL.id)\n        naa_finalize(&h);\n    return 0;\n}\n"),
    # ... and h created for function code 10 before, finalized after
    "c-handle": ("c", C_HEAD + PARAMS + "    naa_handle h = NAA_HANDLE_NULL;\n"
                 "    if (naa_create(10, in, 2, out, 1, &h) != NAA_SUCCESS)\n        return 1;\n",
                 "    naa_finalize(&h);\n    return 0;\n}\n"),
    # ... and naa_handle h[2] (not created) and naa_status st
    "c-handles": ("c", C_HEAD + PARAMS + "    naa_handle h[2] = {NAA_HANDLE_NULL, NAA_HANDLE_NULL};\n    naa_status st;\n",
                  "    for (int k = 0; k < 2; k++)\n        if (h[k].id != NAA_HANDLE_NULL.id)\n"
                  "            naa_finalize(&h[k]);\n    return 0;\n}\n"),
    # a library for LD_PRELOAD: built as the block says, preloaded into examples/vecadd
    "c-preload": ("so", "", ""),
    # the reference middleware's header, with buffers a and b of n bytes
    "ap2-main": ("c", "#include <stdbool.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <naaice_ap2.h>\n"
                 "static double a[1000], b[1000];\nstatic const size_t n = sizeof a;\nint main(void)\n{\n",
                 "    return 0;\n}\n"),
    # ... and h, in, out as the ap2 page's first example makes them, finalized afterwards
    "ap2-handle": ("c", "#include <stdbool.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <naaice_ap2.h>\n"
                   "static double a[1000], b[1000];\nstatic const size_t n = sizeof a;\nint main(void)\n{\n"
                   "    struct naa_handle *h = calloc(1, sizeof(struct naa_handle));\n"
                   "    struct naa_param_t in[] = {{a, n, false}, {b, n, false}};\n"
                   "    struct naa_param_t out[] = {{a, n, false}};\n",
                   "    naa_finalize(h);\n    free(h);\n    return 0;\n}\n"),
    # C++: inside main, with n
    "cpp-main": ("cpp", "#include <cstdio>\n#include <vector>\n#include <naa.hpp>\nint main()\n{\n"
                 "    std::size_t n = 1000;\n", "    return 0;\n}\n"),
    # ... and std::vector<double> a, b, c of n elements
    "cpp-vectors": ("cpp", "#include <cstdio>\n#include <vector>\n#include <naa.hpp>\nint main()\n{\n"
                    "    std::size_t n = 1000;\n    std::vector<double> a(n), b(n), c(n);\n",
                    "    return 0;\n}\n"),
    # Python with numpy as np, naa and a buffer buf
    "py-buf": ("python", "import numpy as np\nimport naa\nbuf = np.zeros(8)\n", ""),
}

def roff(text):
    for x, y in (("\\e", "\\"), ("\\(aq", "'"), ("\\-", "-"), ("\\&", ""), ("\\(dq", '"')):
        text = text.replace(x, y)
    return text

blocks = []  # (where, language, text, marker)
by_page_default = set()  # the blocks whose marker is their page's
for page in sorted(glob.glob(os.path.join(src, "man", "*.[1-9]"))):
    if os.path.islink(page):  # another name of a page read already
        continue
    lines, block, start, marker = open(page).read().split("\n"), None, 0, None
    for n, line in enumerate(lines, 1):
        if line.startswith(".Bd -literal"):
            m = re.match(r'\.\\" example: (.*)', lines[n - 2]) if n > 1 else None
            block, start, marker = [], n, m.group(1).strip() if m else None
        elif line.startswith(".Ed") and block is not None:
            blocks.append(("%s:%d" % (os.path.relpath(page, src), start), "roff", roff("\n".join(block)) + "\n", marker))
            block = None
        elif block is not None:
            block.append(line)
for md in [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "doc", "*.md"))):
    text = open(md).read()
    m = re.search(r"<!-- examples: (.*?) -->", text)
    page_default = m.group(1).strip() if m else None
    lines, block, start, lang, marker = text.split("\n"), None, 0, None, None
    for n, line in enumerate(lines, 1):
        m = re.match(r"```(\w*)", line)
        if block is None and m:
            prev = next((l for l in reversed(lines[:n - 1]) if l.strip()), "")
            mm = re.match(r"<!-- example: (.*) -->$", prev.strip())
            block, start, lang = [], n, m.group(1)
            marker = mm.group(1).strip() if mm else page_default
            if not mm and page_default:
                by_page_default.add("%s:%d" % (os.path.relpath(md, src), n))
        elif block is not None and line.startswith("```"):
            blocks.append(("%s:%d" % (os.path.relpath(md, src), start), lang, "\n".join(block) + "\n", marker))
            block = None
        elif block is not None:
            block.append(line)

def classify(lang, text, marker):
    """(kind, wrapper, why-not-run, options) of a block, or (None, None, why, None) when it has
    none. Options follow the kind after commas: VAR=VALUE for the run's environment, "shows a
    failure" for an example whose point is a failed call (NAA_STATS must count one)."""
    opts = {"env": {}, "fails": False}
    if marker:
        if marker.startswith("not run:"):
            return "skip", None, marker[8:].strip(), opts
        kind, _, rest = marker.partition(",")
        why = None
        for o in filter(None, (x.strip() for x in rest.split(",") if not why)):
            if o.startswith("not run:"):
                why = rest[rest.index("not run:") + 8:].strip()
            elif o == "shows a failure":
                opts["fails"] = True
            elif re.match(r"^[A-Z_]+=\S*$", o):
                opts["env"].update([o.split("=", 1)])
            else:
                return None, None, "unknown option %r in marker %r" % (o, marker), None
        if kind in ("text", "session", "shell", "program"):
            return kind, None, why, opts
        if kind in WRAPPERS:
            return "fragment", kind, why, opts
        return None, None, "unknown marker %r" % marker, None
    if lang in ("c", "cpp", "roff") and "#include" in text and re.search(r"\bint main\s*\(", text):
        return "program", None, None, opts
    if lang == "fortran" or lang == "roff" and re.search(r"^\s*(use naa|type\(naa_)", text, re.M):
        return "fortran", None, None, opts
    if lang == "python":
        return "program", None, None, opts
    if lang in ("sh", "bash"):
        return "shell", None, None, opts
    if lang == "text":
        return "text", None, None, opts
    return None, None, "no marker, and not a program (.\\\" example: or <!-- example: -->)", None

EXAMPLE_PORTS = ("12345", "12346")

def ports(text, port):
    """A program's text with the examples' ports replaced by the test server's."""
    for p in EXAMPLE_PORTS:
        text = text.replace(p, port)
    return text

def run(cmd, log, **kw):
    with open(log, "w") as f:
        return subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=kw.pop("env", run_env), **kw).returncode

def clean_run(cmd, log, opts=None, **kw):
    """Runs a program; its failure, or a failed call among NAA_STATS' errors (none where the
    example shows a failure), is an error text."""
    opts = opts or {"env": {}, "fails": False}
    rc = run(cmd, log, env=dict(kw.pop("env", run_env), **opts["env"]), **kw)
    text = open(log).read()
    if rc != 0:
        return "exited with %d:\n%s" % (rc, text)
    bad = [l for l in text.split("\n") if re.search(r": errors:", l) and not l.endswith("errors: none")]
    if opts["fails"]:
        return None if bad else "shows a failure, but no call failed (NAA_STATS):\n%s" % text
    return "a call failed (NAA_STATS):\n%s" % text if bad else None

def build_c(lang, path, exe, log, shared=False):
    compiler = [env.get("CXX", "c++"), "-std=c++17"] if lang == "cpp" else [env.get("CC", "cc")]
    if lang == "c" and not shared:  # a library for LD_PRELOAD is built as its comment says
        compiler.append("-std=c11")
    flags = ["-Wall", "-Werror", "-Wno-unused-variable", "-Wno-unused-but-set-variable", "-Wno-unused-function"]
    extra = ["-shared", "-fPIC"] if shared else []
    return run(compiler + san + flags + extra + ["-I" + os.path.join(src, "include"), "-o", exe, path,
                                                 "-L" + libs, "-lnaa"], log)

TOOLS = ("naa-server", "naa-info", "naa-bench", "naa-trace")

def tool_path(tool):
    """naa-trace is a script of the sources, the others programs of the build."""
    return os.path.join(src if tool == "naa-trace" else build, "tools", tool, tool)

help_texts = {}

def unknown_options(text):
    """The options that the tools' command lines in text give and their --help does not list:
    an example that cannot run here still names only options that exist."""
    bad = []
    for line in re.sub(r"\\\n", " ", text).split("\n"):
        line = re.sub(r"^\S*\$ ", "", line)  # a session's prompt
        for m in re.finditer(r"(?:^|[;&|(]\s*)(?:\w+=\S*\s+)*(%s)(?=\s|$)([^|;&#]*)" % "|".join(TOOLS), line):
            tool = m.group(1)
            if tool not in help_texts:
                help_texts[tool] = subprocess.run([tool_path(tool), "--help"], capture_output=True,
                                                  text=True, env=run_env).stdout
            for o in re.findall(r"(?:^|\s)(--?[A-Za-z][\w-]*)", m.group(2)):
                counts["options of commands not run, checked"] = counts.get("options of commands not run, checked", 0) + 1
                if not re.search(r"(^|[\s,\[])%s([\s,=\]]|$)" % re.escape(o), help_texts[tool], re.M):
                    bad.append("%s %s" % (tool, o))
    return bad

fmod = next(iter(glob.glob(os.path.join(build, "**", "naa.mod"), recursive=True)), None)
sessions = {}  # page -> [(where, script text)]
seen = {}
counts = {}
failed = []
for i, (where, lang, text, marker) in enumerate(blocks):
    kind, wrapper, why, opts = classify(lang, text, marker)
    digest = hashlib.sha1(text.encode()).hexdigest()
    if kind is None:
        failed.append("%s: %s" % (where, why))
        continue
    page = where.split(":")[0]
    if kind in ("program", "fragment", "fortran") and digest in seen:
        counts["the same as an example before"] = counts.get("the same as an example before", 0) + 1
        continue
    seen[digest] = where
    base = os.path.join(out, "ex%03d" % i)
    if kind == "skip":
        counts["not run"] = counts.get("not run", 0) + 1
        print("doc_examples: %s: not run: %s" % (where, why))
        # The page's own examples (not a development log's of the time) name existing options.
        bad = unknown_options(text) if where not in by_page_default else []
        if bad:
            failed.append("%s: options that --help does not list: %s" % (where, ", ".join(bad)))
        continue
    if kind == "text":
        counts["text"] = counts.get("text", 0) + 1
        continue
    if kind in ("shell", "session"):
        sessions.setdefault(page, []).append((where, kind, text))
        continue
    if kind == "fortran":
        counts["Fortran"] = counts.get("Fortran", 0) + 1
        if not fmod:
            print("doc_examples: %s: Fortran not built, not compiled" % where)
            continue
        body = "".join(l + "\n" for l in text.split("\n") if l.strip() != "use naa")
        open(base + ".f90", "w").write("program example\nuse, intrinsic :: iso_c_binding\nuse naa\n%send program example\n" % body)
        if run(["gfortran"] + san + ["-I" + os.path.dirname(fmod), "-o", base, base + ".f90",
                                     "-L" + libs, "-lnaaf", "-lnaa"], base + ".log"):
            failed.append("%s: the Fortran does not compile:\n%s" % (where, open(base + ".log").read()))
        elif "naa_create" in text:
            err = clean_run([base], base + ".out", opts)
            if err:
                failed.append("%s: the Fortran %s" % (where, err))
        continue
    if kind == "program" and lang == "python" or wrapper == "py-buf":
        counts["Python"] = counts.get("Python", 0) + 1
        if env.get("NAA_HAVE_PYTHON") != "yes":
            print("doc_examples: %s: the Python package or NumPy is missing, not run" % where)
            continue
        head = WRAPPERS[wrapper][1] if wrapper else ""
        open(base + ".py", "w").write(head + ports(text, port))
        err = None if why else clean_run([env["NAA_PYTHON"], base + ".py"], base + ".out", opts)
        if err:
            failed.append("%s: the Python %s" % (where, err))
        continue
    counts["C/C++"] = counts.get("C/C++", 0) + 1
    body = "\n".join(l for l in text.split("\n") if l.strip() != "...") + "\n"
    if kind == "program":
        lang_c = "cpp" if lang == "cpp" or "naa.hpp" in text else "c"
        code = body
    else:
        lang_c, head, tail = WRAPPERS[wrapper]
        code = head + "".join("    " + l + "\n" for l in body.rstrip("\n").split("\n")) + tail
    path = base + (".cpp" if lang_c == "cpp" else ".c")
    open(path, "w").write(code)
    exe = base + (".so" if lang_c == "so" else "")
    if build_c("c" if lang_c == "so" else lang_c, path, exe, base + ".log", shared=lang_c == "so"):
        failed.append("%s: does not build:\n%s" % (where, open(base + ".log").read()))
        continue
    if lang_c == "so" and san:
        why = "a sanitizer's runtime must be loaded before a preloaded library"
    if why:
        print("doc_examples: %s: built, not run: %s" % (where, why))
        continue
    if lang_c == "so":
        err = clean_run([os.path.join(examples, ".libs", "vecadd")], base + ".out", opts,
                        env=dict(run_env, LD_PRELOAD=exe))
        if not err and "invocations" not in open(base + ".out").read():
            err = "preloaded into examples/vecadd, printed nothing:\n" + open(base + ".out").read()
    else:
        err = clean_run([exe], base + ".out", opts)
    if err:
        failed.append("%s: %s" % (where, err))

# The shell blocks of each page, in order, in one bash in a directory of its own.
tools = os.path.join(out, "bin")
os.makedirs(tools, exist_ok=True)
for tool in TOOLS:
    with open(os.path.join(tools, tool), "w") as f:
        f.write('#!/bin/sh\nexec "%s" "$@"\n' % tool_path(tool))
    os.chmod(os.path.join(tools, tool), 0o755)

def command(line):
    """A command line as the page's script runs it: a naa-server that the example starts on
    12345 takes a free port instead (--port 0), written to a file the script waits for; later
    mentions of 12345 are that port ($__p12345, the test server's until then)."""
    serves = re.match(r"^(\w+=\S+\s+)*naa-server\b", line) and not re.search(r"--list-kernels|--help|--version", line)
    p = re.search(r"--port\s+(%s)\b" % "|".join(EXAMPLE_PORTS), line) if serves else None
    ready = re.search(r"--ready-file\s+(\S+)", line) if p else None
    ready = ready.group(1) if ready else ".ready-%d" % EXAMPLE_PORTS.index(p.group(1)) if p else None
    if p:
        opts = "--port 0" + ("" if "--ready-file" in line else " --ready-file " + ready)
        line = line[:p.start()] + opts + line[p.end():]
    for q in EXAMPLE_PORTS:
        line = line.replace(q, "${__p%s}" % q)
    if serves and line.split("#")[0].rstrip().endswith("&"):
        return line + ("\n__ready %s %s" % (ready, p.group(1)) if p else "")
    if serves:
        line = line.split("#")[0].rstrip()
        if not p:  # not on the default port, which another program may hold
            line += " --port 0"
        return "timeout %d " % max(2, round(2 * scale)) + line + " && __rc=0 || __rc=$?; [ $__rc = 124 ] || __fail $__rc 124"
    return line

for page, items in sessions.items():
    d = os.path.join(out, "page-" + re.sub(r"\W", "_", page))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "vecadd"), "w") as f:
        f.write('#!/bin/sh\nexec "%s" "$@"\n' % os.path.join(examples, "vecadd"))
    os.chmod(os.path.join(d, "vecadd"), 0o755)
    # The reader's own kernel library of the examples: the test suite's.
    if env.get("NAA_TEST_KERNEL_PLUGIN") and os.path.exists(env["NAA_TEST_KERNEL_PLUGIN"]):
        os.symlink(env["NAA_TEST_KERNEL_PLUGIN"], os.path.join(d, "libmykernels.so"))
    script = ["set -e",
              '__where=; __fail() { echo "doc_examples: FAIL: $__where: exit status $1, the page shows $2"; exit 1; }',
              "__ready() { i=0; until [ -s \"$1\" ]; do"
              ' i=$((i + 1)); [ $i -le %d ] ||' % max(600, round(600 * scale)) + ' { echo "naa-server did not start"; exit 1; }; sleep 0.1; done;'
              ' eval "__p$2=$(cat \"$1\")"; }'] + ["__p%s=%s" % (q, port) for q in EXAMPLE_PORTS] + [
              "trap 'kill $(jobs -p) 2>/dev/null || :; wait' EXIT"]
    for where, kind, text in items:
        counts["shell"] = counts.get("shell", 0) + 1
        script.append("__where=%s; echo \"== %s\"" % (where, where))
        if kind == "shell":
            script += [command(l) for l in text.rstrip("\n").split("\n")]
            continue
        lines = text.rstrip("\n").split("\n")
        cmds = []  # [command, expected status]
        for k, l in enumerate(lines):
            m = re.match(r"^\S*\$ (.*)", l)
            if not m:
                continue
            if m.group(1) == "echo $?" and cmds:
                cmds[-1][1] = lines[k + 1].strip()
            elif cmds and cmds[-1][0].endswith("\\"):
                cmds[-1][0] += "\n" + m.group(1)
            else:
                cmds.append([m.group(1), "0"])
        for c, expect in cmds:
            line = command(c)
            if line.startswith("timeout ") or c.rstrip().endswith("&") or c.startswith("export "):
                script.append(line)
            else:
                script.append("%s && __rc=0 || __rc=$?; [ $__rc = %s ] || __fail $__rc %s" % (line, expect, expect))
    path = os.path.join(d, "run.sh")
    open(path, "w").write("\n".join(script) + "\n")
    senv = dict(run_env, PATH=tools + ":" + env["PATH"])
    del senv["NAA_SPEC"]
    if run(["bash", path], path + ".log", cwd=d, env=senv):
        failed.append("%s: its shell examples fail:\n%s" % (page, open(path + ".log").read()))
    else:
        print("doc_examples: %s: %d shell example(s) ran" % (page, len(items)))

for f in failed:
    print("doc_examples: FAIL: " + f)
print("doc_examples: %d blocks: %s; %d failed" % (
    len(blocks), ", ".join("%s %d" % kv for kv in sorted(counts.items())), len(failed)))
sys.exit(1 if failed else 0)
