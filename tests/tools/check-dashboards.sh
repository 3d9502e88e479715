#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/tools/check-dashboards.sh -- checks Grafana dashboard JSON files
# (packaging/grafana/dashboards/*.json) without Grafana: jq and curl only.
#
#   check-dashboards.sh [options] DASHBOARD.json...
#
# Always (structure):
#   - every file is valid JSON with a uid (at most 40 characters) and a
#     title, both unique across the files given;
#   - templating holds the datasource variable DS_PROMETHEUS (type
#     datasource, query prometheus);
#   - panel ids are unique in a file; every panel but rows has the
#     datasource {"type":"prometheus","uid":"${DS_PROMETHEUS}"}, a gridPos
#     inside the 24 columns and at least one target, every target a
#     non-empty expr (and, if it names one, the same templated datasource);
#   - every query variable uses the templated datasource.
# Options:
#   --names FILE     every metric name used by an expr or a variable query
#                    must be a line of FILE (a histogram's NAME covers
#                    NAME_bucket, NAME_sum and NAME_count)
#   --prom URL       evaluates every target expr as an instant query at
#                    URL/api/v1/query, after substituting Grafana's macros
#                    ($__rate_interval -> 1m or --rate-interval, $__interval
#                    -> 15s, $__range -> 5m) and the dashboard's variables (their allValue, else
#                    .*); a target whose result is empty, or only NaN, has
#                    no data and fails its panel.  Variable queries
#                    label_values(SELECTOR, LABEL) must return that label.
#   --rate-interval D  what $__rate_interval stands for (default 1m); a test
#                    on a slow machine widens it so that a workload some
#                    time ago still shows in rate() and histogram_quantile()
#   --may-be-empty TITLE
#                    (repeatable) the panel TITLE may have no data: reported
#                    as allowed, not failed.  TITLE must exist.
#   --list-names     print the metric names the files use, one a line; exit
#   -v               print every target checked, not only the failures
#
# The report names each failing panel as FILE #ID "TITLE" REFID: EXPR, and
# ends with "dashboards: N panels, N targets: N with data, N without (...)".
# Exit status: 0 clean, 1 a check failed, 2 usage error.
set -u

usage() { sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2; }

prom= names= list=0 verbose=0 rate_interval=1m
allowed=()
files=()
while [ $# -gt 0 ]; do
	case "$1" in
	--prom) prom=${2:?--prom needs a URL}; shift ;;
	--rate-interval) rate_interval=${2:?--rate-interval needs a duration}; shift ;;
	--names) names=${2:?--names needs a file}; shift ;;
	--may-be-empty) allowed+=("${2:?--may-be-empty needs a title}"); shift ;;
	--list-names) list=1 ;;
	-v) verbose=1 ;;
	-h|--help) usage ;;
	-*) echo "check-dashboards: unknown option $1" >&2; usage ;;
	*) files+=("$1") ;;
	esac
	shift
done
[ ${#files[@]} -gt 0 ] || usage
command -v jq >/dev/null || { echo "check-dashboards: jq is needed" >&2; exit 2; }
[ -z "$prom" ] || command -v curl >/dev/null || { echo "check-dashboards: curl is needed" >&2; exit 2; }

fail=0
err() { echo "FAIL  $*"; fail=1; }

# ---- one jq pass over every file ------------------------------------------------------
# It prints lines of tab-separated fields:
#   P  MESSAGE                          a structure or names problem
#   N  METRIC                           a metric name used (--list-names)
#   T  FILE ID TITLE REFID base64(EXPR) a target, macros and variables substituted
#   V  FILE NAME base64(EXPR)           a label_values() variable, as a query

good=()
for f in "${files[@]}"; do
	if jq -e 'type == "object"' "$f" >/dev/null 2>&1; then
		good+=("$f")
	else
		err "$f: not a JSON object ($(jq empty "$f" 2>&1 | head -n1))"
	fi
done
[ ${#good[@]} -gt 0 ] || exit 1

JQ_PROG='
def ds_ok: type == "object" and .type == "prometheus" and
	(.uid == "${DS_PROMETHEUS}" or .uid == "$DS_PROMETHEUS");
def panels: [.panels[]? | ., (.panels[]? // empty)];
def names: [scan("\\bmooncake_[A-Za-z0-9_:]+")] | unique;
def vquery: .query | if type == "object" then .query else . end // "";
def subst($vars):
	gsub("\\$\\{__rate_interval\\}|\\$__rate_interval\\b"; $ri) |
	gsub("\\$\\{__interval\\}|\\$__interval\\b"; "15s") |
	gsub("\\$\\{__range\\}|\\$__range\\b"; "5m") |
	reduce $vars[] as $v (.; gsub("\\$\\{" + $v.name + "(:[a-z]+)?\\}|\\[\\[" + $v.name +
		"\\]\\]|\\$" + $v.name + "\\b"; $v.value));
def known_ok($known): . as $m | ($m | sub("_(bucket|sum|count)$"; "")) as $base |
	($known | index([$m]) != null or index([$base]) != null);

($known | split("\n") | map(select(. != ""))) as $known |
[inputs | {f: input_filename, d: .}] as $all |
(
	# uids and titles unique across the files
	(["uid", "title"][] as $k | [$all[] | .d[$k] | select(type == "string")] |
		group_by(.)[] | select(length > 1) |
		"P\t\($k) used by more than one dashboard: \(.[0])"),
	($all[] | .f as $f | .d |
	[.templating.list[]? | select(.type != "datasource") |
		{name, value: (.allValue // ".*")}] as $vars |
	(if (.uid | type) != "string" or .uid == "" or (.uid | length) > 40
	 then "P\t\($f): uid missing or longer than 40 characters" else empty end),
	(if (.title | type) != "string" or .title == "" then "P\t\($f): title missing" else empty end),
	(if ([.templating.list[]? | select(.name == "DS_PROMETHEUS" and .type == "datasource"
		and .query == "prometheus")] | length) != 1
	 then "P\t\($f): no datasource variable DS_PROMETHEUS (type datasource, query prometheus)"
	 else empty end),
	(if (.panels | type) != "array" or (.panels | length) == 0 then "P\t\($f): no panels"
	 else empty end),
	(panels | group_by(.id)[] | select(length > 1) |
		"P\t\($f): panel id \(.[0].id) used \(length) times"),
	(.templating.list[]? | select(.type == "query") |
		"\($f) variable $\(.name)" as $w |
		(if (.datasource | ds_ok | not) then "P\t\($w): datasource is not ${DS_PROMETHEUS}"
		 else empty end),
		(vquery | names[] | select($check and (known_ok($known) | not)) |
			"P\t\($w): metric \(.) is neither documented nor exported"),
		(vquery | names[] | "N\t\(.)"),
		(vquery | capture("^\\s*label_values\\((?<sel>.*),\\s*(?<label>[A-Za-z_][A-Za-z0-9_]*)\\s*\\)\\s*$")
			// empty | "V\t\($f)\t\($w | sub("^.* "; ""))\t" +
			("count by (\(.label)) (\(.sel | subst($vars)))" | @base64))),
	(panels[] | select(.type != "row") | . as $p |
		"\($f) #\(.id) \"\(.title // "")\"" as $w |
		(if (.title // "") == "" then "P\t\($w): no title" else empty end),
		(if (.datasource | ds_ok | not) then "P\t\($w): datasource is not ${DS_PROMETHEUS}"
		 else empty end),
		(if (.gridPos | type) != "object" or (.gridPos.w // 0) < 1 or (.gridPos.h // 0) < 1
		    or ((.gridPos.x // 0) + (.gridPos.w // 0)) > 24
		 then "P\t\($w): gridPos missing or outside the 24 columns" else empty end),
		(if ((.targets // []) | length) == 0 then "P\t\($w): no target" else empty end),
		(.targets[]? | "\($w) \(.refId // "?")" as $t |
			(if (.expr // "" | gsub("\\s"; "")) == "" then "P\t\($t): empty expr"
			 else
				(.expr | names[] | "N\t\(.)"),
				(.expr | names[] | select($check and (known_ok($known) | not)) |
					"P\t\($t): metric \(.) is neither documented nor exported"),
				"T\t" + ([$f, ($p.id | tostring), ($p.title // "" | gsub("\t"; " ")),
					(.refId // "?"), (.expr | subst($vars) | @base64)] | join("\t"))
			 end),
			(if has("datasource") and (.datasource | ds_ok | not)
			 then "P\t\($t): target datasource is not ${DS_PROMETHEUS}" else empty end))))
)'

check=false
[ -z "$names" ] || check=true
all=$(jq -n -r --rawfile known "${names:-/dev/null}" --argjson check "$check" \
	--arg ri "$rate_interval" "$JQ_PROG" \
	"${good[@]}") || { err "jq failed on the dashboards"; exit 1; }

if [ "$list" = 1 ]; then
	grep '^N' <<<"$all" | cut -f2 | sort -u
	exit 0
fi

npanels=0 ntargets=0 nvars=0
declare -A seen_panel=()
while IFS=$'\t' read -r kind a b c d e; do
	case "$kind" in
	P) err "$a" ;;
	T) ntargets=$((ntargets + 1))
	   [ -n "${seen_panel[$a#$b]:-}" ] || { seen_panel[$a#$b]=1; npanels=$((npanels + 1)); } ;;
	V) nvars=$((nvars + 1)) ;;
	esac
done <<<"$all"

if [ -z "$prom" ]; then
	echo "dashboards: $npanels panels, $ntargets targets, $nvars variable queries checked" \
	     "(structure${names:+, names})"
	exit $fail
fi

# ---- every query at Prometheus ----------------------------------------------------------

# The answers, one a line: the T/V line, then a tab and the JSON answer.
answers=$(while IFS=$'\t' read -r kind a b c d e; do
	case "$kind" in
	T) q=$e ;;
	V) q=$c ;;
	*) continue ;;
	esac
	r=$(curl -sS --max-time 20 "$prom/api/v1/query" --data-urlencode "query=$(base64 -d <<<"$q")" 2>&1) ||
		r=$(jq -cn --arg e "$r" '{status: "error", errorType: "curl", error: $e}')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$kind" "$a" "$b" "$c" "$d" "$e" "${r//$'\n'/ }"
done <<<"$all")

# "KIND FILE ID TITLE REFID VERDICT EXPR" per answer; VERDICT ok, empty, nan or error: ...
verdicts=$(jq -R -r '
	split("\t") | . as $l |
	(if $l[0] == "V" then [$l[0], $l[1], "var", $l[2], "-", $l[3]] else $l[0:6] end) as $m |
	($l[6:] | join("\t")) as $raw |
	(try ($raw | fromjson) catch null) as $r |
	(if $r == null then "error: not a Prometheus answer: \($raw[0:200])"
	 elif $r.status != "success" then "error: \($r.errorType // ""): \($r.error // "")"
	 elif $r.data.resultType == "scalar" then (if $r.data.result[1] == "NaN" then "nan" else "ok" end)
	 elif ($r.data.result | length) == 0 then "empty"
	 elif $r.data.resultType == "matrix" then "ok"
	 elif ([$r.data.result[] | select(.value[1] != "NaN")] | length) == 0 then "nan"
	 else "ok" end) as $v |
	($m[0:5] + [$v, ($m[5] | @base64d)]) | join("\t")' <<<"$answers")

is_allowed() {
	local t
	for t in "${allowed[@]+"${allowed[@]}"}"; do [ "$t" = "$1" ] && return 0; done
	return 1
}

# every --may-be-empty title must name a panel
for t in "${allowed[@]+"${allowed[@]}"}"; do
	grep -q "^T"$'\t'"[^"$'\t'"]*"$'\t'"[^"$'\t'"]*"$'\t'"$(sed 's/[][\.*^$/]/\\&/g' <<<"$t")"$'\t' <<<"$all" ||
		err "--may-be-empty \"$t\": no such panel"
done

ndata=0 nnodata=0 nallowed=0
nodata=()
while IFS=$'\t' read -r kind f id title ref verdict q; do
	[ -n "$kind" ] || continue
	if [ "$kind" = V ]; then
		where="${f##*/} variable \$$title"
	else
		where="${f##*/} #$id \"$title\" $ref"
	fi
	if [ "$verdict" = ok ]; then
		[ "$kind" = V ] || ndata=$((ndata + 1))
		[ "$verbose" = 0 ] || echo "ok    $where: $q"
		continue
	fi
	if [ "$kind" = T ] && is_allowed "$title" && [ "${verdict%%:*}" != error ]; then
		nallowed=$((nallowed + 1))
		echo "EMPTY $where: $verdict (allowed): $q"
		continue
	fi
	[ "$kind" = V ] || nnodata=$((nnodata + 1))
	[ "$kind" = V ] && title="\$$title"
	case " ${nodata[*]+"${nodata[*]}"} " in
	*" \"$title\" "*) ;;
	*) nodata+=("\"$title\"") ;;
	esac
	err "$where: $verdict: $q"
done <<<"$verdicts"

echo "dashboards: $npanels panels, $ntargets targets: $ndata with data, $nnodata without" \
     "(${nodata[*]+"${nodata[*]}"}), $nallowed allowed empty"
exit $fail
