#!/usr/bin/env bash
# run_golden.sh SINTER ROOT golden|roundtrip
#   golden:    for every tests/golden/NAME.sir, `sinter print` must write
#              exactly tests/golden/NAME.expected.
#   roundtrip: for every tests/golden/*.sir and samples/*.sir (globbed now,
#              so new samples are covered), print, parse the printout, print
#              again: the two texts must be equal (the printer's fixed point).
# Every mismatch is reported; the exit status is 1 if there was any.
set -u
sinter=$1 root=$2 mode=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
shopt -s nullglob

if [ "$mode" = golden ]; then
	for sir in "$root"/tests/golden/*.sir; do
		name=$(basename "$sir" .sir)
		exp=${sir%.sir}.expected
		n=$((n + 1))
		if [ ! -f "$exp" ]; then
			echo "FAIL $name: no $exp"
			fail=1
			continue
		fi
		if ! "$sinter" print "$sir" >"$tmp/out" 2>"$tmp/err"; then
			echo "FAIL $name: sinter print failed:"
			cat "$tmp/err"
			fail=1
		elif ! cmp -s "$tmp/out" "$exp"; then
			echo "FAIL $name: output differs from $exp:"
			diff -u "$exp" "$tmp/out" | head -40
			fail=1
		else
			echo "ok   $name"
		fi
	done
elif [ "$mode" = roundtrip ]; then
	for sir in "$root"/tests/golden/*.sir "$root"/samples/*.sir; do
		name=$(basename "$(dirname "$sir")")/$(basename "$sir")
		n=$((n + 1))
		if ! "$sinter" print "$sir" >"$tmp/p1.sir" 2>"$tmp/err"; then
			echo "FAIL $name: sinter print failed:"
			cat "$tmp/err"
			fail=1
		elif ! "$sinter" print "$tmp/p1.sir" >"$tmp/p2.sir" 2>"$tmp/err"; then
			echo "FAIL $name: the printed text does not parse:"
			cat "$tmp/err"
			fail=1
		elif ! cmp -s "$tmp/p1.sir" "$tmp/p2.sir"; then
			echo "FAIL $name: print(parse(print(x))) differs from print(x):"
			diff -u "$tmp/p1.sir" "$tmp/p2.sir" | head -40
			fail=1
		else
			echo "ok   $name ($(wc -l <"$tmp/p1.sir") lines)"
		fi
	done
else
	echo "usage: run_golden.sh SINTER ROOT golden|roundtrip" >&2
	exit 2
fi
if [ "$n" -eq 0 ]; then
	echo "FAIL: no input files found under $root"
	exit 1
fi
echo "$n files, $([ $fail = 0 ] && echo 'all passed' || echo 'some FAILED')"
exit $fail
