#!/usr/bin/env bash
# Makes a page (docs/outcomes.md) of a cardinal-sim run's report: the
# report's links point into the run's directory, which keeps what the page
# shows (the charts, summary.json, moves.csv). timeline.csv, jobs.csv and
# the converted trace, megabytes each, are left out of it; make outcomes
# writes them again.
set -euo pipefail
dir=$1
page=$2
rel=$(realpath --relative-to="$(dirname "$page")" "$dir")
{
	sed -n '1p' "$dir/report.md"
	echo
	echo "Written by \`make outcomes\` (cardinal-sim, at commit ${COMMIT:-$(git rev-parse --short HEAD)}) from Alibaba's openb-2023 trace: what Cardinal, kube-scheduler's default profile and scheduler-plugins do with the same cluster and the same work. The charts and summary.json are in [$rel]($rel)."
	sed -E -e '1d' -e '/\]\((timeline|jobs)\.csv\)/d' -e '/draws it again from them/d' \
		-e "s#\]\(([^):/]+)\)#](${rel}/\1)#g" "$dir/report.md"
} > "$page"
rm -f "$dir/report.md" "$dir/timeline.csv" "$dir/jobs.csv" "$dir/trace.yaml"
echo "wrote $page"
