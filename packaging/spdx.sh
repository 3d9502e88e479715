#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# packaging/spdx.sh check|add [FILE...] -- the SPDX-License-Identifier line
# of every file in git (or of the FILEs given).
#
#   check  lists each file that lacks the line ("missing") or names another
#          licence than its own ("wrong"), exits 1 if there is any
#   add    puts the line into each file that lacks it, in the comment
#          syntax of its type, as line 1 (line 2 after a #! line)
#
# Licences: the BPF programs and the headers they include are
# "(LGPL-2.1 OR BSD-2-Clause)" -- the kernel sees them as "Dual BSD/GPL",
# which lets them call GPL-only helpers; everything else is Apache-2.0
# (LICENSE).  Files that cannot hold a comment are exempt (see exempt()).
set -eu
cd "$(dirname "$0")/.."

APACHE=Apache-2.0
BPF="(LGPL-2.1 OR BSD-2-Clause)"

# The licence a file carries.
license_of() {
	case "$1" in
	bpf/*.bpf.c | bpf/*.bpf.h | lib/trace/mooncake-trace.h) echo "$BPF" ;;
	*) echo "$APACHE" ;;
	esac
}

# Files that cannot hold a comment (data, JSON, formats without comments)
# or that are the licence: they are covered by LICENSE and debian/copyright.
exempt() {
	case "$1" in
	LICENSE | */LICENSE | crash-*) return 0 ;;
	tests/fuzz/corpus/*) return 0 ;;		# fuzzer inputs (raw bytes)
	tests/unit/samples/*) return 0 ;;		# committed oplog and sqlite files (binary)
	*.json) return 0 ;;				# JSON has no comments
	packaging/debian/changelog) return 0 ;;		# dpkg-parsechangelog format
	packaging/debian/copyright) return 0 ;;		# names the licences itself
	packaging/debian/source/format) return 0 ;;	# one fixed line
	esac
	return 1
}

# The comment line for a file: "c" (/* */), "hash" (#), "roff" (.\"),
# "html" (<!-- -->) or "" when the type is unknown.
style_of() {
	case "$1" in
	*.c | *.h | *.def | *.map) echo c ;;
	*.1 | *.5 | *.8 | *.[158].in) echo roff ;;
	*.md) echo html ;;
	Makefile | *.mk | *.sh | *.bash | *.bats | *.py | *.yaml | *.yml | *.toml | .gitignore | */.gitignore | \
	*.bash-completion | *.in | *.service | *.sysusers | *.tmpfiles | *.conf | *.spec | .ci/* | \
	packaging/debian/*) echo hash ;;
	*) case "$(head -c 2 "$1" 2>/dev/null)" in '#!') echo hash ;; *) echo "" ;; esac ;;
	esac
}

line_for() {
	local id="SPDX-License-Identifier: $(license_of "$1")"
	case "$(style_of "$1")" in
	c) echo "/* $id */" ;;
	roff) echo ".\\\" $id" ;;
	html) echo "<!-- $id -->" ;;
	hash) echo "# $id" ;;
	esac
}

has_line() { head -n 5 "$1" | grep -q 'SPDX-License-Identifier:'; }

files() {
	if [ $# -gt 0 ]; then printf '%s\n' "$@"; else git ls-files; fi
}

mode=${1:-check}
[ $# -gt 0 ] && shift
case "$mode" in
check)
	bad=0
	while IFS= read -r f; do
		[ -f "$f" ] && ! exempt "$f" || continue
		if ! has_line "$f"; then
			echo "missing: $f"
			bad=1
		elif ! head -n 5 "$f" | grep -qF "SPDX-License-Identifier: $(license_of "$f")"; then
			echo "wrong: $f (expected $(license_of "$f"))"
			bad=1
		elif [ -z "$(style_of "$f")" ]; then
			echo "unknown type (add it to style_of in $0): $f"
			bad=1
		fi
	done < <(files "$@")
	exit $bad
	;;
add)
	while IFS= read -r f; do
		[ -f "$f" ] && ! exempt "$f" && ! has_line "$f" || continue
		l=$(line_for "$f")
		if [ -z "$l" ]; then
			echo "skipped (unknown type, add it to style_of in $0): $f" >&2
			continue
		fi
		# Rewrite in place (cat >) so that the mode and the inode stay.
		t=$(mktemp)
		if head -n 1 "$f" | grep -q '^#!'; then
			{ head -n 1 "$f"; printf '%s\n' "$l"; tail -n +2 "$f"; } >"$t"
		else
			{ printf '%s\n' "$l"; cat "$f"; } >"$t"
		fi
		cat "$t" >"$f"
		rm -f "$t"
		echo "added: $f"
	done < <(files "$@")
	;;
*)
	echo "usage: $0 check|add [FILE...]" >&2
	exit 2
	;;
esac
