# For scripts/h200.sh --exec (sourced there, MPS running): the decomposed search step traced
# per process (HALOX_SEARCH_TRACE, src/gpu/trace.h) on the 45k water box, `halox md --gpu` with
# its defaults, every step counted; each traced run follows an untraced one of the same build
# (the marks' cost is the difference), then scripts/search_trace.py on every trace: its table
# in logs/traces/NAME.txt, its JSON beside it, the traces themselves gzipped.
#   TRACE_CONFIGS  "GRID:RANKS ..." (default "4x1x1:4 4x1x1:4 2x2x1:4 2x2x2:8": 4x1x1 twice)
#   TRACE_STEPS    steps per run (default 20000: 200 search steps at nstlist 100)
# Variables from h200.sh: here, OUT, HALOX, say, left (scripts/h200_ab.sh runs the runs).
source "$here/scripts/h200_ab.sh"
trd=$OUT/logs/traces
mkdir -p "$trd"
declare -A st_rep=()
for cfg in ${TRACE_CONFIGS:-4x1x1:4 4x1x1:4 2x2x1:4 2x2x2:8}; do
    grid=${cfg%%:*} np=${cfg##*:}
    st_rep[$grid]=$((${st_rep[$grid]:-0} + 1))
    name=${grid}_${st_rep[$grid]}
    abrun "ab_${name}_plain" "$np" "$grid" "$HALOX" "${TRACE_STEPS:-20000}"
    abrun "ab_${name}_trace" "$np" "$grid" "$HALOX" "${TRACE_STEPS:-20000}" -- \
        HALOX_SEARCH_TRACE="$trd/t$name"
    if [[ -f $trd/t$name.rank0.txt ]]; then
        python3 "$here/scripts/search_trace.py" "$trd/t$name" --json "$trd/t$name.json" \
            > "$trd/t$name.txt" 2>&1 || say "    t$name: analysis failed: $(tail -1 "$trd/t$name.txt")"
        say "    t$name: $(head -1 "$trd/t$name.txt")"
    fi
done
gzip -9 "$trd"/*.rank*.txt 2>/dev/null
