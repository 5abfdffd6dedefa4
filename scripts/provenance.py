#!/usr/bin/env python3
"""Provenance of a benchmark result: the "meta" object of bench/results/*.json.

Usage:
    scripts/provenance.py [--command "exact command line"] [--build-dir DIR] [--repo DIR]

prints the meta object as JSON (format: docs/results-format.md). Benchmark drivers import
it instead:

    sys.path.insert(0, "<repo>/scripts"); import provenance
    meta = provenance.collect(command=..., build_dir=...)
    provenance.write_json_atomic(path, {"meta": meta, "runs": runs})

Every probe is optional: a tool that is not installed gives null, never an error, because the
same script runs on CPU-only CI machines and on GPU hosts. Standard library only.
"""

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile


def _run(args, cwd=None, timeout=30):
    """stdout+stderr of a command, or None when it is missing or fails."""
    if shutil.which(args[0]) is None:
        return None
    try:
        p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if p.returncode != 0:
        return None
    return (p.stdout + p.stderr).strip()


def git_revision(repo):
    """Full hash of HEAD, with "-dirty" appended when tracked files differ from it.

    Untracked files do not count: they are not part of what is measured unless someone adds
    them, and build directories are untracked (ignored) anyway.
    """
    head = _run(["git", "-C", repo, "rev-parse", "HEAD"])
    if head is None:
        return None
    # --untracked-files=no: only modifications to tracked files (staged or not) make it dirty.
    status = _run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"])
    if status:
        head += "-dirty"
    return head


def cpu_info():
    model = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if model is None:
        model = platform.processor() or platform.machine() or "unknown"
    cores = os.cpu_count()
    # Cores this process may run on (a container or taskset can restrict it below cpu_count).
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = cores
    return model, cores, usable


def nvidia():
    """(gpu names, driver) from nvidia-smi, or (None, None) when there is no NVIDIA GPU."""
    out = _run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    if not out:
        return None, None
    names, drivers = [], set()
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2:
            names.append(parts[0])
            drivers.add(parts[1])
    if not names:
        return None, None
    # Same model on every GPU is the usual case: "NVIDIA H200" or "4x NVIDIA H200".
    if len(set(names)) == 1:
        gpu = names[0] if len(names) == 1 else f"{len(names)}x {names[0]}"
    else:
        gpu = "; ".join(names)
    return gpu, ", ".join(sorted(drivers))


def cuda_version():
    out = _run(["nvcc", "--version"])
    if not out:
        return None
    m = re.search(r"release [^\n]*", out)
    return m.group(0) if m else out.splitlines()[-1]


def mpi_version():
    out = _run(["mpirun", "--version"])
    return out.splitlines()[0].strip() if out else None


def gromacs_version(gmx="gmx"):
    out = _run([gmx, "--version"])
    if not out:
        return None
    fields = {}
    for line in out.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip()] = v.strip()
    ver = fields.get("GROMACS version")
    if ver is None:
        return out.splitlines()[0].strip()
    extra = [
        f"{fields[k]} {label}".strip()
        for k, label in (("Precision", "precision"), ("SIMD instructions", "SIMD"))
        if k in fields
    ]
    return f"{ver} ({', '.join(extra)})" if extra else ver


def compiler(build_dir=None):
    """The C compiler of a CMake build directory if given, else the default `cc`."""
    cc = None
    if build_dir:
        try:
            with open(os.path.join(build_dir, "CMakeCache.txt"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("CMAKE_C_COMPILER:"):
                        cc = line.split("=", 1)[1].strip()
                        break
        except OSError:
            pass
    out = _run([cc or "cc", "--version"])
    return out.splitlines()[0].strip() if out else None


def collect(command=None, build_dir=None, repo=None, gmx="gmx"):
    repo = repo or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if command is None:
        command = " ".join(shlex.quote(a) for a in sys.argv)
    model, cores, usable = cpu_info()
    gpu, driver = nvidia()
    cpu = f"{model} ({cores} logical cores"
    cpu += f", {usable} usable)" if usable != cores else ")"
    return {
        "git_revision": git_revision(repo),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": socket.gethostname(),
        "cpu": cpu,
        "cpu_cores": usable,
        "gpu": gpu,
        "driver": driver,
        "cuda": cuda_version(),
        "nvshmem": None,
        "mpi": mpi_version(),
        "gromacs": gromacs_version(gmx),
        "compiler": compiler(build_dir),
        "command": command,
    }


def write_json_atomic(path, obj):
    """Write JSON so that readers see the old file or the complete new one, never a part."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp.", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--command", help="the exact command line measured (default: this one)")
    ap.add_argument("--build-dir", help="CMake build directory (its C compiler is reported)")
    ap.add_argument("--repo", help="git work tree (default: the one this script lives in)")
    ap.add_argument("--gmx", default="gmx", help="GROMACS binary to report (default gmx)")
    ap.add_argument("-o", "--output", help="write to this file (atomically) instead of stdout")
    a = ap.parse_args()
    meta = collect(command=a.command, build_dir=a.build_dir, repo=a.repo, gmx=a.gmx)
    if a.output:
        write_json_atomic(a.output, meta)
    else:
        json.dump(meta, sys.stdout, indent=2)
        sys.stdout.write("\n")


if __name__ == "__main__":
    main()
