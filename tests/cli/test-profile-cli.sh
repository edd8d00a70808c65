#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# tracekit profile and flamegraph as a user runs them, without recording:
# the perf.data corpus of tests/data/perf against perf report (when perf is
# installed), the options' effects, --json, the flame graph's outputs and
# the usage errors. The recording oracle test is
# tests/integration/test-profile.sh.
set -u
. "$(dirname "$0")/../lib.sh"
tmp=$(mktemp -d /tmp/tk-profile-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
g=$TK_SOURCE_DIR/tests/data/perf/g.data
plain=$TK_SOURCE_DIR/tests/data/perf/plain.data
dat=$TK_SOURCE_DIR/tests/data/sample-v7-zstd.dat

run --help
check "tracekit --help lists profile and flamegraph" \
	eval 'out_has "^  *profile " && out_has "^  *flamegraph "'
run profile --help
check "profile --help" eval 'rc_is 0 && out_has "percent-limit" && out_has -- "--json"'
run flamegraph --help
check "flamegraph --help" eval 'rc_is 0 && out_has -- "--folded" && out_has -- "--off-cpu"'

run profile "$g"
check "profile of a -g file: children and graphs" \
	eval 'rc_is 0 && out_has "^# Children      Self  Command" && out_has "^            ---" && err_empty'
cp "$tmp/out" "$tmp/default.txt"
run profile -i "$g"
check "-i FILE prints what FILE prints" eval 'rc_is 0 && cmp -s "$tmp/out" "$tmp/default.txt"'
run profile --stdio --no-children -g none "$g"
check "--no-children -g none: one overhead column, no graph" \
	eval 'rc_is 0 && out_has "^# Overhead  Command" && ! out_has "---"'
run profile --sort dso --no-children "$plain"
check "--sort dso" eval 'rc_is 0 && out_has "^# Overhead  Shared Object"'
run profile --percent-limit 10 --no-children "$plain"
check "--percent-limit 10 hides the small entries" \
	eval 'rc_is 0 && ! grep -q "^ *[0-9]\.[0-9][0-9]%" "$tmp/out"'

if command -v perf >/dev/null; then
	for f in plain g two-events z; do
		for o in "" "--no-children -g none" "--sort dso,sym --no-children" "--sort pid -g none"; do
			perf report -i "$TK_SOURCE_DIR/tests/data/perf/$f.data" --stdio $o 2>/dev/null |
				head -n -3 >"$tmp/p.txt"
			run profile -i "$TK_SOURCE_DIR/tests/data/perf/$f.data" $o
			check "$f.data ${o:-(default)} = perf report --stdio" \
				eval 'rc_is 0 && cmp -s "$tmp/out" "$tmp/p.txt"'
		done
	done
	perf script -i "$g" 2>/dev/null |
		LC_ALL=C awk -f "$TK_SOURCE_DIR/tests/integration/stackcollapse.awk" |
		LC_ALL=C sort >"$tmp/sc.txt"
	run flamegraph --folded "$g"
	check "flamegraph --folded = perf script | stackcollapse" \
		eval 'rc_is 0 && [ -s "$tmp/sc.txt" ] && cmp -s "$tmp/out" "$tmp/sc.txt"'
	# A callchain's kernel part holding user addresses: no map, as in perf.
	k=$TK_SOURCE_DIR/tests/data/perf/kctx-user-ips.data
	perf script -i "$k" 2>/dev/null |
		LC_ALL=C awk -f "$TK_SOURCE_DIR/tests/integration/stackcollapse.awk" |
		LC_ALL=C sort >"$tmp/sc.txt"
	run flamegraph --folded "$k"
	check "flamegraph --folded = perf script | stackcollapse (user ips after the kernel marker)" \
		eval 'rc_is 0 && [ -s "$tmp/sc.txt" ] && cmp -s "$tmp/out" "$tmp/sc.txt"'
	for o in "--no-children -g none" "--sort dso,sym --no-children"; do
		perf report -i "$k" --stdio $o 2>/dev/null | head -n -3 >"$tmp/p.txt"
		run profile -i "$k" $o
		check "kctx-user-ips.data $o = perf report --stdio" \
			eval 'rc_is 0 && cmp -s "$tmp/out" "$tmp/p.txt"'
	done
else
	skip "perf report comparisons" "perf is not installed"
fi

run profile --json "$g"
check "--json parses; children and self present" eval 'rc_is 0 && python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d[\"children\"] is True
e = d[\"events\"][0]
assert e[\"name\"] == \"cpu-clock\" and e[\"samples\"] > 0
assert all(\"children\" in x and \"overhead\" in x for x in e[\"entries\"])
" "$tmp/out"'

run flamegraph -o "$tmp/g.svg" "$g"
check "flamegraph -o writes a self-contained SVG" eval 'rc_is 0 && [ ! -s "$tmp/out" ] &&
	head -c 200 "$tmp/g.svg" | grep -q "<svg" && grep -q "<script" "$tmp/g.svg" &&
	! grep -q "http[s]*://[^w]" "$tmp/g.svg"'
run flamegraph --folded --title x "$g"
check "folded lines are 'stack count'" eval 'rc_is 0 && [ -s "$tmp/out" ] &&
	! grep -qv "^[^ ].* [0-9][0-9]*$" "$tmp/out"'
run flamegraph --off-cpu --folded "$dat"
check "--off-cpu on a .dat: per-task time" eval 'rc_is 0 && [ -s "$tmp/out" ]'

run profile --sort nope "$g"
check "unknown sort key: usage error" eval 'rc_is 2 && err_has "sort key"'
run profile -g fractal "$g"
check "-g fractal: usage error" eval 'rc_is 2 && err_has "fractal"'
run profile --percent-limit x "$g"
check "bad percent limit: usage error" eval 'rc_is 2'
run profile "$dat"
check "profile of a .dat: error naming the file" eval 'rc_is 1 && err_has "sample-v7-zstd.dat"'
run profile "$tmp/none"
check "missing file: error" eval 'rc_is 1 && err_lines 1'
run flamegraph "$dat"
check "flamegraph of a .dat without stack traces: error" eval 'rc_is 1 && err_has "stack traces"'
run flamegraph --width 5 "$g"
check "bad width: usage error" eval 'rc_is 2'
run flamegraph a b
check "two inputs: usage error" eval 'rc_is 2'
finish
