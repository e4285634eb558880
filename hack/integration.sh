#!/usr/bin/env bash
# Runs the integration tests (test/integration) as SHARDS processes at once,
# each on a control plane of its own: a test spends most of its time
# waiting for the scheduler or watching a window, so two run side by side
# in the time of one. RUN narrows the tests to a regular expression;
# CARDINAL_APISERVER_VERSION passes through to pick the kube-apiserver.
# Each shard's output is printed when it ends; the script fails when any
# shard does.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
BIN=${BIN:-$PWD/bin}
SHARDS=${SHARDS:-2}
RUN=${RUN:-.*}
TIMEOUT=${TIMEOUT:-30m}

test_bin="$BIN/integration.test"
"$GO" test -c -o "$test_bin" ./test/integration
mapfile -t tests < <(cd test/integration && "$test_bin" -test.list "^($RUN)\$" | grep '^Test')
if [ "${#tests[@]}" -eq 0 ]; then
	echo "no integration test matches ^($RUN)\$" >&2
	exit 1
fi

# The tests that take longest, in seconds: they are dealt out first, each
# to the shard with least to do, and the others (about 10 s each) after.
declare -A took=(
	[TestSoakSeeds]=260 [TestInterleavedGangsMakeSteadyProgress]=150 [TestWorkloadsBecomeGangs]=125
	[TestWhyOfAGroupedPod]=60 [TestNoSecondRoundWhileVictimsTerminate]=50 [TestElasticPodsGiveWay]=32
	[TestNothingEvictedWhenMinCannotFit]=31 [TestGangBeingPlacedChanges]=25
)
mapfile -t tests < <(for t in "${tests[@]}"; do echo "${took[$t]:-10} $t"; done | sort -k1,1nr -k2 | cut -d' ' -f2)
declare -a load shard_tests
for ((s = 0; s < SHARDS; s++)); do load[s]=0; shard_tests[s]=""; done
for t in "${tests[@]}"; do
	least=0
	for ((s = 1; s < SHARDS; s++)); do
		if ((load[s] < load[least])); then least=$s; fi
	done
	load[least]=$((load[least] + ${took[$t]:-10}))
	shard_tests[least]+="${shard_tests[least]:+|}$t"
done

logs=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$logs"' EXIT
for ((s = 0; s < SHARDS; s++)); do
	[ -n "${shard_tests[s]}" ] || continue
	re="^(${shard_tests[s]})\$"
	(cd test/integration && exec "$test_bin" -test.run "$re" -test.count=1 -test.timeout "$TIMEOUT" -test.v) \
		>"$logs/$s" 2>&1 &
	pids[s]=$!
	echo "== shard $((s + 1)) of $SHARDS: $(tr '|' '\n' <<<"${shard_tests[s]}" | wc -l) tests, about ${load[s]} s"
done

failed=0
for s in "${!pids[@]}"; do
	if wait "${pids[s]}"; then status=ok; else status=FAILED; failed=1; fi
	echo "== shard $((s + 1)): $status"
	# Each test's result; all a failed shard printed.
	grep -E '^(--- |=== NAME|FAIL|ok|PASS|panic)' "$logs/$s" | grep -v '^=== NAME' || true
	if [ "$status" = FAILED ]; then
		echo "== shard $((s + 1)) output:"
		cat "$logs/$s"
	fi
done
exit "$failed"
