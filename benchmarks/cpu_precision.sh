#!/bin/bash
# cpu_precision.sh: the cpu device in fp32 and in bf16 (bf16 storage, fp32
# arithmetic), back to back per model and ROUNDS times (the machine is
# shared: pairs, not absolute times, compare), on ResNet-50 batch 1 and
# GPT-2 batch 1 on 128 tokens: sinter bench --device cpu (latency, cold
# compile, warm start, weight image, arena), each with caches of its own.
# Then per model and precision an AOT package: its size, the peak RSS of
# a process that loads and runs it once, its load time. ROUNDS 0: only that.
# usage: benchmarks/cpu_precision.sh SINTER [ROUNDS] [WORKDIR]
set -u
S=$1
R=${2:-2}
W=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$W"
sed 's/\b512\b/128/g' "$here/samples/gpt2.sir" > "$W/gpt2_t128.sir"
echo "# $(date -u) $(nproc) cores; $(uptime)"
for round in $(seq 1 "$R"); do
	for model in "$here/samples/resnet50.sir" "$W/gpt2_t128.sir"; do
		for p in fp32 bf16; do
			name=$(basename "$model" .sir).$p.r$round
			export SINTER_CACHE_DIR=$W/cache.$name
			rm -rf "$SINTER_CACHE_DIR"
			"$S" bench "$model" --shape N=1 --device cpu --precision $p --iters 20 --warmup 3 --json \
				> "$W/$name.json" 2> "$W/$name.err"
			python3 - "$W/$name.json" "$name" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%-22s median %8.1f ms  min %8.1f ms  weights %6.1f MB  arena %5.1f MB  cold %5.2f s  warm %5.2f s" % (
    sys.argv[2], d["median_ms"], d["min_ms"], d["weight_bytes"] / 1e6, d["arena_bytes"] / 1e6,
    d["cold_compile_s"], d["warm_start_s"]))
PY
		done
	done
done
# AOT packages (sinter compile --device cpu -o): a process that loads one
# and runs it once reads only the package: its peak RSS is the plan's
# memory (weight image, arena, staging, code, the process), its load time
# the package read, checks and JIT linking
for model in "$here/samples/resnet50.sir" "$W/gpt2_t128.sir"; do
	for p in fp32 bf16; do
		name=$(basename "$model" .sir).$p
		export SINTER_CACHE_DIR=$W/cache.pkg.$name
		"$S" compile "$model" --shape N=1 --device cpu --precision $p --init random -o "$W/$name.sinterpkg" > /dev/null 2>&1
		/usr/bin/time -f "%M" -o "$W/$name.rss" "$S" run "$W/$name.sinterpkg" > "$W/$name.run" 2>&1
		printf "%-22s package %6.1f MB  peak RSS of a run %6.1f MB  %s\n" "$name" \
			"$(echo "$(stat -c %s "$W/$name.sinterpkg") / 1000000" | bc -l)" \
			"$(echo "$(cat "$W/$name.rss") * 1024 / 1000000" | bc -l)" "$(grep -o 'package loaded in [0-9.]* s' "$W/$name.run")"
		rm -f "$W/$name.sinterpkg"
	done
done
echo "# $(date -u); $(uptime)"
