#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# daemon/common/man-options.sh flags|keys -- turns a daemon's --help (on
# standard input) into man page paragraphs, one .TP an option:
#   flags   "--name=TYPE" for the daemon's page (OPTIONS)
#   keys    "name = TYPE" for mooncake.conf(5)
# followed by the option's help and its default.  --help is printed from
# the daemon's option table (config.c), so the pages are built from the
# table and cannot drift from it.  --config, --help and the like are not
# in the table; the pages describe them by hand.  Exits 1, naming the
# line, when an option line does not parse or when there is none.
set -eu
mode=${1:-}
case "$mode" in flags | keys) ;; *) echo "usage: $0 flags|keys <HELP" >&2; exit 2 ;; esac

awk -v mode="$mode" '
function roff(s) {		# text safe in a roff text line
	gsub(/\\/, "\\e", s)
	if (s ~ /^[.\047]/)
		s = "\\&" s
	return s
}
function dashes(s) { gsub(/-/, "\\-", s); return s }
# "--name=TYPE   help [constraint] (default: X)"
/^  --[a-z0-9_]+=[A-Z]+ / {
	line = substr($0, 5)
	eq = index(line, "=")
	name = substr(line, 1, eq - 1)
	if (name == "config")
		next
	rest = substr(line, eq + 1)
	type = substr(rest, 1, index(rest, " ") - 1)
	text = substr(rest, length(type) + 1)
	sub(/^ +/, "", text)
	at = 0
	for (i = index(text, "(default: "); i > 0; i = index(substr(text, at + 1), "(default: "))
		at += i
	if (at == 0 || substr(text, length(text)) != ")") {
		printf "man-options: no \"(default: X)\" in: %s\n", $0 > "/dev/stderr"
		bad = 1
		next
	}
	def = substr(text, at + 10, length(text) - at - 10)
	help = substr(text, 1, at - 1)
	sub(/ +$/, "", help)
	if (help !~ /[.!?]$/)
		help = help "."
	if (def == "\"\"")
		def = "(empty)"
	print ".TP"
	if (mode == "flags")
		printf "\\fB\\-\\-%s=\\fR\\fI%s\\fR\n", dashes(name), type
	else
		printf "\\fB%s\\fR = \\fI%s\\fR\n", name, type
	print roff(help)
	printf "Default: \\fB%s\\fR.\n", dashes(roff(def))
	n++
}
END {
	if (!n && !bad)
		print "man-options: no option found in the --help text" > "/dev/stderr"
	exit (bad || !n) ? 1 : 0
}
'
