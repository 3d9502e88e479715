#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# TEMPORARY -- delete once the skeleton branch (the daemons' --print-config)
# is merged.  Stands in for `DAEMON --print-config --config=/dev/null` when
# packages.bats builds a tree whose daemons lack it: the same keys,
# commented out at their defaults, from --help.
set -eu
bin=$1
printf '# %s: the options of %s (stand-in for --print-config)\n' "${bin##*/}" "${bin##*/}"
env -i "$bin" --help | awk '
/^  --[a-z0-9_]+=[A-Z]+ / {
	l = substr($0, 5); n = substr(l, 1, index(l, "=") - 1)
	if (n == "config") next
	d = l; sub(/.*\(default: /, "", d); sub(/\)$/, "", d)
	if (d == "\"\"") d = ""
	h = l; sub(/^[^ ]* +/, "", h); sub(/ \(default: .*/, "", h)
	printf "\n# %s.\n#%s = %s\n", h, n, d
}'
