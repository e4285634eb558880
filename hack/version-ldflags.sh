#!/usr/bin/env bash
# Prints the -ldflags that stamp a Kubernetes binary built from the module
# graph with the release of k8s.io/kubernetes the current module requires,
# as Kubernetes' own build does (without them it reports v0.0.0-master).
set -euo pipefail
v=$(${GO:-go} list -m -f '{{.Version}}' k8s.io/kubernetes)
minor=${v#v1.}
minor=${minor%%.*}
pkg=k8s.io/component-base/version
echo "-X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
