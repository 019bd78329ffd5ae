#!/bin/sh
# Decode (tg128) of two vt builds on the same GGUFs, alternating run by run
# (base first in odd rounds, new first in even ones: ABBA), so that a
# loaded machine's swings fall on both: BASE_DIR holds an older
# vt-bench and its libvt.so.1 (copied from a build: cp -L
# build/examples/bench/vt-bench build/libvt.so.1 DIR), the new one is the
# build's. Prints each run's tokens/s and the load beside it.
#   BASE_DIR=/tmp/base [ROUNDS=3] [THREADS=2] tests/perf/ab-tg.sh model.gguf...
B=${B:-build}
for m in "$@"; do
  for r in $(seq "${ROUNDS:-3}"); do
    order="base new"; [ $((r % 2)) -eq 0 ] && order="new base"
    for which in $order; do
      if [ $which = base ]; then
        out=$(LD_LIBRARY_PATH=$BASE_DIR "$BASE_DIR/vt-bench" -m "$m" -p 0 -n 128 -t "${THREADS:-2}" -r 1 2>&1 | grep -E "tg128" | tail -1)
      else
        out=$("$B/examples/bench/vt-bench" -m "$m" -p 0 -n 128 -t "${THREADS:-2}" -r 1 2>&1 | grep -E "tg128" | tail -1)
      fi
      echo "$(basename "$m") round $r $which: $out | load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done
