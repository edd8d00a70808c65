# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# stackcollapse-perf.pl's default behaviour, written anew in awk as the
# oracle of `tracekit flamegraph --folded`: read `perf script` output (with
# callchains) and print "comm;outermost;...;innermost COUNT", one line per
# distinct stack, sorted bytewise (run under LC_ALL=C).
#   - a sample's header line names the thread: the text before the first
#     " TID " (or " PID/TID "), spaces turned into '_'; only samples of the
#     first event met count;
#   - each callchain line "IP SYM+0xOFF (DSO)" gives a frame: SYM without
#     its offset, "->"-joined inline names split; "[unknown]" becomes the
#     dso's file name, or "unknown"; then ';' -> ':', from the first '('
#     (not "(anonymous namespace)") to the end cut unless the name holds
#     ".(...).", quotes dropped;
#   - a blank line ends the sample: its frames reversed behind the name.
function tidy(f,   p, rest) {
	gsub(/;/, ":", f)
	if (f !~ /\.\(.*\)\./) {
		rest = f; p = 0
		while ((i = index(rest, "(")) > 0) {
			if (substr(rest, i, 21) == "(anonymous namespace)") {
				p += i + 20; rest = substr(rest, i + 21); continue
			}
			f = substr(f, 1, p + i - 1); break
		}
	}
	gsub(/["']/, "", f)
	return f
}
BEGIN { pname = ""; n = 0; event = "" }
/^$/ {
	if (pname != "") {
		s = pname
		for (i = n; i >= 1; i--) s = s ";" st[i]
		count[s]++
	}
	pname = ""; n = 0
	next
}
/^[^ \t]/ {
	n = 0; pname = ""
	if (!match($0, /[ \t]+[0-9]+(\/[0-9]+)?[ \t]+/)) next
	name = substr($0, 1, RSTART - 1)
	ev = $0
	sub(/:[ \t]*$/, "", ev)
	sub(/.*[ \t]/, "", ev)
	if (event == "") event = ev
	if (ev != event) next
	gsub(/ /, "_", name)
	pname = name
	next
}
{
	if (pname == "") next
	line = $0
	sub(/^[ \t]+/, "", line)
	if (!match(line, /^[0-9a-f]+[ \t]*/)) next
	line = substr(line, RLENGTH + 1)
	if (!match(line, / \([^ ]*\)$/)) next
	mod = substr(line, RSTART + 2, RLENGTH - 3)
	raw = substr(line, 1, RSTART - 1)
	sub(/\+0x[0-9a-f]+$/, "", raw)
	if (substr(raw, 1, 1) == "(") next
	k = split(raw, parts, /->/)
	for (j = 1; j <= k; j++) {
		f = parts[j]
		if (f == "[unknown]") {
			if (mod != "[unknown]") { f = mod; sub(/.*\//, "", f) } else f = "unknown"
		}
		g = (j == 1) ? tidy(f) : g ";" tidy(f)
	}
	# the inline group goes in front as a whole, in its own order
	st[++n] = g
}
END {
	for (s in count) print s " " count[s]
}
