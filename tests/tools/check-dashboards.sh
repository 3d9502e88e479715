#!/usr/bin/env bash
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
#                    ($__rate_interval -> 1m, $__interval -> 15s, $__range ->
#                    5m) and the dashboard's variables (their allValue, else
#                    .*); a target whose result is empty, or only NaN, has
#                    no data and fails its panel.  Variable queries
#                    label_values(SELECTOR, LABEL) must return that label.
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

prom= names= list=0 verbose=0
allowed=()
files=()
while [ $# -gt 0 ]; do
	case "$1" in
	--prom) prom=${2:?--prom needs a URL}; shift ;;
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

# ---- structure ------------------------------------------------------------------------

# All panels, rows' nested panels included, flattened.
JQ_PANELS='[.panels[]? | ., (.panels[]? // empty)]'

for f in "${files[@]}"; do
	if ! jq -e 'type == "object"' "$f" >/dev/null 2>&1; then
		err "$f: not a JSON object ($(jq empty "$f" 2>&1 | head -n1))"
		continue
	fi
	# one line per problem
	jq -r --arg f "$f" '
		def ds_ok: type == "object" and .type == "prometheus" and
			(.uid == "${DS_PROMETHEUS}" or .uid == "$DS_PROMETHEUS");
		(if (.uid | type) != "string" or .uid == "" or (.uid | length) > 40
		 then "\($f): uid missing or longer than 40 characters" else empty end),
		(if (.title | type) != "string" or .title == "" then "\($f): title missing" else empty end),
		(if ([.templating.list[]? | select(.name == "DS_PROMETHEUS" and .type == "datasource"
			and .query == "prometheus")] | length) != 1
		 then "\($f): no datasource variable DS_PROMETHEUS (type datasource, query prometheus)"
		 else empty end),
		(.templating.list[]? | select(.type == "query") | select(.datasource | ds_ok | not) |
			"\($f): variable \(.name): datasource is not ${DS_PROMETHEUS}"),
		(if (.panels | type) != "array" or (.panels | length) == 0 then "\($f): no panels"
		 else empty end),
		('"$JQ_PANELS"' | group_by(.id)[] | select(length > 1) |
			"\($f): panel id \(.[0].id) used \(length) times"),
		('"$JQ_PANELS"'[] | select(.type != "row") |
			"\($f) #\(.id) \"\(.title // "")\"" as $p |
			(if (.title // "") == "" then "\($p): no title" else empty end),
			(if (.datasource | ds_ok | not) then "\($p): datasource is not ${DS_PROMETHEUS}"
			 else empty end),
			(if (.gridPos | type) != "object" or (.gridPos.w // 0) < 1 or (.gridPos.h // 0) < 1
			    or ((.gridPos.x // 0) + (.gridPos.w // 0)) > 24
			 then "\($p): gridPos missing or outside the 24 columns" else empty end),
			(if ((.targets // []) | length) == 0 then "\($p): no target" else empty end),
			(.targets[]? |
				(if (.expr // "" | gsub("\\s"; "")) == "" then "\($p) \(.refId // "?"): empty expr"
				 else empty end),
				(if has("datasource") and (.datasource | ds_ok | not)
				 then "\($p) \(.refId // "?"): target datasource is not ${DS_PROMETHEUS}"
				 else empty end)))
	' "$f" | while IFS= read -r line; do echo "FAIL  $line"; done | grep . && fail=1
done

# uids and titles unique across the files
for key in uid title; do
	dup=$(for f in "${files[@]}"; do jq -r ".$key // empty" "$f" 2>/dev/null; done | sort | uniq -d)
	[ -z "$dup" ] || err "$key used by more than one dashboard: $(echo "$dup" | tr '\n' ' ')"
done

# ---- targets ---------------------------------------------------------------------------

# "FILE<TAB>ID<TAB>TITLE<TAB>REFID<TAB>base64(expr)" per target, and
# "FILE<TAB>var<TAB>NAME<TAB>-<TAB>base64(query)" per query variable.
targets() {
	local f
	for f in "${files[@]}"; do
		jq -r --arg f "$f" '
			('"$JQ_PANELS"'[] | select(.type != "row") | . as $p | .targets[]? |
				select((.expr // "") != "") |
				[$f, ($p.id | tostring), ($p.title // ""), (.refId // "?"), (.expr | @base64)]),
			(.templating.list[]? | select(.type == "query") |
				[$f, "var", .name, "-", ((.query | if type == "object" then .query else . end)
					// "" | @base64)])
			| @tsv' "$f" 2>/dev/null
	done
}

metric_names() { grep -oE '\bmooncake_[A-Za-z0-9_:]+' | sort -u; }

all=$(targets)
if [ "$list" = 1 ]; then
	while IFS=$'\t' read -r _ _ _ _ b64; do base64 -d <<<"$b64"; echo; done <<<"$all" | metric_names
	exit 0
fi

# the dashboard's variables and the value each stands for: "NAME<TAB>VALUE"
varvalues() {
	jq -r '.templating.list[]? | select(.type != "datasource") |
		[.name, (.allValue // ".*")] | @tsv' "$1"
}

# substitute FILE EXPR: Grafana's macros and FILE's variables replaced.
substitute() {
	local f=$1 e=$2 name value
	e=${e//'${__rate_interval}'/1m}
	e=${e//'$__rate_interval'/1m}
	e=${e//'${__interval}'/15s}
	e=${e//'$__interval'/15s}
	e=${e//'${__range}'/5m}
	e=${e//'$__range'/5m}
	while IFS=$'\t' read -r name value; do
		[ -n "$name" ] || continue
		e=$(NAME=$name VALUE=$value perl -pe 's/\$\{\Q$ENV{NAME}\E(?::[a-z]+)?\}|\[\[\Q$ENV{NAME}\E\]\]|\$\Q$ENV{NAME}\E\b/$ENV{VALUE}/g' <<<"$e")
	done < <(varvalues "$f")
	printf '%s' "$e"
}

# query EXPR: prints "ok", "empty", "nan" or "error: MESSAGE".
query() {
	local out
	if ! out=$(curl -sS --max-time 20 "$prom/api/v1/query" --data-urlencode "query=$1" 2>&1); then
		echo "error: $out"
		return
	fi
	jq -r '
		if .status != "success" then "error: \(.errorType // ""): \(.error // "")"
		elif .data.resultType == "scalar" then (if .data.result[1] == "NaN" then "nan" else "ok" end)
		elif (.data.result | length) == 0 then "empty"
		elif .data.resultType == "matrix" then "ok"
		elif ([.data.result[] | select(.value[1] != "NaN")] | length) == 0 then "nan"
		else "ok" end' <<<"$out" 2>/dev/null || echo "error: not a Prometheus answer: ${out:0:200}"
}

is_allowed() {
	local t
	for t in "${allowed[@]+"${allowed[@]}"}"; do [ "$t" = "$1" ] && return 0; done
	return 1
}

# every --may-be-empty title must name a panel
for t in "${allowed[@]+"${allowed[@]}"}"; do
	cut -f3 <<<"$all" | grep -qxF -- "$t" || err "--may-be-empty \"$t\": no such panel"
done

npanels=0 ntargets=0 ndata=0 nnodata=0 nallowed=0
nodata_panels=()
declare -A seen_panel=()
known=
[ -z "$names" ] || known=$(sort -u "$names")

while IFS=$'\t' read -r f id title ref b64; do
	[ -n "$f" ] || continue
	expr=$(base64 -d <<<"$b64")
	where="$(basename "$f") #$id \"$title\" $ref"
	[ "$id" = var ] && where="$(basename "$f") variable \$$title"
	if [ "$id" != var ]; then
		ntargets=$((ntargets + 1))
		[ -n "${seen_panel[$f#$id]:-}" ] || { seen_panel[$f#$id]=1; npanels=$((npanels + 1)); }
	fi

	if [ -n "$names" ]; then
		while read -r m; do
			[ -n "$m" ] || continue
			base=$(sed -E 's/_(bucket|sum|count)$//' <<<"$m")
			grep -qxF -- "$m" <<<"$known" || grep -qxF -- "$base" <<<"$known" ||
				err "$where: metric $m is neither documented nor exported"
		done < <(metric_names <<<"$expr")
	fi

	[ -n "$prom" ] || continue
	if [ "$id" = var ]; then
		# label_values(SELECTOR, LABEL)
		if [[ "$expr" =~ ^[[:space:]]*label_values\((.*),[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\)[[:space:]]*$ ]]; then
			q="count by (${BASH_REMATCH[2]}) ($(substitute "$f" "${BASH_REMATCH[1]}"))"
			r=$(query "$q")
			if [ "$r" = ok ]; then
				[ "$verbose" = 0 ] || echo "ok    $where: $q"
			else
				err "$where: $r: $q"
			fi
		fi
		continue
	fi
	q=$(substitute "$f" "$expr")
	r=$(query "$q")
	if [ "$r" = ok ]; then
		ndata=$((ndata + 1))
		[ "$verbose" = 0 ] || echo "ok    $where: $q"
	elif is_allowed "$title" && [ "${r%%:*}" != error ]; then
		nallowed=$((nallowed + 1))
		echo "EMPTY $where: $r (allowed): $q"
	else
		nnodata=$((nnodata + 1))
		case " ${nodata_panels[*]+"${nodata_panels[*]}"} " in
		*" \"$title\" "*) ;;
		*) nodata_panels+=("\"$title\"") ;;
		esac
		err "$where: $r: $q"
	fi
done <<<"$all"

if [ -n "$prom" ]; then
	echo "dashboards: $npanels panels, $ntargets targets: $ndata with data, $nnodata without" \
	     "(${nodata_panels[*]+"${nodata_panels[*]}"}), $nallowed allowed empty"
else
	echo "dashboards: $npanels panels, $ntargets targets checked (structure${names:+, names})"
fi
exit $fail
