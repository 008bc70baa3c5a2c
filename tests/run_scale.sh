#!/usr/bin/env bash
# run_scale.sh SINTER NODES BOUND_S [compile]: graphs of any size. A chain of
# NODES elementwise nodes (every seventh an add of the input, so CSE and the
# rules have work) goes through the default pass pipeline, and with
# `compile` through `compile --target sm_90` (skipped without NVRTC), each
# within BOUND_S seconds. A benchmark with a generous bound, not a timed
# unit test: the passes were quadratic (16k nodes: 16 s in canonicalize).
set -u
sinter=$1 nodes=$2 bound=$3 what=${4:-passes}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$nodes" >"$tmp/chain.sir" <<'PY'
import sys
n = int(sys.argv[1])
ops = ["relu", "neg", "exp", "tanh", "sigmoid"]
print("sinter 1\n\nfunc @main(%x: f32[N,64]) -> (f32[N,64]) {")
prev = "x"
for i in range(n):
    print(f"  %v{i} = add(%{prev}, %x)" if i % 7 == 3 else f"  %v{i} = {ops[i % 5]}(%{prev})")
    prev = f"v{i}"
print(f"  return %{prev}\n}}")
PY
timed() { # timed LABEL command...: runs it, fails past the bound
	local label=$1 t0 t1 rc
	shift
	t0=$(date +%s.%N)
	"$@" >"$tmp/out.txt" 2>"$tmp/err.txt"
	rc=$?
	t1=$(date +%s.%N)
	local secs
	secs=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
	echo "$label: $nodes nodes in $secs s (bound $bound s, exit $rc)"
	if [ "$rc" = 3 ] && [ "$what" = compile ]; then
		echo "skipped: $(head -1 "$tmp/err.txt")"
		exit 0
	fi
	[ "$rc" = 0 ] || { echo "FAIL: exit $rc"; head -5 "$tmp/err.txt"; exit 1; }
	python3 -c "import sys; sys.exit(0 if $t1 - $t0 < $bound else 1)" || { echo "FAIL: over the bound"; exit 1; }
}
if [ "$what" = compile ]; then
	export SINTER_CACHE_DIR=$tmp/cache
	# one step per node without fusion (lowering and the memory plan over every node)
	timed "compile --no-fusion" "$sinter" compile "$tmp/chain.sir" --shape N=2 --target sm_90 --no-fusion
	grep -q "^.*: $nodes steps" "$tmp/out.txt" || { echo "FAIL: steps"; cat "$tmp/out.txt"; exit 1; }
	timed compile "$sinter" compile "$tmp/chain.sir" --shape N=2 --target sm_90
	# fused: groups of at most 64 nodes, so between nodes/64 and nodes steps
	steps=$(sed -n 's/^.*: \([0-9]*\) steps.*/\1/p' "$tmp/out.txt" | head -1)
	{ [ -n "$steps" ] && [ "$steps" -ge $((nodes / 64)) ] && [ "$steps" -le "$nodes" ]; } ||
		{ echo "FAIL: steps"; cat "$tmp/out.txt"; exit 1; }
else
	timed passes "$sinter" print "$tmp/chain.sir" --shape N=2 --mode default
	# every node is live and distinct: the chain keeps its length
	[ "$(grep -c ' = ' "$tmp/out.txt")" -ge "$nodes" ] || { echo "FAIL: nodes lost"; exit 1; }
fi
echo "scale: ok"
