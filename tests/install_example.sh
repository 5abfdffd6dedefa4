#!/usr/bin/env bash
# Install halox from a build tree into a scratch prefix, build examples/ against the installed
# package with find_package(halox), and run the example.
#   install_example.sh <build-dir> <source-dir>
set -euo pipefail
build=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/halox-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
cmake -S "$src/examples" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" ||
    { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$work/build/halo_exchange"
