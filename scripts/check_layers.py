#!/usr/bin/env python3
"""Check the layering of halox's sources (docs/ARCHITECTURE.md, "The layers").

    scripts/check_layers.py [--root DIR] [--inject FILE:HEADER ...] [--graph]

Reads every `#include "..."` (and `#include <halox/...>`) of src/*/, include/halox/, app/ and
examples/, maps each included file to the folder (layer) that owns it, and fails (exit 1, one
line per finding) when
  - the folder graph has a cycle (printed as a path of folders and one include per edge);
  - a folder includes a folder above it in LAYERS (the documented order);
  - app/ or examples/ include a private header (anything but include/halox/ and their own
    files);
  - a header is unknown: a public header missing from PUBLIC, or a private path naming no folder;
  - MPI is included outside src/comm/mpi.c, or NVSHMEM outside src/comm/shmem.cu (the
    transport; the NVSHMEM halo backend, src/halo/nvshmem/, calls its wrappers).
Public headers count for the folder that implements them (PUBLIC below): including
halox/md.h is a dependency on src/md. Files under a subfolder (src/md/gpu/) belong to the top
folder (md).

--inject FILE:HEADER pretends that FILE also includes HEADER (e.g.
src/md/nonbonded.c:mdrun/md_impl.h), to show that a new wrong include is caught (the CTest test
check_layers_injected_cycle passes only when this check reports the injected cycle).
--graph prints the folder graph (who includes whom, with counts).
"""
import argparse
import os
import re
import sys

# The layers, lowest first: a folder may include its own files and those of folders before it.
LAYERS = ["core", "comm", "dd", "gpu", "halo", "md", "io", "mdrun", "build", "api", "app"]
# What each folder is, for the messages and --graph.
ROLE = {
    "core": "errors, logging, the system container, shared utilities",
    "comm": "the transport: communicators and collectives (serial, MPI)",
    "dd": "decomposition geometry, zones, plans, migration, the decomposition module",
    "gpu": "CUDA devices and the CUDA error macros",
    "halo": "the halo exchange: front end and backends (host, gpu-mpi, gpu-direct, nvshmem)",
    "md": "force field, interactions, constraints, the MD backends (CPU, GPU)",
    "io": "files: .gro, checkpoints, .mdp, topologies, output files, JSON",
    "mdrun": "the MD engine: start-up, the step schedule, the run loop and its output",
    "build": "system builders (water, argon, ethanol-water) and their relaxation",
    "api": "the umbrella header halox/halox.h",
    "app": "the halox program (public API only)",
}
# Public headers (include/halox/) and the folder that implements them.
PUBLIC = {
    "status.h": "core", "log.h": "core", "system.h": "core", "error.h": "core", "timer.h": "core",
    "version.h": "core",
    "comm.h": "comm",
    "dd.h": "dd", "plan.h": "dd", "migrate.h": "dd", "decomp.h": "dd",
    "gpu.h": "gpu",
    "halo.h": "halo",
    "md.h": "md", "models.h": "md",
    "io.h": "io", "checkpoint.h": "io", "files.h": "io", "json.h": "io",
    "build.h": "build",
    "halox.h": "api",
}
# Folders that may include public headers only (and their own files).
PUBLIC_ONLY = {"app", "examples"}
# The only files that may include these system headers.
SOLE_CALLER = [
    (re.compile(r"^mpi\.h$"), re.compile(r"^src/comm/mpi\.c$"), "MPI"),
    (re.compile(r"^nvshmem"), re.compile(r"^src/comm/shmem\.cu$"), "NVSHMEM"),
]
SOURCE_EXT = (".c", ".h", ".cu", ".cuh", ".cpp", ".h.in")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


def layer_of_file(rel):
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[0] == "include" and len(parts) == 3 and parts[1] == "halox":
        name = parts[2][:-3] if parts[2].endswith(".h.in") else parts[2]
        return PUBLIC.get(name)
    if parts[0] in ("app", "examples"):
        return parts[0]
    return None


def sources(root):
    for top in ("src", "include/halox", "app", "examples"):
        base = os.path.join(root, top)
        for d, _, files in os.walk(base):
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    yield os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/")


def target_layer(root, rel, kind, inc, errors):
    """The folder that owns the included file, or None for system headers."""
    if inc.startswith("halox/"):
        name = inc[len("halox/"):]
        if name not in PUBLIC:
            errors.append(f"{rel}: includes {inc}, a public header missing from PUBLIC in "
                          f"scripts/check_layers.py: add it with the folder that implements it")
            return None
        return PUBLIC[name]
    if kind == "<":
        return None
    first = inc.split("/")[0]
    if "/" in inc and os.path.isdir(os.path.join(root, "src", first)):
        return first
    # relative to the including file (same folder)
    if os.path.exists(os.path.join(root, os.path.dirname(rel), inc)):
        return layer_of_file(rel)
    if "/" not in inc:  # generated in the build tree next to its folder's sources, or cJSON etc.
        return None
    errors.append(f"{rel}: includes \"{inc}\", which names no folder of src/ and no file next to "
                  f"it")
    return None


def find_cycle(graph):
    """A cycle of the folder graph as a list of folders, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, {})):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--inject", action="append", default=[], metavar="FILE:HEADER")
    ap.add_argument("--graph", action="store_true")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    injected = {}
    for spec in a.inject:
        f, _, h = spec.partition(":")
        injected.setdefault(f, []).append(h)

    errors = []
    graph = {}  # layer -> {layer: [(file, include)]}
    nfiles = 0
    for rel in sources(root):
        src_layer = layer_of_file(rel)
        if src_layer is None:
            errors.append(f"{rel}: belongs to no layer (a new folder of src/ must be added to "
                          f"LAYERS, a new public header to PUBLIC)")
            continue
        nfiles += 1
        incs = []
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                m = INCLUDE.match(line)
                if m:
                    incs.append((m.group(1), m.group(2)))
        incs += [('"', h) for h in injected.pop(rel, [])]
        for kind, inc in incs:
            for pattern, allowed, what in SOLE_CALLER:
                if kind == "<" and pattern.search(inc) and not allowed.search(rel):
                    errors.append(f"{rel}: includes <{inc}>: only {allowed.pattern.strip('^$')} "
                                  f"may call {what}")
            dst = target_layer(root, rel, kind, inc, errors)
            if dst is None or dst == src_layer:
                continue
            if src_layer in PUBLIC_ONLY and not inc.startswith("halox/"):
                errors.append(f"{rel}: includes the private header \"{inc}\": {src_layer}/ uses "
                              f"the public API (include/halox) only")
            graph.setdefault(src_layer, {}).setdefault(dst, []).append((rel, inc))
    for f in injected:
        errors.append(f"--inject {f}: no such source file")

    cycle = find_cycle(graph)
    if cycle:
        edges = []
        for x, y in zip(cycle, cycle[1:]):
            f, inc = graph[x][y][0]
            edges.append(f"  {x} -> {y}: {f} includes {inc}")
        errors.append("include cycle between folders " + " -> ".join(cycle) + ":\n" +
                      "\n".join(edges))

    order = {name: i for i, name in enumerate(LAYERS)}
    for src_layer in sorted(graph):
        for dst, uses in sorted(graph[src_layer].items()):
            if src_layer in PUBLIC_ONLY:
                continue
            if src_layer not in order or dst not in order:
                errors.append(f"folder {src_layer or dst} is not in LAYERS")
            elif order[dst] > order[src_layer]:
                for f, inc in uses:
                    errors.append(f"{f}: includes {inc} ({dst}), a layer above {src_layer}: "
                                  f"the order is {' < '.join(LAYERS)}")

    if a.graph:
        for src_layer in sorted(graph, key=lambda n: order.get(n, len(order))):
            deps = ", ".join(f"{d} ({len(u)})" for d, u in
                             sorted(graph[src_layer].items(), key=lambda kv: order.get(kv[0], 0)))
            print(f"{src_layer:8s} -> {deps}")
    if errors:
        for e in errors:
            print("check_layers: " + e, file=sys.stderr)
        print(f"check_layers: FAILED: {len(errors)} finding(s) in {nfiles} files",
              file=sys.stderr)
        return 1
    print(f"check_layers: OK: {nfiles} files, {sum(len(v) for v in graph.values())} folder "
          f"dependencies, no cycle, order {' < '.join(LAYERS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
