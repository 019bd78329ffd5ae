#!/bin/sh
# Q5_0_X16 and Q5_1_X16 against Q4_0 / Q8_0 / Q4_K (their _X16 layouts) at
# the shapes of Gemma-4-26B-A4B's and NemotronH's Q5_0 rows (n rows of k),
# decode (m = 1) and prefill (m = 128): perf-matmul's GB/s of weights per
# CPU-second, the best of REPEAT alternating runs (a loaded machine's
# noise), plus 512 x 2048, which stays in L2 (the kernel's own rate; the
# others fit in L3 too). vt-membw (same thread count) first: the roofline.
# BASE=path/to/an/older/perf-matmul runs it alternately, for a before/after;
# ISA=avx2 for the AVX2 table.
#   [BASE=...] [ISA=avx2] [M="1 128"] [REPEAT=3] [THREADS=1] tests/perf/q5-decode.sh [build dir]
B=${1:-build}
NEW=$B/tests/perf/perf-matmul
THREADS=${THREADS:-1}
REPEAT=${REPEAT:-3}
[ -n "$ISA" ] && export VT_CPU_ISA=$ISA
uptime
$B/examples/bench/vt-membw -t "$THREADS" -s 512 -r 5
for rep in $(seq "$REPEAT"); do
  for shape in "512 2048" "2816 704" "704 2816" "2112 2816" "2816 2112" "4096 4096"; do
    set -- $shape
    for m in ${M:-1 128}; do
      for t in Q5_0 Q5_1 Q4_0 Q8_0 Q4_K; do
        [ "$t" = Q4_K ] && [ $(( $2 % 256 )) -ne 0 ] && continue
        reps=$(( m == 1 ? 200 : m < 64 ? 50 : 10 ))
        for bin in ${BASE:+$BASE} $NEW; do
          tag=new; [ "$bin" = "$BASE" ] && tag=base
          gbs=$($bin --type $t --n $1 --k $2 --m $m --threads "$THREADS" --reps $reps 2>&1 |
                sed -n 's/.*CPU per call; \([0-9.]*\) GB\/s.*/\1/p')
          echo "$tag $t $1x$2 m=$m $gbs"
        done
      done
    done
  done
done | awk '{ k = $2 " " $3 " " $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
              if ($5 > best[$1 " " k]) best[$1 " " k] = $5 }
            END { print "type n x k m: best GB/s of weights (base -> new)";
                  for (i = 1; i <= n; ++i) printf "%s: %s -> %s\n", order[i], best["base " order[i]], best["new " order[i]] }'
uptime
