# SPDX-License-Identifier: BSD-3-Clause
"""The Spack recipe (contrib/spack) against configure, without Spack.

    python3 check_recipe.py SRCDIR

Loads SRCDIR/contrib/spack/spack_repo/<ns>/packages/libnaa/package.py with stand-ins for
the two modules it imports from Spack (spack.package, and AutotoolsPackage, whose
with_or_without and enable_or_disable follow Spack's), then checks that:
  - the repository is laid out as package API v2 wants it (repo.yaml: namespace, api v2.0);
  - every line is at most 99 columns (Spack's style) and the file compiles;
  - for every combination of the boolean variants that requires() and conflicts() allow,
    configure_args() passes only --with-*/--without-*/--enable-*/--disable-* options that
    configure knows (and NAME=value for configure's precious variables, PYTHON=...),
    in the polarity of the variant of the same name, and passes explicitly every option that
    configure otherwise auto-detects ("default: check" / "default: when ..." in its --help),
    so nothing on the build host is picked up behind Spack's back;
  - every variant reaches configure as the option of its name;
  - the newest release version is the version of AC_INIT (configure --version), with a
    sha256, beside a "main" branch version, and the autotools come only for @main;
  - ~libfabric ~verbs is refused by a conflicts() with a message (Spack 1.x prints it first);
  - no dependency is declared twice with different types under conditions that can hold
    together: Spack 1.1's solver fails ("internal error") on a virtual (pkgconfig) that is a
    build dependency under one condition and a test dependency under another when both hold
    for the root of spack install --test=root. Not knowing which names are virtual, the
    checker holds every dependency to it: one declaration with all its types;
  - contrib/spack/README.md's table row of each variant quotes (in backticks) the spec of
    every depends_on() whose condition is that variant alone, so the versions it states
    (libfabric's, Python's) are the recipe's;
  - license("BSD-3-Clause"), maintainers, at least one stand-alone test_* method, none of
    which reads CC from the environment (Spack 1.x sets none for them).
The stand-ins only record what the recipe declares: a name the recipe takes from spack.package
that they lack fails here as a NameError, to be added if Spack exports it.
Exit status 0 when all hold, 1 with one line per disagreement.
"""
import glob
import itertools
import os
import re
import subprocess
import sys
import types

MAX_COLUMNS = 99
AUTOTOOLS = ("autoconf", "automake", "libtool", "m4")
OPTION = re.compile(r"^--(with|without|enable|disable)-([A-Za-z0-9_-]+)(=.*)?$")


WHEN = []  # the constraints of the enclosing "with when(...)" blocks


class Directives:
    """What the recipe's class body declared, in order."""

    def __init__(self):
        self.calls = []

    def record(self, name):
        def directive(*args, **kwargs):
            when = " ".join(WHEN + [kwargs["when"]] if "when" in kwargs else WHEN)
            self.calls.append((name, args, dict(kwargs, when=when) if when else kwargs))

        return directive

    def of(self, name):
        return [(args, kwargs) for n, args, kwargs in self.calls if n == name]


DIRECTIVES = Directives()


class When:
    def __init__(self, spec):
        self.spec = spec

    def __enter__(self):
        WHEN.append(self.spec)

    def __exit__(self, *exc):
        WHEN.pop()


class FakeSpec:
    """A concretized spec as far as configure_args() looks at it."""

    def __init__(self, variants, version="main"):
        self.variants_on = variants  # name -> bool
        self.version = version

    def satisfies(self, constraint):
        return all(self._one(c) for c in constraint.split())

    def _one(self, c):
        if c.startswith("+"):
            return self.variants_on.get(c[1:], False)
        if c.startswith("~"):
            return not self.variants_on.get(c[1:], False)
        if c.startswith("@"):
            return c[1:] == str(self.version)
        raise ValueError(f"the checker cannot evaluate the constraint {c!r}")

    def __contains__(self, constraint):
        return self.satisfies(constraint)

    def __getitem__(self, name):
        prefix = f"/spack/opt/{name}"
        return types.SimpleNamespace(prefix=prefix,
                                     command=types.SimpleNamespace(path=f"{prefix}/bin/{name}"))


class AutotoolsPackage:
    def __init__(self, spec):
        self.spec = spec

    def _activation(self, name, activation_value):
        if activation_value is None:
            return ""
        if activation_value == "prefix":
            return f"={self.spec[name].prefix}"
        return f"={activation_value(name)}"

    def with_or_without(self, name, activation_value=None, variant=None):
        if self.spec.satisfies(f"+{variant or name}"):
            return [f"--with-{name}{self._activation(name, activation_value)}"]
        return [f"--without-{name}"]

    def enable_or_disable(self, name, activation_value=None, variant=None):
        if self.spec.satisfies(f"+{variant or name}"):
            return [f"--enable-{name}{self._activation(name, activation_value)}"]
        return [f"--disable-{name}"]


def install_stand_ins():
    package = types.ModuleType("spack.package")
    for name in ("version", "variant", "depends_on", "conflicts", "requires", "license",
                 "maintainers", "patch", "provides", "resource", "extends"):
        setattr(package, name, DIRECTIVES.record(name))
    package.when = When
    package.run_after = package.run_before = lambda *a, **k: (lambda f: f)
    for name in ("which", "join_path", "install_test_root", "cache_extra_test_sources",
                 "Executable"):
        setattr(package, name, lambda *a, **k: None)
    package.SkipTest = type("SkipTest", (Exception,), {})
    package.__all__ = [n for n in vars(package) if not n.startswith("_")]
    autotools = types.ModuleType("spack_repo.builtin.build_systems.autotools")
    autotools.AutotoolsPackage = AutotoolsPackage
    for name in ("spack", "spack_repo", "spack_repo.builtin", "spack_repo.builtin.build_systems"):
        sys.modules[name] = types.ModuleType(name)
    sys.modules["spack.package"] = package
    sys.modules["spack_repo.builtin.build_systems.autotools"] = autotools


def run_configure(configure, option):
    p = subprocess.run([configure, option], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"spack-recipe: FAIL: {configure} {option} failed: {p.stderr.strip()}")
    return p.stdout


def configure_options(configure):
    """{(kind, name): auto-detected?} from configure --help, kind 'with' or 'enable'."""
    text = run_configure(configure, "--help=short")
    options, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^  --(with|without|enable|disable)-([a-z0-9_-]+)(\S*)\s*(.*)$", line)
        if m:
            kind = "with" if m.group(1) in ("with", "without") else "enable"
            current = (kind, m.group(2))
            options[current] = m.group(4)
        elif current and re.match(r"^\s{10,}\S", line):
            options[current] += " " + line.strip()
        else:
            current = None
    return {k: bool(re.search(r"\(default: (check|when)\b", " ".join(v.split())))
            for k, v in options.items()}


def configure_variables(configure):
    """The precious variables configure's --help lists ("Some influential environment
    variables"), which may be passed as NAME=value."""
    text = run_configure(configure, "--help")
    part = text.split("Some influential environment variables:", 1)[-1]
    return set(re.findall(r"^  ([A-Z_][A-Z0-9_]*)\s", part, re.M))


def configure_version(configure):
    first = run_configure(configure, "--version").splitlines()[0]
    return first.split()[-1]  # "libnaa configure 0.1.0"


def dependency_name(spec):
    return re.match(r"[A-Za-z0-9_-]+", spec).group(0)


def dependency_types(kw):
    t = kw.get("type", ("build", "link"))  # Spack's default
    return frozenset([t] if isinstance(t, str) else t)


def can_hold_together(a, b):
    """Whether two when= conditions (conjunctions of +v, ~v, @version) can both hold. A term
    the checker does not evaluate is taken as one that can hold."""
    terms = a.split() + b.split()
    for t in terms:
        if t.startswith("+") and "~" + t[1:] in terms:
            return False
    versions = {t for t in terms if re.fullmatch(r"@[A-Za-z0-9_.-]+", t)}
    return len(versions) <= 1


def dependency_type_clashes(depends):
    """One line per pair of declarations of a dependency with different types whose
    conditions can hold together."""
    clashes = []
    for (a, akw), (b, bkw) in itertools.combinations(depends, 2):
        if dependency_name(a[0]) != dependency_name(b[0]):
            continue
        if dependency_types(akw) == dependency_types(bkw):
            continue
        if can_hold_together(akw.get("when", ""), bkw.get("when", "")):
            clashes.append(
                f"depends_on({a[0]!r}) is declared with type {sorted(dependency_types(akw))} "
                f"(when {akw.get('when') or 'always'!r}) and with type "
                f"{sorted(dependency_types(bkw))} (when {bkw.get('when') or 'always'!r}): "
                "Spack 1.1's solver fails on a virtual given two types for the root of "
                "--test=root; declare it once with all its types")
    return clashes


def readme_disagreements(readme, depends, variants):
    """The variant table of contrib/spack/README.md against the recipe's depends_on()."""
    rows = {}
    for line in readme.splitlines():
        m = re.match(r"^\|\s*`([a-z0-9_-]+)`\s*\|", line)
        if m:
            rows[m.group(1)] = re.findall(r"`([^`]*)`", line)
    problems = [f"contrib/spack/README.md has no table row for the variant {v}"
                for v in variants if v not in rows]
    for args, kw in depends:
        m = re.fullmatch(r"\+([a-z0-9_-]+)", kw.get("when", ""))
        if m and m.group(1) in rows and args[0] not in rows[m.group(1)]:
            problems.append(f"contrib/spack/README.md's row for {m.group(1)} does not quote "
                            f"`{args[0]}`, the recipe's depends_on() for +{m.group(1)}")
    return problems


def version_key(v):
    return tuple(int(x) for x in v.split("."))


def check(srcdir):
    errors = []
    pattern = "contrib/spack/spack_repo/*/packages/libnaa/package.py"
    recipes = glob.glob(os.path.join(srcdir, pattern))
    if len(recipes) != 1:
        return [f"expected one {pattern}, found {recipes}"]
    recipe = recipes[0]
    repo_dir = os.path.dirname(os.path.dirname(os.path.dirname(recipe)))
    namespace = os.path.basename(repo_dir)
    repo_yaml = open(os.path.join(repo_dir, "repo.yaml")).read()
    if not re.search(rf"^\s+namespace:\s*'?{re.escape(namespace)}'?\s*$", repo_yaml, re.M):
        errors.append(f"repo.yaml: the namespace is not {namespace!r}, the directory's name")
    if not re.search(r"^\s+api:\s*v2\.0\s*$", repo_yaml, re.M):
        errors.append("repo.yaml: no 'api: v2.0' (package API v2)")

    source = open(recipe).read()
    for n, line in enumerate(source.splitlines(), 1):
        if len(line) > MAX_COLUMNS:
            errors.append(f"package.py:{n}: {len(line)} columns (at most {MAX_COLUMNS})")
    install_stand_ins()
    namespace_vars = {"__name__": "recipe"}
    exec(compile(source, recipe, "exec"), namespace_vars)
    cls = namespace_vars["Libnaa"]

    configure = os.path.join(srcdir, "configure")
    known = configure_options(configure)
    variables = configure_variables(configure)
    ac_version = configure_version(configure)

    variants = [args[0] for args, kw in DIRECTIVES.of("variant")]
    for args, kw in DIRECTIVES.of("variant"):
        if not isinstance(kw.get("default"), bool):
            errors.append(f"variant {args[0]}: the checker covers boolean variants only")
    any_of = [[s.lstrip("+") for s in args] for args, kw in DIRECTIVES.of("requires")
              if kw.get("policy") == "any_of"]
    # conflicts("~a ~b", msg=...): at least one of a, b, as requires(any_of) would say, but
    # with the recipe's message first in Spack 1.x's error.
    refused = []
    for args, kw in DIRECTIVES.of("conflicts"):
        words = args[0].split()
        if all(w.startswith("~") for w in words):
            refused.append(sorted(w[1:] for w in words))
            if not kw.get("msg"):
                errors.append(f"conflicts({args[0]!r}) has no msg= to say why")
    any_of += refused
    if ["libfabric", "verbs"] not in refused:
        errors.append('~libfabric ~verbs is not refused by conflicts("~libfabric ~verbs", msg=) '
                      "(a requires() puts Spack's words before the recipe's message)")
    reached, combos, per_combo = set(), 0, {}  # per_combo: problem -> combinations
    for values in itertools.product((False, True), repeat=len(variants)):
        on = dict(zip(variants, values))
        if any(not any(on.get(v) for v in group) for group in any_of):
            continue  # refused by requires(..., policy="any_of")
        combos += 1
        combo = " ".join(("+" if on[v] else "~") + v for v in variants)
        problems = []
        args = cls(FakeSpec(on)).configure_args()
        passed = set()
        for arg in args:
            m = OPTION.match(arg)
            var = re.match(r"^([A-Z_][A-Z0-9_]*)=", arg)
            if var and var.group(1) in variables:
                continue  # a precious variable (PYTHON=...)
            if not m:
                problems.append(f"{arg!r} is not a --with/--enable style option")
                continue
            positive = m.group(1) in ("with", "enable")
            kind = "with" if m.group(1) in ("with", "without") else "enable"
            name = m.group(2)
            passed.add((kind, name))
            if (kind, name) not in known:
                problems.append(f"configure has no --{kind}-{name} (passed {arg})")
            if name in on:
                reached.add(name)
                if positive != on[name]:
                    problems.append(f"{arg} contradicts the variant {name}")
        for (kind, name), auto in sorted(known.items()):
            if auto and (kind, name) not in passed:
                problems.append(f"configure would auto-detect --{kind}-{name}: "
                                f"the recipe must pass it")
        for problem in problems:
            per_combo.setdefault(problem, []).append(combo)
    for problem, where in per_combo.items():
        where = f"all {combos}" if len(where) == combos else ", ".join(where)
        errors.append(f"{problem} (variant combinations: {where})")
    for v in variants:
        if v not in reached:
            errors.append(f"variant {v} never reaches configure as --with/--enable-{v}")

    branches = [a[0] for a, kw in DIRECTIVES.of("version") if "branch" in kw]
    releases = {a[0]: kw for a, kw in DIRECTIVES.of("version") if "branch" not in kw}
    if "main" not in branches:
        errors.append('no version("main", branch="main")')
    if not releases:
        errors.append("no release version")
    else:
        newest = max(releases, key=version_key)
        if newest != ac_version:
            errors.append(f"the newest release version is {newest}, configure.ac's AC_INIT "
                          f"says {ac_version}")
        for v, kw in releases.items():
            if not re.fullmatch(r"[0-9a-f]{64}", kw.get("sha256", "")):
                errors.append(f"version {v} has no sha256 checksum")
    for args, kw in DIRECTIVES.of("depends_on"):
        if args[0].split("@")[0] in AUTOTOOLS and "@main" not in kw.get("when", ""):
            errors.append(f"depends_on({args[0]!r}) is not limited to @main: release "
                          f"tarballs carry configure")
    errors += dependency_type_clashes(DIRECTIVES.of("depends_on"))
    readme = os.path.join(srcdir, "contrib", "spack", "README.md")
    errors += readme_disagreements(open(readme).read(), DIRECTIVES.of("depends_on"), variants)
    if [a for a, kw in DIRECTIVES.of("license")] != [("BSD-3-Clause",)]:
        errors.append('no license("BSD-3-Clause") (the LICENSE file)')
    if not any(args for args, kw in DIRECTIVES.of("maintainers")):
        errors.append("no maintainers()")
    if re.search(r"environ(\[|\.get\()[\"']CC[\"']", source):
        errors.append("a stand-alone test reads CC from the environment, which Spack 1.x does "
                      "not set (spack-packages#5616): use Executable(self[\"c\"].cc)")
    if not [n for n in vars(cls) if n.startswith("test_") and callable(getattr(cls, n))]:
        errors.append("no stand-alone test (a test_* method)")
    print(f"spack-recipe: {os.path.relpath(recipe, srcdir)}: versions {branches} + "
          f"{sorted(releases)} (AC_INIT: {ac_version}), variants {variants}, "
          f"{combos} variant combinations against {len(known)} configure options "
          f"({sum(known.values())} auto-detected)")
    return errors


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    errors = check(sys.argv[1])
    for e in errors:
        print(f"spack-recipe: FAIL: {e}")
    if errors:
        return 1
    print("spack-recipe: the recipe agrees with configure and the package API v2 layout")
    return 0


if __name__ == "__main__":
    sys.exit(main())
