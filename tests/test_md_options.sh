#!/usr/bin/env bash
# halox md's options as a GROMACS user gives them:
#  - -f run.mdp: every supported key reaches the run (the log says so, and the energies equal
#    those of the same run given as options), options on the command line override the file,
#    a bad file fails with file:line before anything is written;
#  - --continuation (continuation = yes) leaves the start unconstrained: the final
#    configuration of a single point has the input's coordinates, digit for digit;
#  - 64-bit step counts, and out-of-range numbers said as such;
#  - a start from rest (no velocities in the input, none generated) is warned on the terminal;
#  - a box too small for the cut-off names the file;
#  - help lines give each default once;
#  - the log: header (version, build, command, host, hardware, start), energy averages and
#    drift, the performance line also on the terminal, progress with a clock time.
#   test_md_options.sh <halox>
set -u
halox=$1
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

"$halox" build water --atoms 648 --seed 3 -o w.gro > /dev/null 2>&1 || {
    echo "FAIL: halox build"
    exit 1
}

# --- 1. -f run.mdp
cat > run.mdp << 'EOF'
; halox md -f run.mdp
integrator              = md
dt                      = 0.001
nsteps                  = 20
cutoff-scheme           = Verlet
nstlist                 = 5
verlet_buffer_tolerance = -1
rlist                   = 0.8
coulombtype             = reaction-field
rcoulomb                = 0.7
rvdw                    = 0.7
epsilon-rf              = 78.5
tcoupl                  = V-rescale
tc-grps                 = System
tau_t                   = 0.2
ref_t                   = 250
gen-vel                 = yes
gen-temp                = 250
gen-seed                = 9
nstenergy               = 5
nstlog                  = 10
; GROMACS keys that cannot change what halox computes: ignored, and said
nstcalcenergy           = 100
nstvout                 = 0
fourierspacing          = 0.12
EOF
check
"$halox" md -f run.mdp -c w.gro -e m.jsonl -o m.gro -g m.log --threads 1 > m.out 2>&1 ||
    fail "-f run.mdp: $(tail -2 m.out)"
for want in "parameter file run.mdp" "steps 20 (from step 0)" "dt 0.001 ps" "rc 0.7 nm" \
    "rlist 0.8000 nm" "nstlist 5" "eps_rf 78.5" "generated at 250 K, seed 9" \
    "v-rescale tau_t 0.2 ps ref_t 250 K" "energy m.jsonl every 5" "energies in this log every 10 steps" \
    "ignored in run.mdp (they do not change what halox computes): nstcalcenergy (line 23), nstvout (line 24), fourierspacing (line 25)"; do
    grep -qF "$want" m.log || fail "-f run.mdp: the log lacks '$want'"
done
# energies in the log every nstlog = 10 steps: steps 0, 10 and the last, 20
[ "$(grep -Ec '^ +Step +Time$' m.log)" -eq 3 ] ||
    fail "-f run.mdp: $(grep -Ec '^ +Step +Time$' m.log) energy blocks in the log, want 3 (nstlog 10, 20 steps)"
grep -qF "halox md: run.mdp: ignored (3 keys that do not change what halox computes; docs/mdp.md says why): nstcalcenergy (line 23)" m.out ||
    fail "-f run.mdp: the ignored keys are not said on the terminal: $(head -2 m.out)"
check
"$halox" md -c w.gro --steps 20 --dt 0.001 --nstlist 5 --rlist 0.8 --rc 0.7 --eps-rf 78.5 \
    --thermostat v-rescale --tau-t 0.2 --ref-t 250 --gen-vel 250 --seed 9 --nstenergy 5 \
    -e o.jsonl -o o.gro -g o.log --threads 1 > o.out 2>&1 || fail "options run: $(tail -2 o.out)"
cmp -s m.jsonl o.jsonl || fail "-f run.mdp and the same options give different energies"
check
"$halox" md -f run.mdp -c w.gro --steps 10 --rc 0.75 -e ov.jsonl -o ov.gro -g ov.log \
    --threads 1 > ov.out 2>&1 || fail "override: $(tail -2 ov.out)"
grep -q "steps 10 (from step 0)" ov.log && grep -q "rc 0.75 nm" ov.log &&
    grep -q "dt 0.001 ps" ov.log || fail "command-line options do not override run.mdp"
check
# every problem of a file in one message (a GROMACS file failed one key per attempt)
printf 'dt = 0.002\nnstcalcenergy = 100\ndefine = -DPOSRES\nnstdisreout = 5\nintegrator = sd\n' > bad.mdp
"$halox" md -f bad.mdp -c w.gro -e bad.jsonl -o bad.gro -g bad.log > bad.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "bad.mdp: 3 problems: 'define' (line 3), 'nstdisreout' (line 4) are not parameters halox supports, remove the lines (docs/mdp.md lists what halox reads and what it ignores); bad.mdp:5: integrator = sd" bad.out; } ||
    fail "bad .mdp: exit $rc, $(head -1 bad.out)"
[ -e bad.log ] || [ -e bad.jsonl ] && fail "bad .mdp: files were written"
check
mkdir -p mdpdir
"$halox" md -f mdpdir -c w.gro -o dir.gro -g dir.log > dir.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "the parameter file 'mdpdir' is a directory: give the .mdp file" dir.out; } ||
    fail "-f DIRECTORY: exit $rc, $(head -1 dir.out)"
check
"$halox" md -c w.gro --steps 10 --rc 0.7 -x traj.gro -o xo.gro -g xo.log > xo.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "halox md: -x traj.gro asks for a trajectory, but --nstxout is 0" xo.out; } ||
    fail "-x without --nstxout: exit $rc, $(head -1 xo.out)"
[ -e traj.gro ] || [ -e xo.log ] && fail "-x without --nstxout: files were written"
echo "-f run.mdp: values applied, equal to options, overridden; bad file: $(head -1 bad.out | cut -c1-100)"

# --- 2. continuation: the start is not constrained
check
"$halox" md -c m.gro --steps 0 --rc 0.7 --continuation -o cont.gro -g cont.log > cont.out 2>&1 ||
    fail "--continuation: $(tail -2 cont.out)"
"$halox" md -c m.gro --steps 0 --rc 0.7 -o nocont.gro -g nocont.log > nocont.out 2>&1 ||
    fail "no continuation: $(tail -2 nocont.out)"
xyz() { sed -n "3,650p" "$1" | cut -c21-44; }
diff <(xyz m.gro) <(xyz cont.gro) > /dev/null ||
    fail "--continuation: the coordinates changed (the start was constrained)"
diff <(xyz m.gro) <(xyz nocont.gro) > /dev/null &&
    fail "without --continuation the start was not constrained (this check is void)"
grep -q "start taken as it is (continuation" cont.log || fail "--continuation: not in the log"
printf 'continuation = yes\n' > cont.mdp
"$halox" md -f cont.mdp -c m.gro --steps 0 --rc 0.7 -o cont2.gro -g cont2.log > cont2.out 2>&1 ||
    fail "continuation = yes: $(tail -2 cont2.out)"
cmp -s cont.gro cont2.gro || fail "continuation = yes differs from --continuation"
check
"$halox" md -c w.gro --steps 5 --continuation --gen-vel 300 -o x.gro > cg.out 2>&1 &&
    fail "--continuation with --gen-vel accepted"
grep -q "give one or the other" cg.out || fail "--continuation --gen-vel: $(head -1 cg.out)"

# --- 3. step counts beyond 32 bits; numbers out of range
check
"$halox" md -c w.gro --steps 3000000000 --dt 0 -o x.gro > big.out 2>&1
grep -q "time step dt = 0 ps" big.out || fail "--steps 3000000000: $(head -1 big.out)"
check
"$halox" md -c w.gro --steps 99999999999999999999 -o x.gro > huge.out 2>&1 &&
    fail "--steps 10^20 accepted"
grep -q "is out of range" huge.out || fail "--steps 10^20: $(head -1 huge.out)"

# --- 4. a start from rest is warned on the terminal
check
"$halox" md -c w.gro --steps 5 --rc 0.7 -o rest.gro -g rest.log > rest.out 2>&1 ||
    fail "start from rest: $(tail -2 rest.out)"
grep -q "w.gro has no velocities and no --gen-vel was given: the run starts from rest" rest.out ||
    fail "no warning for a start from rest: $(cat rest.out)"
grep -q "velocities none: the input has none" rest.log || fail "the log does not say it"
"$halox" md -c m.gro --steps 5 --rc 0.7 -o vel.gro -g vel.log > vel.out 2>&1
grep -q "has no velocities" vel.out && fail "warned although the input has velocities"

# --- 5. a box too small for the cut-off: the file is named
check
"$halox" md -c w.gro --steps 5 --rc 1.0 -o x.gro > small.out 2>&1
grep -q "w.gro (box 1.86445 x 1.86445 x 1.86445 nm): cut-off/pair-list radius" small.out ||
    fail "too small a box: $(head -1 small.out)"

# --- 5b. the log of a single point and of the default thread count (issue 29, item 10): no
# "0 OpenMP threads", no time per step of zero steps; --threads above the cores is warned
check
grep -Eq "^  parallel     1 MPI rank x [1-9][0-9]* OpenMP threads?$" nocont.log ||
    fail "default threads: $(grep '^  parallel' nocont.log)"
grep -q "^performance: no steps run (single-point energies" nocont.log ||
    fail "--steps 0: $(grep '^performance' nocont.log)"
grep -q "us/step (0 steps" nocont.log && fail "--steps 0 still reports a time per step"
check
ncpu=$(getconf _NPROCESSORS_ONLN)
"$halox" md -c m.gro --steps 0 --rc 0.7 --threads $((ncpu + 1)) -o thr.gro -g thr.log > thr.out 2>&1 ||
    fail "--threads $((ncpu + 1)): $(tail -2 thr.out)"
grep -q "warning: --threads $((ncpu + 1)) is more than the $ncpu logical CPUs of this host" thr.out ||
    fail "--threads above the core count is not warned: $(head -2 thr.out)"
"$halox" md -c m.gro --steps 0 --rc 0.7 --threads "$ncpu" -o thr.gro -g thr.log > thr.out 2>&1
grep -q "is more than the" thr.out && fail "--threads $ncpu (the core count) is warned"

# one molecule is "1 molecule" (it was "1 molecules"), in the log and in halox plan
check
{ echo "one water"; echo "    3"; sed -n 3,5p w.gro; echo "   3.00000   3.00000   3.00000"; } > one.gro
"$halox" md -c one.gro --steps 0 --rc 0.7 -o one_out.gro -g one.log > one.out 2>&1 ||
    fail "one molecule: $(tail -2 one.out)"
grep -q "^  3 atoms, 1 molecule, box" one.log || fail "one molecule: $(grep -m1 'molecule' one.log)"
"$halox" plan -c one.gro --rc 0.7 > one_plan.out 2>&1
grep -q "^system      3 atoms, 1 molecule, box" one_plan.out ||
    fail "one molecule (plan): $(grep -m1 system one_plan.out)"

# one set of model names with halox build: a mixture is built with the name md runs it with
# (the run itself: test_md_physics)
check
"$halox" build mixture --model spce --atoms 900 -o mixbad.gro > mixbad.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "give --model oplsaa-spce" mixbad.out && [ ! -e mixbad.gro ]; } ||
    fail "build mixture --model spce: exit $rc, $(head -1 mixbad.out)"

# --- 6. help: each default once
check
for cmd in md plan build; do
    "$halox" $cmd --help > help.txt 2>&1
    if grep -q "default.*default" help.txt; then
        fail "halox $cmd --help repeats a default: $(grep 'default.*default' help.txt | head -1)"
    fi
done

# --- 7. the log and the terminal
check
for want in "^halox " "^  build  " "^  command      halox md -f run.mdp -c w.gro" "^  host  " \
    "^  hardware  " "^  started  " "^energies over 5 frames" "^conserved-energy drift\|^total-energy drift" \
    "^performance: .* ns/day, .* us/step, .* hours/ns" "^finished "; do
    grep -q "$want" m.log || fail "the log lacks '$want'"
done
grep -q "^Performance: .* ns/day, .* hours/ns" m.out || fail "no performance line on the terminal"
check
# progress every 5 s of wall time, with the clock time the run will end at: a run of 10^10
# steps ends on a date with its year (it was a date without a year; 10^12 steps gave a time five
# seconds after the start), one of 9e18 steps in some billion years, said in years
"$halox" build water --atoms 3000 --seed 1 -o big.gro > /dev/null 2>&1
timeout 120 "$halox" md -c big.gro --steps 10000000000 --rc 0.9 --threads 1 --gen-vel 300 \
    -o p.gro -g p.log > p.out 2>&1 &
pid=$!
timeout 120 "$halox" md -c big.gro --steps 9000000000000000000 --rc 0.9 --threads 1 \
    --gen-vel 300 -o q.gro -g q.log > q.out 2>&1 &
qid=$!
for _ in $(seq 300); do
    grep -q "^step " p.out && grep -q "^step " q.out && break
    sleep 0.2
done
kill -TERM $pid $qid 2> /dev/null
wait $pid $qid
# check_eta FILE: the end the progress line gives agrees with its own speed: a date with the
# right year within a century, "in about N years" beyond (N within 1 %)
check_eta() {
    local line ok=0 days years
    line=$(grep -m1 '^step' "$1")
    echo "progress: $line"
    if [[ $line =~ ^step\ ([0-9]+)\ of\ ([0-9]+),\ ([0-9.]+)\ ns/day,\ finishes\ (.*)$ ]]; then
        local when=${BASH_REMATCH[4]}
        # (steps left) x dt / (ns per day)
        days=$(awk -v a="${BASH_REMATCH[1]}" -v b="${BASH_REMATCH[2]}" -v v="${BASH_REMATCH[3]}" \
            'BEGIN { printf "%.6g", (b - a) * 0.002e-3 / v }')
        years=$(awk -v d="$days" 'BEGIN { printf "%.6g", d / 365.2425 }')
        if awk -v y="$years" 'BEGIN { exit !(y > 100) }'; then
            [[ $when =~ ^in\ about\ ([0-9.e+]+)\ years$ ]] &&
                awk -v w="${BASH_REMATCH[1]}" -v y="$years" 'BEGIN { exit !(w > 0.99 * y && w < 1.01 * y) }' &&
                ok=1
        elif [[ $when =~ ^at\ ([0-9]{4})-[0-9]{2}-[0-9]{2}\ [0-9]{2}:[0-9]{2}$ ]]; then
            local got=${BASH_REMATCH[1]} want
            want=$(date -d "@$(awk -v d="$days" -v n="$(date +%s)" 'BEGIN { printf "%.0f", n + d * 86400 }')" +%Y)
            [ "$got" -ge $((want - 1)) ] && [ "$got" -le $((want + 1)) ] && ok=1
        elif [[ $when =~ ^at\ [0-9]{2}:[0-9]{2}:[0-9]{2}$ ]]; then
            awk -v d="$days" 'BEGIN { exit !(d < 1) }' && ok=1
        fi
    fi
    [ $ok -eq 1 ] || fail "the progress line of $1 does not match its own speed ($days days): '$line'"
}
check_eta p.out
check_eta q.out

finish test_md_options
