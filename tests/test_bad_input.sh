#!/usr/bin/env bash
# Bad input through the command line: every case must end with a message that names the input
# (file and line where there is one), what is wrong and what to change, a non-zero exit status,
# and no output file touched: an existing final configuration stays byte for byte as it was.
#   test_bad_input.sh <halox> <corpus_gro dir>
set -u
halox=$1
corpus=$2
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

"$halox" build water --atoms 1500 --seed 3 -o good.gro > /dev/null || {
    echo "FAIL: halox build"
    exit 1
}
echo "a good result" > out.gro
good_sum=$(cksum < out.gro)
echo "good energies" > energies.jsonl

# expect NAME 'message fragment' halox-args...
expect() {
    local name=$1 frag=$2
    shift 2
    check
    "$halox" "$@" > "$name.out" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then
        fail "$name: exit status 0"
    elif ! grep -qF -- "$frag" "$name.out"; then
        fail "$name: message lacks '$frag': $(head -2 "$name.out")"
    fi
    [ "$(cksum < out.gro)" = "$good_sum" ] || fail "$name: out.gro was overwritten"
    # an existing energy file is either untouched or kept as #energies.jsonl.N#
    grep -lq "good energies" energies.jsonl '#energies.jsonl.'*'#' 2> /dev/null ||
        fail "$name: the earlier energy file was lost"
    echo "ok   $name: $(head -1 "$name.out" | cut -c1-150)"
}

md=(md --steps 5 --rc 0.7 -o out.gro -e energies.jsonl)
# malformed .gro files, one per class (tests/fuzz/corpus_gro/bad_*)
expect empty ':1:' "${md[@]}" -c "$corpus/bad_empty.gro"
expect truncated 'bad_truncated.gro:' "${md[@]}" -c "$corpus/bad_truncated.gro"
expect column-width 'bad_short_line.gro:' "${md[@]}" -c "$corpus/bad_short_line.gro"
expect non-numeric 'is not a number' "${md[@]}" -c "$corpus/bad_non_numeric.gro"
expect atom-count 'bad_count.gro:' "${md[@]}" -c "$corpus/bad_count.gro"
expect missing-box 'bad_missing_box.gro:' "${md[@]}" -c "$corpus/bad_missing_box.gro"
expect nan 'bad_nan.gro:' "${md[@]}" -c "$corpus/bad_nan.gro"
expect outside-box 'outside the box' "${md[@]}" -c "$corpus/bad_outside_box.gro"
expect triclinic 'triclinic' "${md[@]}" -c "$corpus/bad_triclinic.gro"
expect missing-file 'cannot open' "${md[@]}" -c does_not_exist.gro

python3 - << 'PY'
src = open('good.gro').read().splitlines()
# an unknown residue name on a whole molecule, and an unknown atom name
l = src[:]
for k in (2, 3, 4):
    l[k] = l[k][:5] + 'XYZ  ' + l[k][10:]
open('unknown_res.gro', 'w').write('\n'.join(l) + '\n')
l = src[:]
l[3] = l[3][:10] + '   QQ' + l[3][15:]
open('unknown_atom.gro', 'w').write('\n'.join(l) + '\n')
# two argon atoms on top of each other: infinite forces
lines = ['overlap', '    3']
for i, (x, y, z) in enumerate([(0.5, 0.5, 0.5), (0.5, 0.5, 0.5), (1.5, 1.5, 1.5)]):
    lines.append('%5d%-5s%5s%5d%8.3f%8.3f%8.3f' % (i + 1, 'AR', 'AR', i + 1, x, y, z))
lines.append('   3.00000   3.00000   3.00000')
open('overlap.gro', 'w').write('\n'.join(lines) + '\n')
# a water whose hydrogens fly apart: SETTLE has no solution
out = [src[0], src[1]]
for i, l in enumerate(src[2:-1]):
    v = (99.0 if i == 1 else -99.0 if i == 2 else 0.0, 0.0, 0.0)
    out.append(l[:44] + '%8.4f%8.4f%8.4f' % v)
out.append(src[-1])
open('fast.gro', 'w').write('\n'.join(out) + '\n')
# a hydrogen 1 nm away from its oxygen (molecule 5): the start's constraining pulled it back
# without a word; and the same hydrogen moved by 0.001 nm (a .gro's rounding): fine
def moved(dx, name):
    l = src[:]
    k = 2 + 3 * 4 + 1  # molecule 5, its first hydrogen (atom 14, line 16)
    x = float(l[k][20:28]) + dx
    l[k] = l[k][:20] + '%8.3f' % x + l[k][28:]
    open(name, 'w').write('\n'.join(l) + '\n')
moved(1.0, 'broken.gro')
moved(0.001, 'rounded.gro')
PY
expect unknown-residue 'unknown_res.gro: atom 1 (residue 1 XYZ' "${md[@]}" -c unknown_res.gro
expect unknown-atom 'QQ' "${md[@]}" -c unknown_atom.gro

# a broken molecule is refused with file:line, molecule and distance (issue 29, item 4)
expect broken-molecule 'broken.gro:16: molecule 5 (residue 5 SOL): HW1 (atom 14) is 1.' \
    "${md[@]}" -c broken.gro --gen-vel 300
grep -q "but model spce keeps them 0.1000 nm apart: more than 10 % off, the molecule is broken" \
    broken-molecule.out || fail "broken-molecule: $(head -1 broken-molecule.out)"
check
"$halox" md --steps 0 --rc 0.7 -o rounded_out.gro -g rounded.log -c rounded.gro > rounded.out 2>&1 ||
    fail "a hydrogen 0.001 nm off (a .gro's rounding) was refused: $(grep -m1 error rounded.out)"
# another water geometry (TIP3P's O-H is 4 % shorter than SPC/E's) is only reshaped, as before
"$halox" build water --model tip3p --atoms 1500 --seed 3 -o tip3p.gro > /dev/null 2>&1
check
"$halox" md --steps 0 --rc 0.7 --model spce -o t3_out.gro -g t3.log -c tip3p.gro > t3.out 2>&1 ||
    fail "TIP3P geometry run as SPC/E was refused: $(grep -m1 error t3.out)"

# impossible parameters
expect rc-half-box 'half the box' "${md[@]}" -c good.gro --rc 1.3
expect rlist-lt-rc 'shorter than the cut-off' "${md[@]}" -c good.gro --rlist 0.6
expect dt-zero 'must be positive' "${md[@]}" -c good.gro --dt 0
expect dt-negative 'must be positive' "${md[@]}" -c good.gro --dt -0.001
expect nstlist-zero 'nstlist = 0' "${md[@]}" -c good.gro --nstlist 0
expect bad-grid 'AxBxC' "${md[@]}" -c good.gro --dd 2y2
expect cells-too-small 'too small' "${md[@]}" -c good.gro --dd 2x1x1 --rc 1.15 --rlist 1.2
expect unknown-model 'unknown' "${md[@]}" -c good.gro --model tip5p
expect unknown-option 'unknown option' "${md[@]}" -c good.gro --frobnicate 3
expect plan-rlist 'rlist = 0.9 nm is shorter than the cut-off rc = 1 nm' plan --rc 1.0 --rlist 0.9

# messages that said the wrong thing (issue 29, item 9)
expect triclinic-advice 'halox handles rectangular boxes only: build or solvate the system in one (gmx editconf -bt cubic' \
    "${md[@]}" -c "$corpus/bad_triclinic.gro"
grep -q "bt rectangular" triclinic-advice.out && fail "triclinic: advice GROMACS refuses"
expect halo-without-gpu '--halo nvshmem exchanges halos of GPU memory: it needs --gpu' "${md[@]}" \
    -c good.gro --halo nvshmem
grep -q "cfg.mem" halo-without-gpu.out && fail "--halo nvshmem: the library's internals in the message"
expect gen-vel-negative '--gen-vel -300: a temperature must be >= 0 K' "${md[@]}" -c good.gro \
    --gen-vel -300
grep -q "no --gen-vel was given" gen-vel-negative.out && fail "--gen-vel -300 taken as not given"
expect half-box-edge 'not below half the box edge along x (the edge is 2.46636 nm, half of it 1.23318 nm)' \
    "${md[@]}" -c good.gro --rc 1.3
expect one-domain 'do not divide x (one domain along it)' "${md[@]}" -c good.gro --dd 2x1x1 \
    --rc 1.15 --rlist 1.2
grep -q "at most 1 domains" one-domain.out && fail "one-domain: 'at most 1 domains'"
expect build-kinds "'halox build water ...', 'halox build argon ...' or 'halox build mixture ...'" \
    build --atoms 300 -o out.gro

# physics going wrong
expect non-finite-force 'non-finite force on atom' "${md[@]}" -c overlap.gro --model argon
expect settle 'SETTLE cannot constrain water molecule 1' "${md[@]}" -c fast.gro

finish test_bad_input
