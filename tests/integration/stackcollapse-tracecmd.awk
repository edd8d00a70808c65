# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The oracle of `tracekit flamegraph --folded FILE.dat`: read `trace-cmd
# report` output of a .dat with kernel stack traces (record -T) and print
# "comm;outermost;...;innermost COUNT" per distinct stack (sort it under
# LC_ALL=C). A "kernel_stack:" line names the task ("comm-pid" before the
# CPU column; its comm may hold '-' and spaces); each following
# "=> name (address)" line is a frame, innermost first; spaces in the comm
# become '_' and ';' in a name ':' (stackcollapse's rules).
function flush(   s, i) {
	if (comm == "") return
	s = comm
	for (i = n; i >= 1; i--) s = s ";" st[i]
	count[s]++
	comm = ""; n = 0
}
/^=> / {
	if (comm == "") next
	f = substr($0, 4)
	sub(/ \([0-9a-f]+\)$/, "", f)
	gsub(/;/, ":", f)
	st[++n] = f
	next
}
{
	flush()
	if ($0 !~ /: kernel_stack: /) next
	head = $0
	sub(/ +\[[0-9]+\] .*/, "", head)
	sub(/^ +/, "", head)
	sub(/-[0-9]+$/, "", head)
	gsub(/ /, "_", head)
	comm = head
}
END {
	flush()
	for (s in count) print s " " count[s]
}
