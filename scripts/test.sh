#!/usr/bin/env bash
# Build halox and run every test: the README's test command and what CI runs.
#
#   scripts/test.sh [build-dir]          (default build-dir: build)
#
# Installs missing dependencies through scripts/setup.sh (Debian packages), configures with
# warnings as errors, builds, runs the whole CTest suite (CPU, MPI with several ranks, install,
# GROMACS comparisons). GPU tests are compiled when nvcc is present and report SKIPPED without a
# GPU.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
jobs=$(nproc 2>/dev/null || echo 2)

"$here/scripts/setup.sh"

cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DHALOX_WERROR=ON
cmake --build "$build" -j "$jobs"
cd "$build"
ctest --output-on-failure -j "$jobs" --timeout 900
