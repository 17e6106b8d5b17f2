#!/usr/bin/python3
"""The house's import rules, checked against Package.swift's module graph (scripts/test.sh runs it first).

    scripts/check-imports.py [PACKAGE-JSON]

Reads the graph from `swift package dump-package` (or PACKAGE-JSON, a saved copy of its output) and every
`import` in the targets' folders (Sources/, Tests/, and Fuzz/ for the fuzz targets), and fails, naming file, line
and rule, when:
  - a module imports a module of the package it does not declare as a dependency;
  - the domain core (WhereaboutsCore) imports anything but the standard library's own modules and the platform's C
    library (for libm);
  - the bus layer (Loop, DBus) imports a module of the package outside it but its C module: the event loop and the
    D-Bus binding know nothing of the domain (LoopScheduling joins the loop to the core's TimerScheduler);
  - a C module (a system or C target) is imported outside its one owner (the one module depending on it that is
    neither a test nor a fuzz target) and the tests and fuzz targets of that owner;
  - a module the daemon links imports Foundation (the daemon is kept to the standard library and small C
    libraries).
The graph is read with WHEREABOUTS_EXTRAS=1, so the benchmark programs and the fuzz targets are checked too.
Imports of the toolchain's modules (Glibc, Foundation, Testing, ...) need no declaration.
"""

import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLATFORM_C = {"Glibc", "Musl", "Darwin"}
TOOLCHAIN = {"Swift", "Foundation", "FoundationEssentials", "FoundationXML", "Synchronization", "Testing", "XCTest",
             "Dispatch", "_Concurrency"} | PLATFORM_C
CORE = "WhereaboutsCore"
# The standard library's modules, and the platform's C library for libm's functions.
CORE_MAY_IMPORT = {"Synchronization", "_Concurrency"} | PLATFORM_C
DAEMON = "whereaboutsd"
# The event loop and the D-Bus binding: nothing of the domain.
BUS_LAYER = {"Loop", "DBus"}
# Fuzz targets and their support module live here (Package.swift's fuzz block).
FUZZ_FOLDER = "Fuzz"
IMPORT = re.compile(r"^\s*(?:@testable\s+|@_implementationOnly\s+)?import\s+(?:(?:struct|class|enum|protocol|func|var|let|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)")


def package():
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as file:
            return json.load(file)
    environment = dict(os.environ, WHEREABOUTS_EXTRAS="1")
    output = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, check=True, capture_output=True, text=True,
                            env=environment)
    return json.loads(output.stdout)


def dependencies(target):
    names = set()
    for dependency in target["dependencies"]:
        for kind in ("byName", "target", "product"):
            if kind in dependency:
                names.add(dependency[kind][0])
    return names


def folder(target):
    if target.get("path"):
        return target["path"]
    return os.path.join("Tests" if target["type"] == "test" else "Sources", target["name"])


def is_test_or_fuzz_target(target):
    """Tests and fuzz targets, which may reach past a module into its C module."""
    return target["type"] == "test" or folder(target).split(os.sep)[0] == FUZZ_FOLDER


def swift_files(path):
    for directory, _folders, files in os.walk(os.path.join(ROOT, path)):
        for name in sorted(files):
            if name.endswith(".swift"):
                yield os.path.join(directory, name)


def main():
    targets = {target["name"]: target for target in package()["targets"]}
    declared = {name: dependencies(target) for name, target in targets.items()}
    c_modules = {name for name, target in targets.items()
                 if target["type"] == "system" or name.startswith("C") and not list(swift_files(folder(target)))}
    problems = []
    owners = {}
    for module in c_modules:
        users = [name for name, target in targets.items()
                 if not is_test_or_fuzz_target(target) and module in declared[name]]
        owners[module] = users
        if len(users) != 1:
            problems.append("Package.swift: C module %s has %d owners (%s), not one"
                            % (module, len(users), ", ".join(users) or "none"))
    for name in sorted(BUS_LAYER & set(targets)):
        for module in sorted(declared[name] - BUS_LAYER - c_modules):
            problems.append("Package.swift: %s depends on %s: the bus layer knows nothing of the domain" % (name, module))
    daemon_links = set()
    pending = [DAEMON]
    while pending:
        name = pending.pop()
        if name in daemon_links or name not in targets:
            continue
        daemon_links.add(name)
        pending.extend(declared[name])

    for name, target in sorted(targets.items()):
        for path in swift_files(folder(target)):
            with open(path, encoding="utf-8") as file:
                for number, line in enumerate(file, 1):
                    match = IMPORT.match(line)
                    if not match:
                        continue
                    module = match.group(1)
                    where = "%s:%d: %s imports %s" % (os.path.relpath(path, ROOT), number, name, module)
                    if module in targets and module not in declared[name]:
                        problems.append(where + ", which it does not declare as a dependency in Package.swift")
                    if name == CORE and module not in CORE_MAY_IMPORT:
                        problems.append(where + ": the domain core imports nothing but the standard library and libm")
                    if name in BUS_LAYER and module in targets and module not in BUS_LAYER | c_modules:
                        problems.append(where + ": the bus layer (%s) knows nothing of the domain"
                                        % ", ".join(sorted(BUS_LAYER)))
                    if module in c_modules:
                        owner = owners.get(module, [])
                        is_owner = name in owner
                        serves_owner = is_test_or_fuzz_target(target) and any(o in declared[name] for o in owner)
                        if len(owner) == 1 and not is_owner and not serves_owner:
                            problems.append(where + ": C module %s belongs to %s alone" % (module, owner[0]))
                    if name in daemon_links and module in ("Foundation", "FoundationEssentials"):
                        problems.append(where + ": the daemon links %s, and the daemon uses no Foundation" % name)
                    if module not in targets and module not in TOOLCHAIN:
                        problems.append(where + ", which is neither a module of the package nor the toolchain's")
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("check-imports: %d problem(s)" % len(problems), file=sys.stderr)
        return 1
    print("check-imports: %d modules, the house's import rules hold" % len(targets))
    return 0


sys.exit(main())
