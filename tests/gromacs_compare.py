#!/usr/bin/env python3
"""Compare two sets of energies term by term; exit 1 (printing every failed term) on mismatch.

    gromacs_compare.py --label CASE [--rel R] [--abs A] [--terms lj,coulomb,potential]
                       [--scale-from REF.json] [--explain REF.json] [--all-steps]
                       TESTED REFERENCE

TESTED and REFERENCE are JSON objects with lj, coulomb, potential (kJ/mol), or JSON-lines
energy files (halox --energy, bench/gromacs/nve.sh): the line with step 0 is used, or with
--all-steps every step of REFERENCE (TESTED must have the same steps; a passing run prints one
line per term with the largest deviation over the steps).

A term passes when |tested - reference| <= rel * scale + abs, where scale = |reference| for lj,
kinetic and total, and |lj| + |coulomb| of the reference for potential (a small difference of
two large terms carries their absolute rounding errors, not a relative one of its own size).

--scale-from REF.json: a bench/gromacs/reference_energy.py decomposition of (about) the same
configuration; the Coulomb scale becomes |pair| + |excluded-pair| + |self| parts, because a
mixed-precision code's rounding error follows the size of those large, cancelling sums and not
the (possibly small) net Coulomb energy.

--explain REF.json: the same decomposition; on a Coulomb mismatch the difference is compared
with the excluded-pair and self terms so the message can say which convention differs (e.g.
"= -1 x coulomb_self: the tested code misses the self term").
"""

import argparse
import json
import sys


def load_frames(path):
    """{step: energies} from a JSON object (step 0) or a JSON-lines file."""
    with open(path, encoding="utf-8") as f:
        text = f.read().strip()
    if not text:
        sys.exit(f"{path}: empty")
    try:
        obj = json.loads(text)
        return {int(obj.get("step", 0)): obj}
    except json.JSONDecodeError:
        pass
    frames = {}
    for n, line in enumerate(text.splitlines(), 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"{path}:{n}: not JSON ({e})")
        if "halox_energy_file" in obj:
            continue  # the metadata line of a halox energy file (docs/energy-file.md)
        frames.setdefault(int(obj.get("step", 0)), obj)
    return frames


def explain(diff, ref):
    """Which convention term, or combination, the Coulomb difference looks like."""
    candidates = {
        "coulomb_self (the self term -1/2 c_rf q_i^2)": ref["coulomb_self"],
        "coulomb_excl (the excluded-pair correction k_rf r^2 - c_rf)": ref["coulomb_excl"],
        "coulomb_excl + coulomb_self (both exclusion-related terms)": ref["coulomb_excl"]
        + ref["coulomb_self"],
    }
    lines = []
    for name, v in candidates.items():
        for sign, word in ((1, "has extra"), (-1, "misses")):
            if v != 0 and abs(diff - sign * v) <= 1e-4 * abs(v) + 1e-3:
                lines.append(f"  tested - reference = {diff:.6f} = {sign:+d} x {name}: the "
                             f"tested code {word} that term")
    return lines


def check(term, t, r, a, coul_scale):
    """(diff, tol) for one term of one frame."""
    d = float(t[term]) - float(r[term])
    scale = abs(float(r[term]))
    if term == "coulomb" and coul_scale is not None:
        scale = max(scale, coul_scale)
    if term == "potential" and "lj" in r and "coulomb" in r:
        scale = abs(float(r["lj"])) + max(abs(float(r["coulomb"])), coul_scale or 0.0)
    return d, a.rel * scale + a.abs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--rel", type=float, default=1e-6)
    ap.add_argument("--abs", type=float, default=1e-3)
    ap.add_argument("--terms", default="lj,coulomb,potential")
    ap.add_argument("--explain")
    ap.add_argument("--scale-from")
    ap.add_argument("--all-steps", action="store_true")
    ap.add_argument("tested")
    ap.add_argument("reference")
    a = ap.parse_args()
    tf, rf = load_frames(a.tested), load_frames(a.reference)
    steps = sorted(rf) if a.all_steps else [0]
    missing = [s for s in steps if s not in tf or s not in rf]
    if missing:
        print(f"FAIL {a.label}: step(s) {missing[:10]} missing (tested has {len(tf)} steps, "
              f"reference {len(rf)})")
        sys.exit(1)
    coul_scale = None
    parts = None
    if a.scale_from:
        parts = next(iter(load_frames(a.scale_from).values()))
        coul_scale = sum(abs(parts[k]) for k in ("coulomb_pair", "coulomb_excl", "coulomb_self"))
    failed = 0
    for term in a.terms.split(","):
        worst = None  # (|diff|/tol, step, diff, tol)
        for s in steps:
            t, r = tf[s], rf[s]
            if term not in t or term not in r:
                side = "tested" if term not in t else "reference"
                print(f"FAIL {a.label}: term '{term}' missing at step {s} ({side} has "
                      f"{sorted(t if term not in t else r)})")
                failed += 1
                break
            d, tol = check(term, t, r, a, coul_scale)
            if abs(d) > tol:
                failed += 1
                rel = abs(d) / abs(float(r[term])) if r[term] else float("inf")
                print(f"FAIL {a.label}: step {s} {term:9s} tested {float(t[term]):.6f} reference "
                      f"{float(r[term]):.6f} diff {d:.3e} (rel {rel:.1e}, tol {tol:.3e})")
                if term == "coulomb" and a.explain:
                    for line in explain(d, next(iter(load_frames(a.explain).values()))):
                        print(line)
            if worst is None or abs(d) / tol > worst[0]:
                worst = (abs(d) / tol, s, d, tol)
        else:
            _, s, d, tol = worst
            if abs(d) <= tol:
                where = f" (worst at step {s} of {len(steps)})" if len(steps) > 1 else ""
                print(f"ok   {a.label}: {term:9s} tested {float(tf[s][term]):.6f} reference "
                      f"{float(rf[s][term]):.6f} diff {d:.3e} tol {tol:.3e}{where}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
