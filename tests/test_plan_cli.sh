#!/usr/bin/env bash
# halox plan on the built-in box and on a .gro file: the JSON has the documented keys
# (docs/plan-json.md), exact strings and numbers, and consistent values (home atoms = atoms,
# sent = received per pulse, pulses_per_dim matches the pulse list, grid product = domains),
# the table prints, and bad options fail with their message.
#   test_plan_cli.sh <halox>
set -u
halox=$1
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
check
"$halox" plan --atoms 3000 --ranks 8 > table.txt 2>&1 || fail "plan table: $(tail -2 table.txt)"
grep -q "^grid " table.txt && grep -q "^halo/home" table.txt || fail "plan table lacks lines"
"$halox" build water --atoms 6000 --seed 2 -o w.gro > /dev/null || fail "build"
for args in "--atoms 3000 --dd 2x2x1" "--atoms 3000 --ranks 8" "-c w.gro --dd 3x2x1 --rc 0.9" \
    "-c w.gro --dd 4x1x1 --rc 0.9 --rlist 1.0" "-c w.gro --dd 1x1x1"; do
    # shellcheck disable=SC2086
    check
    "$halox" plan $args --json > plan.json 2> err.txt || {
        fail "plan $args: $(cat err.txt)"
        continue
    }
    python3 - "$args" << 'PY' || fail "plan $args: JSON check failed"
import json, sys
d = json.load(open('plan.json'))
args = sys.argv[1]
for k in ('grid', 'cell_size', 'r_comm', 'pulses_per_dim', 'pulses', 'home_atoms_total',
          'halo_atoms_total', 'domains', 'halo_to_home'):
    assert k in d, 'missing key ' + k
g = d['grid']
assert len(g) == 3 and g[0] * g[1] * g[2] == d['domains'], 'grid vs domains'
assert d['home_atoms_total'] == d['system']['atoms'], 'home atoms != atoms'
assert sum(d['pulses_per_dim']) == len(d['pulses']), 'pulse count'
for k, dim in enumerate('xyz'):
    n = sum(1 for p in d['pulses'] if p['dim'] == dim)
    assert n == d['pulses_per_dim'][k], 'pulses along ' + dim
    if g[k] == 1:
        assert n == 0, 'pulses along an undecomposed dimension'
    else:
        assert n >= 1 and d['cell_size'][k] * n >= d['r_comm'] - 1e-9, 'np*cell < r_comm'
for p in d['pulses']:
    assert p['send_atoms_total'] == p['recv_atoms_total'], 'sent != received'
    assert p['send_atoms_min'] <= p['send_atoms_avg'] <= p['send_atoms_max']
assert sum(p['recv_atoms_total'] for p in d['pulses']) == d['halo_atoms_total'], 'halo total'
assert d['r_comm'] >= d['rlist'] >= d['rc'], 'r_comm >= rlist >= rc'
print('ok  ', args, d['grid'], d['pulses_per_dim'], 'halo/home %.3f' % d['halo_to_home'])
PY
done
# JSON through cJSON: a title with quotes, a backslash, a tab, a byte that is not UTF-8 and
# a UTF-8 letter comes back as the exact string (the bad byte as U+FFFD); numbers read back
# as the exact doubles of the input (box from the .gro text, rc and rlist from the options).
check
{
    printf 'say "hi" \\ back\tslash \377 caf\303\251\n'
    tail -n +2 w.gro
} > title.gro
"$halox" plan -c title.gro --dd 2x1x1 --rc 0.9 --rlist 0.95 --json > title.json 2> err.txt ||
    fail "plan with an odd title: $(cat err.txt)"
python3 - << 'PY' || fail "plan JSON: title or numbers not exact"
import json
d = json.load(open('title.json', encoding='utf-8'))
want = 'say "hi" \\ back\tslash \ufffd caf\u00e9'
assert d['system']['title'] == want, 'title %r, expected %r' % (d['system']['title'], want)
box = [float(v) for v in open('title.gro', 'rb').read().splitlines()[-1].split()]
assert d['system']['box'] == box, 'box %r, .gro %r' % (d['system']['box'], box)
assert d['rc'] == 0.9 and d['rlist'] == 0.95, 'rc %r rlist %r' % (d['rc'], d['rlist'])
assert d['r_comm'] == d['rlist'] + d['molecule_radius'], 'r_comm %r' % d['r_comm']
assert all(isinstance(p['send_atoms_total'], int) for p in d['pulses']), 'integer counts'
PY
check
"$halox" plan --atoms 3000 --dd 2x1x1 --rc 1.4 --rlist 1.5 > bad.txt 2>&1 && fail "2 cells with r_comm > half the box accepted"
grep -q "too small" bad.txt || fail "2x1x1: $(head -2 bad.txt)"
check
"$halox" plan --atoms 3000 --dd 2q2 > bad.txt 2>&1 && fail "grid 2q2 accepted"
grep -q "AxBxC" bad.txt || fail "2q2: $(head -2 bad.txt)"
check
"$halox" plan -c nothere.gro > bad.txt 2>&1 && fail "missing file accepted"
grep -q "nothere.gro" bad.txt || fail "missing file: $(head -2 bad.txt)"
check
"$halox" plan --help | grep -q -- "--json" || fail "--help lacks --json"
# option values are checked, each with its own message (no nested or misleading geometry text)
# plan_bad NAME 'message' ARGS...: exit non-zero, the message, "error:" once
plan_bad() {
    local name=$1 frag=$2 before=$fails
    shift 2
    check
    "$halox" plan "$@" > bad.txt 2>&1 && fail "$name: accepted"
    grep -qF -- "$frag" bad.txt || fail "$name: message lacks '$frag': $(head -1 bad.txt)"
    [ "$(grep -o 'no domain grid' bad.txt | wc -l)" -le 1 ] ||
        fail "$name: the message is nested in itself: $(head -1 bad.txt)"
    [ $fails -eq $before ] && echo "ok   $name: $(head -1 bad.txt | cut -c1-150)"
}
plan_bad ranks-huge "no domain grid for 1000000 domains" --ranks 1000000
plan_bad rc-huge "the built-in box: the box (3.10742 x 3.10742 x 3.10742 nm) is too small for the cut-off 2 nm" --rc 2
plan_bad rc-negative "--rc -1: the cut-off must be positive" --rc -1
plan_bad ranks-zero "--ranks 0: the number of domains must be at least 1" --ranks 0
plan_bad ranks-negative "--ranks -3: the number of domains must be at least 1" --ranks -3
plan_bad rc-nan "expects a finite number" --rc nan
"$halox" build water --atoms 300 --seed 2 -o tiny.gro > /dev/null || fail "build tiny"
plan_bad file-named "tiny.gro: the box" -c tiny.gro --rc 0.9
plan_bad file-named-grid "tiny.gro: cells along x are too small" -c tiny.gro --rc 0.6 --dd 2x1x1
check
"$halox" plan --dd 1x1x1 > one.txt 2>&1 || fail "plan --dd 1x1x1: $(tail -1 one.txt)"
grep -q "= 1 domain$" one.txt || fail "one domain: $(grep '^grid' one.txt)"
finish test_plan_cli
