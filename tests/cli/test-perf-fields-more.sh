#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
#
# perf-fields-more: report --fields with every field name Debian's perf
# 6.1 script -F accepts (issue 17), against `perf script -F` on the
# perf.data corpus (tests/data/perf), live, since symbols resolve on the
# machine that runs the test:
#   - where perf prints, tracekit prints the same bytes, exit 0: the
#     memory fields (addr, data_src, weight, ins_lat, phys_addr,
#     data_page_size, code_page_size), misc, flags and callindent (no
#     sample of these files has branch flags: flags is perf's empty
#     column, callindent nothing), and the fields that print nothing on
#     samples without what they show (brstack*, synth, metric, ipc,
#     machine_pid, vcpu);
#   - where perf refuses a field the samples lack ("Samples for 'E' event
#     do not have X attribute set. ..."), tracekit prints the same sentence
#     on one line and exits 2;
#   - tod: the wall-clock time from CLOCK_DATA (k1.data), "disabled" in
#     pipe mode, perf's refusal on files recorded without -k;
#   - what tracekit does not print (srcline, srccode, insn, insnlen,
#     bpf-output, brstackinsn, brstackinsnlen, and registers or branch
#     stacks a file holds) is one line naming the field, exit 2;
# (pipe files with callchains and --call-graph dwarf files are left out:
# their --fields lines differ from perf's whatever the field, see
# tracekit-report(1)).
#   - names perf 6.1 does not know (cgroup, retire_lat) are invalid, as in
#     perf;
# then perf script's other options: -C, -c/--comms, --tid, --time as
# perf's, the rest refused by name, the perf.data ones refused on a .dat.
# Nothing here touches tracefs.
set -u
. "$(dirname "$0")/../lib.sh"

command -v perf >/dev/null 2>&1 || { echo "SKIP: perf is not installed"; exit 77; }
perf version 2>/dev/null | grep -q "^perf version 6\.1\." ||
	{ echo "SKIP: perf is not 6.1 (the oracle these outputs are checked against)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tk-perf-fields-more.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
data=$TK_SOURCE_DIR/tests/data/perf

# same FILE LIST: tracekit report --fields LIST prints what perf script -F
# LIST prints, or refuses it as perf does.
same() {
	local f=$1 list=$2 prc msg name
	name="--fields $list $(basename "$f")"
	perf script -i "$f" -F "$list" >"$tmp/perf" 2>"$tmp/perf.err"
	prc=$?
	run report --fields "$list" "$f"
	if [ "$prc" -eq 0 ]; then
		check "$name: as perf script" eval 'rc_is 0 && cmp -s "$tmp/perf" "$tmp/out"'
		return
	fi
	msg=$(grep -m 1 "^Samples for .* attribute set\." "$tmp/perf.err")
	if [ -n "$msg" ]; then
		check "$name: perf's refusal" eval 'rc_is 2 && err_lines 2 && grep -qF -- "$msg" "$tmp/err"'
	else
		check "$name: refused as perf refuses it" eval 'rc_is 2 && err_lines 2 && [ ! -s "$tmp/out" ]'
	fi
}

files=()
for b in plain g sample-cpu d W phys-data data-page-size code-page-size tracepoints two-events \
	group-read mod-k switch-events pipe R kctx-user-ips k1 pipe-mod; do
	[ -s "$data/$b.data" ] && perf script -i "$data/$b.data" >/dev/null 2>&1 && files+=("$data/$b.data")
done
[ ${#files[@]} -ge 10 ] || { fail "corpus files perf reads" "only ${#files[@]}"; finish; }

for f in "${files[@]}"; do
	for list in callindent comm,tid,time,callindent comm,tid,time,ip,sym,callindent \
		comm,tid,time,event,trace,callindent flags time,flags comm,tid,time,ip,sym,flags \
		misc comm,tid,cpu,misc,time,event,ip,flags,period comm,tid,time,addr \
		comm,tid,time,data_src comm,tid,time,weight comm,tid,time,ins_lat \
		comm,tid,time,ip,sym,phys_addr comm,tid,time,ip,data_page_size \
		comm,tid,time,code_page_size \
		comm,tid,time,ip,sym,dso,addr,data_src,weight,phys_addr,data_page_size,code_page_size \
		comm,brstack comm,ip,brstacksym comm,brstackoff comm,synth comm,metric comm,ipc \
		comm,machine_pid,vcpu comm,iregs comm,uregs comm,cpu comm,tod,time tod; do
		same "$f" "$list"
	done
done

# What tracekit does not print: one line naming the field, exit 2.
for field in srcline srccode insn insnlen bpf-output brstackinsn brstackinsnlen; do
	run report --fields "comm,ip,$field" "$data/plain.data"
	check "--fields $field is not supported" eval 'rc_is 2 && err_lines 2 && err_has "$field. is not supported" && [ ! -s "$tmp/out" ]'
done
run report --fields comm,srcline "$data/plain.data"
check "--fields srcline without ip: perf's reason" eval 'rc_is 2 && err_has "sample IP is not selected"'
if [ -s "$data/dwarf.data" ]; then
	run report --fields comm,uregs "$data/dwarf.data"
	check "--fields uregs on samples with registers is not supported" eval 'rc_is 2 && err_lines 2 && err_has "not supported"'
fi
for field in cgroup retire_lat bogus; do
	run report --fields "comm,$field" "$data/plain.data"
	check "--fields $field is invalid, as in perf 6.1" eval 'rc_is 2 && err_has "invalid field requested: .$field."'
done
run report --fields sw:comm,tid "$data/plain.data"
check "--fields with perf's type prefix is refused" eval 'rc_is 2 && err_lines 2 && err_has "not supported"'
run report --fields +period "$data/plain.data"
check "--fields with perf's +field edit is refused" eval 'rc_is 2 && err_lines 2 && err_has "not supported"'

# perf script's options beside -F: those tracekit report takes print what
# perf script prints; the others are refused by name.
f=$data/sample-cpu.data
if [ -s "$f" ]; then
	tid=$(perf script -i "$f" -F tid 2>/dev/null | awk 'NR == 1 { print $1 }')
	t1=$(perf script -i "$f" -F time 2>/dev/null | awk 'NR == 3 { sub(":", "", $1); print $1 }')
	t2=$(perf script -i "$f" -F time 2>/dev/null | awk 'NR == 9 { sub(":", "", $1); print $1 }')
	for o in "-C 0" "--cpu 0" "-C 1" "--comms sh" "-c sh,true" "--tid $tid" "--tid $tid,1" \
		"--time $t1,$t2" "--time ,$t2" "--time $t1," "--ns --time $t1,$t2" "--pid $tid"; do
		# shellcheck disable=SC2086 # the options are words
		perf script -i "$f" $o >"$tmp/perf" 2>/dev/null
		# shellcheck disable=SC2086
		run report $o "$f"
		check "report $o: as perf script $o" eval 'rc_is 0 && cmp -s "$tmp/perf" "$tmp/out"'
	done
fi
for o in -a -d -D -g -s --itrace --show-mmap-events --show-task-events --deltatime --reltime \
	--inline --dsos=x --symbols=x --hide-call-graph --header-only --demangle --guestmount=x \
	--dlfilter=x --switch-on=x --xed --per-event-dump --stitch-lbr --show-info --force; do
	run report $o "$data/plain.data"
	check "perf script's $o: refused by name" eval 'rc_is 2 && err_lines 2 && err_has "is not supported" && [ ! -s "$tmp/out" ]'
done
for o in --sym -T -v -G --by-comm "-H a,b/c,d"; do
	# shellcheck disable=SC2086
	run report $o "$data/plain.data"
	check "trace-cmd's $o on perf.data: refused" eval 'rc_is 2 && err_has "is for .dat files" && [ ! -s "$tmp/out" ]'
done
run report --time 10%/1 "$data/plain.data"
check "--time in percent: refused" eval 'rc_is 2 && err_has "START,STOP"'
for o in "--tid 1" "-k /nonexistent" "--symfs /" "--max-stack 3" --no-inline; do
	# shellcheck disable=SC2086
	run report $o "$TK_SOURCE_DIR/tests/data/tc34/v6.dat"
	check "perf.data's $o on a .dat: refused" eval 'rc_is 2 && err_has "is for perf.data files"'
done

finish
