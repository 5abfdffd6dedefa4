#!/usr/bin/env bash
# Install what is missing, build halox, and run the main job on a built-in default system:
# a 3000-atom SPC/E water box, its halo plan on 8 domains, and a short MD run over MPI on 2
# ranks (domain-decomposed, halo exchange by the MPI backend), with the timing table and, where
# gnuplot is installed, a plot of the energies.
#
#   scripts/quickstart.sh [build-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
out=${HALOX_OUT:-$here/out/quickstart}
jobs=$(nproc 2>/dev/null || echo 2)

"$here/scripts/setup.sh" --minimal
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j "$jobs" > /dev/null
halox=$build/halox
mkdir -p "$out"

echo "== halox plan: 3000-atom SPC/E box, 8 domains"
"$halox" plan --atoms 3000 --ranks 8

echo
echo "== halox build + md (2 MPI ranks)"
"$halox" build water --model spce --atoms 3000 --seed 1 -o "$out/water.gro"
mpirun_flags=()
if mpirun --version 2>/dev/null | grep -q "Open MPI"; then
    mpirun_flags=(--oversubscribe)
    [[ $(id -u) -eq 0 ]] && mpirun_flags+=(--allow-run-as-root)
fi
mpirun "${mpirun_flags[@]}" -np 2 "$halox" md -c "$out/water.gro" --steps 500 \
    --gen-vel 300 --seed 1 -o "$out/final.gro" -g "$out/md.log" \
    --energy "$out/energies.jsonl" --nstenergy 50
echo
tail -n 16 "$out/md.log"
echo
outputs="final.gro, energies.jsonl, md.log"
if command -v gnuplot > /dev/null; then
    python3 "$here/scripts/plot.py" energies "$out/energies.jsonl" \
        --title "quickstart: 3000-atom SPC/E, NVE, 2 ranks" -o "$out/energies.svg" > /dev/null
    outputs+=", energies.svg"
fi
echo "outputs in $out ($outputs)"
