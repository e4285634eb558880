#!/usr/bin/env bash
# Regenerates deepcopy, conversion, defaulting, clients and CRDs from the Go types.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
MOD=cardinal.dev/cardinal
HDR=hack/boilerplate.go.txt

"$BIN/controller-gen" object:headerFile="$HDR" paths=./apis/...
"$BIN/controller-gen" crd paths=./apis/scheduling/... output:crd:artifacts:config=config/crd/bases
# Bounds controller-gen has no marker for, so the CRD installs on its own.
"${GO:-go}" run ./hack/crdbounds config/crd/bases/scheduling.cardinal.dev_queues.yaml
# The PodGroup CRD comes from scheduler-plugins' own Go types, at the version go.mod pins.
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$BIN/controller-gen" crd paths=sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1 output:crd:artifacts:config="$tmp"
cp "$tmp/scheduling.x-k8s.io_podgroups.yaml" config/crd/bases/

"$BIN/conversion-gen" --go-header-file "$HDR" --output-file zz_generated.conversion.go ./apis/config/v1
"$BIN/defaulter-gen" --go-header-file "$HDR" --output-file zz_generated.defaults.go ./apis/config/v1

rm -rf pkg/generated
"$BIN/client-gen" --go-header-file "$HDR" --clientset-name versioned \
  --input-base "$MOD/apis" --input scheduling/v1alpha1 \
  --output-pkg "$MOD/pkg/generated/clientset" --output-dir pkg/generated/clientset
"$BIN/lister-gen" --go-header-file "$HDR" \
  --output-pkg "$MOD/pkg/generated/listers" --output-dir pkg/generated/listers ./apis/scheduling/v1alpha1
"$BIN/informer-gen" --go-header-file "$HDR" \
  --versioned-clientset-package "$MOD/pkg/generated/clientset/versioned" \
  --listers-package "$MOD/pkg/generated/listers" \
  --output-pkg "$MOD/pkg/generated/informers" --output-dir pkg/generated/informers ./apis/scheduling/v1alpha1
