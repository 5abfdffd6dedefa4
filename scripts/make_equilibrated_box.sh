#!/usr/bin/env bash
# Regenerate the equilibrated water boxes that `halox build water` tiles (data/water_<model>.gro)
# with halox itself. The next build embeds them in the library (CMake generates
# water_boxes.c in the build tree with src/build/gen/embed_water_boxes.c).
#
#   scripts/make_equilibrated_box.sh [HALOX] [MODELS...]
#
# HALOX: the halox program (default build/halox); MODELS: default "spce spc tip3p".
# Needs python3 (analysis). Deterministic: fixed seeds and a fixed thread
# count (halox md is bit-reproducible for the same input, seed and --threads).
#
# Per model, 1000 molecules at the model's density, RF with eps_rf = infinity, rc = 1.0 nm:
#   1. lattice with random orientations   halox build water --lattice --seed 2024
#   2. 1 ps,  dt 0.5 fs, v-rescale tau 0.01 ps, velocities drawn at 300 K: removes the hot
#      contacts of the lattice (H atoms of neighbours within 0.14 nm) while the thermostat takes
#      the released energy out; a generous fixed pair list (rlist 1.2, every 5 steps) because
#      the atoms move fast here
#   3. 2 ps,  dt 1 fs,   v-rescale tau 0.05 ps
#   4. 30 ps, dt 2 fs,   v-rescale tau 0.1 ps at 300 K; energies every 0.2 ps, frames every 1 ps
# Stages 3 and 4 use a fixed rlist (1.1, 1.2 nm) rather than one from the buffer tolerance so
# that no pair inside the cut-off is ever missing from the list (halox md warns if one is).
# The configuration shipped is the last frame of stage 4 whose smallest O-O distance is at least
# 0.235 nm (normally the final one), so that the builder's 0.23 nm guarantee survives the small
# rescaling it applies. The script prints the averages over the last 20 ps of stage 4.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"

halox="${1:-$root/build/halox}"
shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(spce spc tip3p)
threads="${HALOX_EQ_THREADS:-4}"
work="$(mktemp -d "${TMPDIR:-/tmp}/halox_eq.XXXXXX")"
echo "working in $work (halox: $halox, $threads threads)"

# The models run side by side (each with $threads threads; set HALOX_EQ_THREADS).
run_model() {
    local m="$1" d="$work/$1"
    mkdir -p "$d"
    (
        cd "$d"
        "$halox" build water --lattice --model "$m" --atoms 3000 --seed 2024 -o lattice.gro \
            > build.out
        common=(--model "$m" --rc 1.0 --eps-rf 0 --thermostat v-rescale --ref-t 300
                --threads "$threads")
        "$halox" md -c lattice.gro -o s1.gro -g s1.log -e s1.json --nstenergy 100 \
            "${common[@]}" --steps 2000 --dt 0.0005 --tau-t 0.01 --gen-vel 300 --seed 1 \
            --rlist 1.2 --nstlist 5 > s1.out 2>&1
        "$halox" md -c s1.gro -o s2.gro -g s2.log -e s2.json --nstenergy 100 \
            "${common[@]}" --steps 2000 --dt 0.001 --tau-t 0.05 --seed 2 \
            --rlist 1.1 --nstlist 10 > s2.out 2>&1
        "$halox" md -c s2.gro -o s3.gro -g s3.log -e s3.json --nstenergy 100 \
            "${common[@]}" --steps 15000 --dt 0.002 --tau-t 0.1 --seed 3 \
            --rlist 1.2 --nstlist 10 --nstxout 500 -x s3_traj.gro > s3.out 2>&1
    )
    echo "$m: MD done"
}
pids=()
for m in "${models[@]}"; do
    run_model "$m" &
    pids+=($!)
done
for p in "${pids[@]}"; do
    wait "$p" || { echo "MD failed; logs in $work" >&2; exit 1; }
done

python3 - "$root" "$work" "${models[@]}" <<'PY'
import glob, json, math, os, sys

root, work, models = sys.argv[1], sys.argv[2], sys.argv[3:]

def frames(path):
    with open(path) as f:
        lines = f.read().splitlines()
    i = 0
    while i < len(lines):
        title, n = lines[i], int(lines[i + 1])
        atoms = lines[i + 2:i + 2 + n]
        box = [float(v) for v in lines[i + 2 + n].split()[:3]]
        yield title, atoms, box
        i += n + 3

def min_oo(atoms, box):
    o = [[float(a[20 + 8 * k:28 + 8 * k]) for k in range(3)] for a in atoms if a[10:15].strip() == "OW"]
    nc = [max(1, int(b / 0.3)) for b in box]
    cells = {}
    for i, x in enumerate(o):
        c = tuple(int(x[d] / box[d] % 1.0 * nc[d]) % nc[d] for d in range(3))
        cells.setdefault(c, []).append(i)
    best = min(box)
    for c, members in cells.items():
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in (-1, 0, 1):
                    nb = ((c[0] + dx) % nc[0], (c[1] + dy) % nc[1], (c[2] + dz) % nc[2])
                    for i in members:
                        for j in cells.get(nb, []):
                            if j <= i:
                                continue
                            r2 = 0.0
                            for d in range(3):
                                t = o[i][d] - o[j][d]
                                t -= box[d] * round(t / box[d])
                                r2 += t * t
                            best = min(best, math.sqrt(r2))
    return best

os.makedirs(f"{root}/data", exist_ok=True)
summary = []
for m in models:
    d = f"{work}/{m}"
    # energy lines only: halox md starts the file with a metadata line (docs/energy-file.md)
    e = [r for r in map(json.loads, open(f"{d}/s3.json")) if "halox_energy_file" not in r]
    late = [r for r in e if r["time"] >= 10.0 - 1e-9]
    nmol = 1000
    mean = lambda k: sum(r[k] for r in late) / len(late)
    sd = lambda k: math.sqrt(sum((r[k] - mean(k)) ** 2 for r in late) / len(late))
    first = [r for r in late if r["time"] < 20.0 - 1e-9]
    second = [r for r in late if r["time"] >= 20.0 - 1e-9]
    half = lambda rs: sum(r["potential"] for r in rs) / len(rs) / nmol
    chosen = None
    for title, atoms, box in frames(f"{d}/s3_traj.gro"):
        dmin = min_oo(atoms, box)
        if dmin >= 0.235:
            chosen = (title, atoms, box, dmin)
    if chosen is None:
        sys.exit(f"{m}: no frame of stage 4 has min O-O >= 0.235 nm")
    title, atoms, box, dmin = chosen
    out = f"{root}/data/water_{m}.gro"
    with open(out, "w") as f:
        f.write(f"halox equilibrated water {m} 1000 molecules 300 K ({title.strip()})\n")
        f.write(f"{len(atoms)}\n")
        for a in atoms:
            f.write(a[:44] + "\n")
        f.write("".join(f"{b:10.5f}" for b in box) + "\n")
    s = (f"{m}: last 20 ps: T {mean('temperature'):.1f} +- {sd('temperature'):.1f} K, "
         f"potential {mean('potential') / nmol:.2f} kJ/mol/molecule "
         f"(10-20 ps {half(first):.2f}, 20-30 ps {half(second):.2f}); shipped frame "
         f"'{title.strip()}' min O-O {dmin:.4f} nm -> {out}")
    print(s)
    summary.append(s)

PY

echo "rebuild halox to embed the new boxes in the library (its build generates water_boxes.c)"
