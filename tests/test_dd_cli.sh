#!/usr/bin/env bash
# halox md under mpirun, as a user runs it:
#  - output of an MPI run equals the in-process run of the same grid (energies, final .gro), and
#    the final .gro lists the atoms in the input's global order;
#  - a grid whose size differs from the rank count, and cells that are too small, fail with their
#    message and a non-zero exit; an error every rank detects is printed once, by rank 0, and
#    the job ends without MPI_Abort;
#  - a rank that is killed, that exits, or that fails alone ends the whole job within a bounded
#    time, with no halox process left behind; a failure that the ranks agree on (a rank's step
#    hook failing, rank 0's output failing after the run) ends every rank normally, without
#    MPI_Abort, with the message once and no good output overwritten.
#   test_dd_cli.sh <halox> <mpiexec> [mpiexec flags...]
set -u
halox=$1
shift
mpiexec=("$@")
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

"$halox" build water --atoms 1500 --seed 3 -o w.gro > /dev/null || {
    echo "FAIL: halox build"
    exit 1
}
"$halox" build water --atoms 600 --seed 3 -o small.gro > /dev/null || exit 1
common=(-c w.gro --steps 30 --rc 0.7 --rlist 0.8 --gen-vel 300 --seed 5 --nstenergy 5
    --threads 1)

# 1. MPI == in-process, atoms in global order
timeout 300 "${mpiexec[@]}" -np 3 "$halox" md "${common[@]}" -o mpi.gro -e mpi.jsonl -g mpi.log \
    > mpi.out 2>&1
rc=$?
check
[ $rc -eq 0 ] || fail "mpirun -np 3 halox md failed: $(tail -5 mpi.out)"
grid=$(sed -n 's/^  grid \([0-9]*\) x \([0-9]*\) x \([0-9]*\).*/\1x\2x\3/p' mpi.log)
check
[ -n "$grid" ] || fail "the log does not state the domain grid"
grep -q "^  pulses x" mpi.log || fail "the log does not state the pulses"
grep -q "halo exchange x" mpi.log || fail "the log does not time the halo exchange"
# the search step by part, per search (the run's 3: steps 10, 20 and the last step's evaluation;
# not the start's), on the host with the CPU engine
num='[0-9]+\.[0-9]'
grep -qE "^search step: $num us per search, slowest rank \(3 searches, 0 on the device\): state to host $num, migration $num, topology\+plan $num, halo set-up $num, local set\+upload $num, x halo\+pair search $num" mpi.log ||
    fail "the log lacks the search step by part: $(grep '^search step' mpi.log)"
"$halox" md "${common[@]}" --dd "$grid" -o inproc.gro -e inproc.jsonl -g inproc.log \
    > inproc.out 2>&1
check
cmp -s mpi.jsonl inproc.jsonl || fail "energies of the MPI run differ from the in-process run"
check
cmp -s mpi.gro inproc.gro || fail "final .gro of the MPI run differs from the in-process run"
check
if ! diff <(sed -n '3,1502p' w.gro | cut -c1-20) <(sed -n '3,1502p' mpi.gro | cut -c1-20) \
    > /dev/null; then
    fail "the final .gro does not list the atoms in the input's order"
fi

# 1b. the same launch as an ordinary user (root needs --allow-run-as-root, users must not)
if [ "$(id -u)" -eq 0 ] && id nobody > /dev/null 2>&1 && command -v su > /dev/null; then
    check
    chmod 777 "$hx_work"
    chmod 644 w.gro
    # the build tree may sit where other users cannot reach it: run a copy from here
    cp "$halox" ./halox_copy && chmod 755 ./halox_copy
    mpiexec_plain=()
    for f in "${mpiexec[@]}"; do
        [ "$f" = "--allow-run-as-root" ] || mpiexec_plain+=("$f")
    done
    su nobody -s /bin/sh -c "cd '$hx_work' && HOME='$hx_work' timeout 300 ${mpiexec_plain[*]} \
        -np 2 ./halox_copy md -c w.gro --steps 10 --rc 0.7 --threads 1 -o user.gro -g user.log" \
        > user.out 2>&1
    rc=$?
    [ $rc -eq 0 ] && [ -s user.gro ] || fail "mpirun as an ordinary user: rc $rc, $(tail -3 user.out)"
    echo "ordinary user (nobody): exit $rc"
fi

# 2. bad decompositions
check
timeout 120 "${mpiexec[@]}" -np 3 "$halox" md "${common[@]}" --dd 2x2x1 -o bad.gro > bad.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "has 4 domains but the job has 3 MPI ranks" bad.out; } ||
    fail "grid/rank mismatch: rc $rc, $(head -3 bad.out)"
[ -e bad.gro ] && fail "a failed run wrote its output file"
check
timeout 120 "${mpiexec[@]}" -np 2 "$halox" md -c small.gro --steps 10 --rc 0.8 --dd 2x1x1 \
    -o bad2.gro > bad2.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "too small" bad2.out; } ||
    fail "too-small cells: rc $rc, $(head -3 bad2.out)"

# 2a. an error that every rank detects is said once, by rank 0, and the job ends without
#     MPI_Abort (it came once per rank, interleaved with MPI_ABORT's notice): an option refused
#     before MPI starts, and a box that no pair list fits, found by every rank at start-up
once() {
    local name=$1 frag=$2
    shift 2
    check
    timeout 120 "${mpiexec[@]}" -np 2 "$halox" md "$@" > "$name.out" 2>&1
    local rc=$? n
    n=$(grep -c "halox md: error:" "$name.out")
    { [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$n" -eq 1 ] && grep -qF -- "$frag" "$name.out"; } ||
        fail "$name under mpirun -np 2: exit $rc, $n error lines: $(grep error "$name.out" | head -3)"
    grep -q "MPI_ABORT\|\[rank 1\]" "$name.out" && fail "$name: a rank aborted or rank 1 printed"
    [ -e "$name.gro" ] && fail "$name: a failed run wrote its output file"
    echo "$name under mpirun -np 2: exit $rc, $n message: $(grep -m1 'error:' "$name.out" | cut -c1-100)"
}
once option "time step dt = 0 ps" -c small.gro --steps 10 --dt 0 -o option.gro
once startup "no pair-list radius below half the box" -c small.gro --steps 10 --rc 0.9 \
    --gen-vel 300 -o startup.gro -g startup.log

# 2b. `halox plan` predicts the decomposition `halox md` uses: same pair-list radius (default:
#     from the buffer tolerance at the generated temperature), grid and pulses
for np_ in 2 4; do
    check
    "$halox" plan -c w.gro --ranks $np_ --rc 0.7 --gen-vel 300 --json > plan_$np_.json 2> plan_$np_.err ||
        fail "halox plan --ranks $np_: $(head -3 plan_$np_.err)"
    timeout 300 "${mpiexec[@]}" -np $np_ "$halox" md -c w.gro --steps 0 --rc 0.7 --gen-vel 300 \
        --threads 1 -o pred_$np_.gro -g pred_$np_.log > pred_$np_.out 2>&1 ||
        fail "md for the plan prediction ($np_ ranks): $(tail -3 pred_$np_.out)"
    want=$(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
print("grid %d x %d x %d" % tuple(p["grid"]), "pulses x %d, y %d, z %d" % tuple(p["pulses_per_dim"]),
      "rlist %.4f" % p["rlist"])' plan_$np_.json)
    got="$(sed -n 's/^  \(grid [0-9]* x [0-9]* x [0-9]*\).*/\1/p' pred_$np_.log) $(sed -n 's/^  \(pulses x .*\)/\1/p' pred_$np_.log) $(sed -n 's/^  \(rlist [0-9.]*\) nm.*/\1/p' pred_$np_.log)"
    [ "$want" = "$got" ] || fail "plan predicts '$want' for $np_ ranks, md used '$got'"
    echo "plan = md for $np_ ranks: $got"
done

# 3. faults end the job. A rank that fails alone (error: its step hook fails) is agreed by the
#    engine at the next search step, so the job ends without MPI_Abort (which printed its notice,
#    lost the buffered outputs and left the failure on every rank's screen): every rank ends
#    normally, the failing rank's message is printed once, rank 0's log records it, the energy
#    file holds whole lines, the good file that -o names is not overwritten. kill and exit leave
#    no one to agree with: the launcher ends the job.
good_gro() { printf 'a good output that a failed run must not overwrite\n' > f.gro; }
json_lines() { # every line of $1 is a whole JSON record
    python3 -c 'import json, sys
for l in open(sys.argv[1]):
    json.loads(l)' "$1" 2> /dev/null
}
for mode in kill exit error; do
    check
    good_gro
    rm -f f.log f.jsonl
    start=$(date +%s)
    HALOX_FAULT_INJECT=$mode:1:12 timeout 120 "${mpiexec[@]}" -np 3 \
        "$halox" md "${common[@]}" --steps 400 -o f.gro -g f.log -e f.jsonl > fault_$mode.out 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    [ $rc -ne 0 ] || fail "fault $mode: the job exited 0"
    [ $rc -ne 124 ] || fail "fault $mode: the job hung (killed by the 120 s timeout)"
    [ $took -le 60 ] || fail "fault $mode: the job took $took s to end"
    grep -q "^a good output" f.gro || fail "fault $mode: the failed run overwrote f.gro"
    if [ "$mode" = error ]; then
        n=$(grep -c "halox md: error: fault injected on rank 1 at step 12" fault_$mode.out)
        [ "$n" -eq 1 ] || fail "fault error: the failing rank's message came $n times, not once"
        [ "$(grep -c 'halox md: error:' fault_$mode.out)" -eq 1 ] ||
            fail "fault error: more than one rank printed an error: $(grep error: fault_$mode.out)"
        grep -qi "mpi_abort" fault_$mode.out &&
            fail "fault error: an agreed failure ended the job with MPI_Abort: $(grep -i -m1 -A2 mpi_abort fault_$mode.out)"
        grep -q "^error: rank 1 failed (HX_ERR_INTERNAL): fault injected on rank 1 at step 12" f.log ||
            fail "fault error: rank 0's log does not record the failure: $(tail -2 f.log)"
        json_lines f.jsonl || fail "fault error: the energy file has a partial line: $(tail -c 200 f.jsonl)"
    fi
    sleep 1
    if pgrep -f "$halox md" > /dev/null; then
        fail "fault $mode: halox processes are left running"
        pkill -9 -f "$halox md"
    fi
    echo "fault $mode: exit $rc after ${took}s"
done

# 3b. rank 0 fails alone after the run's last collective (its energy file, /dev/full, fails when
#     flushed at the end): the others learn of it in the job's last agreement and every rank
#     ends normally, with a non-zero exit and rank 0's message once
check
start=$(date +%s)
timeout 120 "${mpiexec[@]}" -np 2 "$halox" md "${common[@]}" -o late.gro -g late.log -e /dev/full \
    > late.out 2>&1
rc=$?
took=$(($(date +%s) - start))
n=$(grep -c "halox md: error:" late.out)
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ "$n" -eq 1 ] &&
    grep -q "\[rank 0\] halox md: error: writing the energy file /dev/full failed" late.out; } ||
    fail "late failure on rank 0: exit $rc, $n error lines: $(grep error late.out | head -3)"
grep -qi "mpi_abort" late.out && fail "late failure on rank 0: the job ended with MPI_Abort"
grep -q "^error: writing the energy file /dev/full failed" late.log ||
    fail "late failure on rank 0: the log does not record it: $(tail -2 late.log)"
echo "late failure on rank 0: exit $rc after ${took}s, $n message"

finish test_dd_cli
