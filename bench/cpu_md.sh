#!/usr/bin/env bash
# CPU MD benchmark, halox md against GROMACS on the same water box: see bench/README.md and
# `bench/cpu_md.sh --help`. The work is done by bench/cpu_md.py; this wrapper records the exact
# command line for the results' provenance.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HALOX_BENCH_COMMAND="$0$(printf ' %q' "$@")" exec python3 "$here/cpu_md.py" "$@"
