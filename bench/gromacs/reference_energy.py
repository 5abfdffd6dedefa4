#!/usr/bin/env python3
"""Independent double-precision energies of a rigid-water .gro, term by term.

    bench/gromacs/reference_energy.py CONF.gro [--rc 1.0] [--eps-rf 0] [--model spce]

A third opinion next to halox and GROMACS, written from the formulas, so that a disagreement
can be pinned on one term. Prints JSON (kJ/mol):

  lj             sum over O-O pairs r < rc of 4 eps ((s/r)^12 - (s/r)^6) minus its value at rc
  coulomb_pair   sum over non-excluded pairs r < rc of f q_i q_j (1/r + k_rf r^2 - c_rf)
  coulomb_excl   sum over excluded (intramolecular) pairs r < rc of f q_i q_j (k_rf r^2 - c_rf)
  coulomb_self   sum over atoms of -1/2 f c_rf q_i^2
  coulomb        coulomb_pair + coulomb_excl + coulomb_self   (= GROMACS "Coulomb (SR)")
  potential      lj + coulomb

with k_rf = (eps_rf - 1) / ((2 eps_rf + 1) rc^3) (k_rf = 1/(2 rc^3) for eps_rf = 0, i.e.
infinity), c_rf = 1/rc + k_rf rc^2 and f = 1/(4 pi eps0) in GROMACS units. Pairs are cut by
atom-atom distance (the Verlet-scheme convention), minimum image in a rectangular box.
Standard library only; a cell grid keeps 3000 atoms to a few seconds.
"""

import argparse
import json
import math
import sys

# 1/(4 pi eps0) in kJ mol^-1 nm e^-2 from the 2019 SI constants, as GROMACS 2022 derives it.
_EPS0 = 8.8541878128e-12 * 1e-9 * 1e3 / (1.602176634e-19**2 * 6.02214076e23)
ONE_4PI_EPS0 = 1.0 / (4.0 * math.pi * _EPS0)

# Same numbers as src/md/models.c and bench/gromacs/<model>.itp: (sigma_O, eps_O, q_O, q_H).
MODELS = {
    "spce": (0.316557, 0.650194, -0.8476, 0.4238),
    "spc": (0.316557, 0.650194, -0.82, 0.41),
    "tip3p": (0.315061, 0.636386, -0.834, 0.417),
}


def read_gro(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    n = int(lines[1].split()[0])
    xyz, names = [], []
    for k in range(n):
        line = lines[2 + k]
        names.append(line[10:15].strip())
        # Fixed columns: precision from the distance between the decimal points.
        p1 = line.index(".", 20)
        w = line.index(".", p1 + 1) - p1
        xyz.append(tuple(float(line[20 + i * w : 20 + (i + 1) * w]) for i in range(3)))
    box = [float(v) for v in lines[2 + n].split()[:3]]
    return names, xyz, box


def energies(names, xyz, box, rc, eps_rf, model):
    sig, eps, q_o, q_h = MODELS[model]
    n = len(xyz)
    if n % 3:
        raise SystemExit(f"{n} atoms is not a whole number of 3-site waters")
    for i, nm in enumerate(names):
        if (nm[0] == "O") != (i % 3 == 0):
            raise SystemExit(f"atom {i + 1} is {nm}: expected O H H order")
    if min(box) < 2.0 * rc:
        raise SystemExit(f"box {box} is shorter than 2 rc = {2 * rc}: minimum image breaks")
    q = [q_o if i % 3 == 0 else q_h for i in range(n)]
    k_rf = 0.5 / rc**3 if eps_rf == 0 else (eps_rf - 1.0) / ((2.0 * eps_rf + 1.0) * rc**3)
    c_rf = 1.0 / rc + k_rf * rc * rc
    f = ONE_4PI_EPS0
    rc2 = rc * rc
    s6 = sig**6
    lj_shift = 4.0 * eps * (s6 * s6 / rc**12 - s6 / rc**6)

    # Cell grid with cells >= rc: every pair within rc lies in the same or a neighbouring cell.
    nc = [max(1, int(b // rc)) for b in box]
    cells = {}
    for i, (x, y, z) in enumerate(xyz):
        c = tuple(int((v % b) / b * m) % m for v, b, m in zip((x, y, z), box, nc))
        cells.setdefault(c, []).append(i)
    offsets = sorted(
        {
            (dx % nc[0], dy % nc[1], dz % nc[2])
            for dx in (-1, 0, 1)
            for dy in (-1, 0, 1)
            for dz in (-1, 0, 1)
        }
    )
    lj = pair = excl = 0.0
    bx, by, bz = box
    for (cx, cy, cz), members in cells.items():
        for ox, oy, oz in offsets:
            other = cells.get(((cx + ox) % nc[0], (cy + oy) % nc[1], (cz + oz) % nc[2]))
            if not other:
                continue
            for i in members:
                xi, yi, zi = xyz[i]
                qi = q[i]
                for j in other:
                    if j <= i:  # each unordered pair once
                        continue
                    dx = xi - xyz[j][0]
                    dy = yi - xyz[j][1]
                    dz = zi - xyz[j][2]
                    dx -= bx * round(dx / bx)
                    dy -= by * round(dy / by)
                    dz -= bz * round(dz / bz)
                    r2 = dx * dx + dy * dy + dz * dz
                    if r2 >= rc2:
                        continue
                    qq = qi * q[j]
                    if i // 3 == j // 3:
                        excl += qq * (k_rf * r2 - c_rf)
                        continue
                    pair += qq * (1.0 / math.sqrt(r2) + k_rf * r2 - c_rf)
                    if i % 3 == 0 and j % 3 == 0:
                        ir6 = s6 / (r2 * r2 * r2)
                        lj += 4.0 * eps * (ir6 * ir6 - ir6) - lj_shift
    # With fewer than 3 cells along a dimension the offsets above repeat a cell; the set()
    # removed duplicates, so each cell pair is still visited once from each side and j > i keeps
    # one copy of each atom pair.
    self_term = -0.5 * c_rf * sum(v * v for v in q)
    out = {
        "lj": lj,
        "coulomb_pair": f * pair,
        "coulomb_excl": f * excl,
        "coulomb_self": f * self_term,
    }
    out["coulomb"] = out["coulomb_pair"] + out["coulomb_excl"] + out["coulomb_self"]
    out["potential"] = out["lj"] + out["coulomb"]
    out.update({"k_rf": k_rf, "c_rf": c_rf, "one_4pi_eps0": f, "atoms": n})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("conf")
    ap.add_argument("--rc", type=float, default=1.0)
    ap.add_argument("--eps-rf", type=float, default=0.0)
    ap.add_argument("--model", default="spce", choices=sorted(MODELS))
    a = ap.parse_args()
    names, xyz, box = read_gro(a.conf)
    json.dump(energies(names, xyz, box, a.rc, a.eps_rf, a.model), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
