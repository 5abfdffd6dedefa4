#!/usr/bin/env bash
# scripts/nvshmem_trace.py on traces with known times: 4 PEs in a ring, two pulses (pulse 1
# depends on pulse 0), every interval of a step set so that each reported median is a known
# number; PE 3 starts 7 us late. Bad input (a missing PE, a short line, no files) fails with the
# file and line. The timeline plot is drawn when gnuplot exists.
#   test_nvshmem_trace.sh <source dir>
set -u
src=$1
tr=$src/scripts/nvshmem_trace.py
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

# times in ns; step s starts at s * 100 us; PE r's coordinate kernel at +7 us when r == 3
python3 - << 'EOF'
for r in range(4):
    with open(f"t.0.rank{r}.txt", "w") as f:
        f.write(f"# halox nvshmem trace v1\nrank {r} npes 4 pulses 2 traced 2\n")
        f.write(f"pulse 0 send_pe {(r + 1) % 4} recv_pe {(r + 3) % 4} deps 0 send 10 recv 10\n")
        f.write(f"pulse 1 send_pe {(r + 2) % 4} recv_pe {(r + 2) % 4} deps 1 send 5 recv 5\n")
        f.write("describe synthetic\n# columns\n")
        for s in range(1, 41):
            b = s * 100000
            x0 = b + (7000 if r == 3 else 0)
            # pulse 0: sent at x0+4us, seen by its receiver 1us after its sender sent it
            # pulse 1: dependency satisfied at x0+12us, sent 3us later, seen 1us after
            row = [s, x0, b + 40000, b + 70000]
            sender0 = (r + 3) % 4  # who sends pulse 0 to r
            x0s = b + (7000 if sender0 == 3 else 0)
            sender1 = (r + 2) % 4
            x1s = b + (7000 if sender1 == 3 else 0)
            f0 = b + 50000
            row += [0, x0 + 4000, x0s + 4000 + 1000, f0, f0 + 500, f0 + 2500]
            row += [x0 + 12000, x0 + 15000, x1s + 15000 + 1000, f0 + 1000, f0 + 1500, f0 + 4500]
            f.write(" ".join(str(v) for v in row) + "\n")
EOF
check
python3 "$tr" t.0 --json t.json > out.txt 2>&1 || fail "analysis failed: $(cat out.txt)"
check
python3 - << 'EOF' || fail "wrong medians: $(cat out.txt)"
import json, sys
d = json.load(open("t.json"))["us_median_slowest"]
# slowest PE or pulse of each step, then the median over steps
# (x span: PE 1 sees pulse 1 from the late PE 3 at 7 + 16 us; x->f gap: PE 0 sees its last
# pulse at 16 us and starts the force kernel at 40; f->x gap: PE 3 starts 7 us late)
want = {"period": 100.0, "start skew": 7.0, "x span": 23.0, "x->f gap": 24.0, "f span": 30.0,
        "f->x gap": 37.0, "pack": 4.0, "dep wait": 12.0, "dep->sent": 3.0, "x hop": 1.0,
        "f hop": 0.5, "f accumulate": 3.0}
bad = [f"{k}: {d[k]} != {v}" for k, v in want.items() if d[k] is None or abs(d[k] - v) > 1e-9]
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
check
rm t.0.rank2.txt
python3 "$tr" t.0 > out.txt 2>&1 && fail "a missing PE was accepted"
grep -q "traces of PEs \[0, 1, 3\], expected 0..3" out.txt || fail "missing PE message: $(cat out.txt)"
check
cp t.0.rank1.txt t.0.rank2.txt
sed -i '7s/ [0-9]*$//' t.0.rank2.txt
python3 "$tr" t.0 > out.txt 2>&1 && fail "a short line was accepted"
grep -q "t.0.rank2.txt:7: 15 numbers, expected 16" out.txt || fail "short line message: $(cat out.txt)"
check
python3 "$tr" none.0 > out.txt 2>&1 && fail "no files was accepted"
grep -q "no trace files none.0.rank" out.txt || fail "no-files message: $(cat out.txt)"
if command -v gnuplot > /dev/null; then
    check
    cp t.0.rank1.txt t.0.rank2.txt
    sed -i 's/^rank 1 /rank 2 /' t.0.rank2.txt
    python3 "$tr" t.0 --plot tl.png > out.txt 2>&1 || fail "timeline plot: $(cat out.txt)"
    head -c 8 tl.png 2> /dev/null | od -An -c | grep -q "P   N   G" || fail "tl.png is not a PNG"
fi
finish test_nvshmem_trace
