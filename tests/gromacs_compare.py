#!/usr/bin/env python3
"""Compare two sets of energies term by term; exit 1 (printing every failed term) on mismatch.

    gromacs_compare.py --label CASE [--rel R] [--abs A] [--terms lj,coulomb,potential]
                       [--scale-from REF.json] [--explain REF.json] TESTED REFERENCE

TESTED and REFERENCE are JSON objects with lj, coulomb, potential (kJ/mol), or JSON-lines
energy files (halox --energy): the line with step 0 is used. A term passes when
|tested - reference| <= rel * |reference| + abs.

--explain REF.json: a bench/gromacs/reference_energy.py decomposition; on a Coulomb mismatch the
difference is compared with the excluded-pair and self terms so the message can say which
convention differs (e.g. "difference = -coulomb_self: the tested code omits the self term").
"""

import argparse
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        text = f.read().strip()
    if not text:
        sys.exit(f"{path}: empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for n, line in enumerate(text.splitlines(), 1):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            sys.exit(f"{path}:{n}: not JSON ({e})")
        if obj.get("step", 0) == 0:
            return obj
    sys.exit(f"{path}: no line with step 0")


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--rel", type=float, default=1e-6)
    ap.add_argument("--abs", type=float, default=1e-3)
    ap.add_argument("--terms", default="lj,coulomb,potential")
    ap.add_argument("--explain")
    ap.add_argument("--scale-from")
    ap.add_argument("tested")
    ap.add_argument("reference")
    a = ap.parse_args()
    t, r = load(a.tested), load(a.reference)
    parts = load(a.scale_from) if a.scale_from else None
    coul_scale = None
    if parts:
        coul_scale = sum(abs(parts[k]) for k in ("coulomb_pair", "coulomb_excl", "coulomb_self"))
    failed = 0
    for term in a.terms.split(","):
        if term not in t or term not in r:
            print(f"FAIL {a.label}: term '{term}' missing "
                  f"({'tested' if term not in t else 'reference'} has {sorted(t if term not in t else r)})")
            failed += 1
            continue
        d = float(t[term]) - float(r[term])
        scale = abs(float(r[term]))
        if term == "coulomb" and coul_scale is not None:
            scale = max(scale, coul_scale)
        if term == "potential" and "lj" in r and "coulomb" in r:
            scale = abs(float(r["lj"])) + max(abs(float(r["coulomb"])), coul_scale or 0.0)
        tol = a.rel * scale + a.abs
        ok = abs(d) <= tol
        rel = abs(d) / abs(float(r[term])) if r[term] else float("inf")
        print(f"{'ok  ' if ok else 'FAIL'} {a.label}: {term:9s} tested {float(t[term]):.6f} "
              f"reference {float(r[term]):.6f} diff {d:.3e} (rel {rel:.1e}, tol {tol:.3e})")
        if not ok:
            failed += 1
            if term == "coulomb" and a.explain:
                for line in explain(d, load(a.explain)):
                    print(line)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
