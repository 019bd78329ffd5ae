#!/bin/sh
# End-to-end BF16 (and F16) numbers for issue 43: vt-bench pp512 / tg128 and
# vt-batched-bench decode at B = 16 and 64 on random-weight SmolLM2-135M files
# (examples/bench/make-random-gguf.py --shape smollm2-135m --type BF16 --type F16),
# 2 threads. BUILD_A / BUILD_B: two build folders to alternate (before/after);
# each line is one run, prefixed with its build and the load.
#   tests/perf/bf16-end-to-end.sh [BUILD_A [BUILD_B]]
a=${1:-build}; b=${2:-}
dir=${VT_MODELS:-$HOME/.cache/vt/models/random}
for round in 1 2; do
    for bd in $a $b; do
        for ty in BF16 F16; do
            m=$dir/smollm2-135m-$ty.gguf
            [ -f "$m" ] || continue
            echo "== $bd $ty round $round, load $(cut -d' ' -f1 /proc/loadavg)"
            "$bd/examples/bench/vt-bench" -m "$m" -p 512 -n 128 -r 2 -t 2 | grep -E "pp512|tg128"
            "$bd/examples/bench/vt-batched-bench" -m "$m" --npp 128 --ntg 32 --npl 16,64 -t 2 | grep -E "^\| +(16|64) "
        done
    done
done
