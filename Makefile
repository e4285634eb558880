# Cardinal's build. Everything it needs comes from the Go module graph:
# kube-apiserver, kube-controller-manager and etcd for the test control plane, and the code generators,
# are go.mod tool directives built into bin/.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
export CARDINAL_BIN_DIR := $(BIN)

GEN_TOOLS := controller-gen conversion-gen defaulter-gen client-gen lister-gen informer-gen
TOOL_PKG_controller-gen  := sigs.k8s.io/controller-tools/cmd/controller-gen
TOOL_PKG_conversion-gen  := k8s.io/code-generator/cmd/conversion-gen
TOOL_PKG_defaulter-gen   := k8s.io/code-generator/cmd/defaulter-gen
TOOL_PKG_client-gen      := k8s.io/code-generator/cmd/client-gen
TOOL_PKG_lister-gen      := k8s.io/code-generator/cmd/lister-gen
TOOL_PKG_informer-gen    := k8s.io/code-generator/cmd/informer-gen
TOOL_PKG_kube-apiserver  := k8s.io/kubernetes/cmd/kube-apiserver
TOOL_PKG_kube-controller-manager := k8s.io/kubernetes/cmd/kube-controller-manager
TOOL_PKG_etcd            := go.etcd.io/etcd/server/v3

# The demo's control plane and the scheduler binary; integration tests also
# run kube-controller-manager's Deployment and ReplicaSet controllers.
CONTROL_PLANE := $(BIN)/kube-apiserver $(BIN)/etcd $(BIN)/cardinal-scheduler $(BIN)/kubectl-cardinal

.PHONY: all build demo test verify unit integration integration-versions sim sim-short outcomes generate verify-generate bench fuzz soak soak-report tools clean

all: build

## build: write bin/cardinal-scheduler, bin/kubectl-cardinal (the kubectl cardinal plugin) and bin/cardinal-sim
build: $(BIN)/cardinal-scheduler $(BIN)/kubectl-cardinal $(BIN)/cardinal-sim

# Go decides what is stale; the phony dependency makes make ask it every time.
.PHONY: FORCE
$(BIN)/cardinal-scheduler: FORCE
	$(GO) build -o $@ ./cmd/scheduler

$(BIN)/kubectl-cardinal: FORCE
	$(GO) build -o $@ ./cmd/kubectl-cardinal

$(BIN)/cardinal-sim: FORCE
	$(GO) build -o $@ ./cmd/sim

# The scheduler with the race detector, for a share of the soak's seeds.
$(BIN)/cardinal-scheduler-race: FORCE
	$(GO) build -race -o $@ ./cmd/scheduler

# kube-apiserver and kube-controller-manager say their release as a
# cluster's do (Kubernetes' own build stamps it; a module build would say
# v0.0.0), so start-up checks see what they would see in a cluster.
$(BIN)/kube-apiserver $(BIN)/kube-controller-manager: go.mod go.sum
	ldflags=$$(GO=$(GO) hack/version-ldflags.sh) && $(GO) build -ldflags "$$ldflags" -o $@ $(TOOL_PKG_$(notdir $@))

$(BIN)/etcd: go.mod go.sum
	$(GO) build -o $@ $(TOOL_PKG_$(notdir $@))

# The version matrix (SPEC §6): kube-apiserver of each older minor Cardinal
# supports, each from a module of its own under hack/kube-apiserver, so one
# Kubernetes release's module graph does not pull in another's.
APISERVER_VERSIONS := 1.34 1.35 1.36
$(BIN)/kube-apiserver-%: hack/kube-apiserver/v%/go.mod hack/kube-apiserver/v%/go.sum
	cd hack/kube-apiserver/v$* && ldflags=$$(GO=$(GO) ../../version-ldflags.sh) && \
		$(GO) build -ldflags "$$ldflags" -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(addprefix $(BIN)/,$(GEN_TOOLS)): go.mod go.sum
	$(GO) build -o $@ $(TOOL_PKG_$(notdir $@))

# `make bin/NAME` builds $(BIN)/NAME, as the error messages that name a missing binary say.
bin/%: $(BIN)/% ;

tools: $(addprefix $(BIN)/,$(GEN_TOOLS)) $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/etcd \
	$(addprefix $(BIN)/kube-apiserver-,$(APISERVER_VERSIONS))

## demo: the scheduler on a local control plane with simulated GPU nodes and example workloads
##       (NODES=file, WORKLOADS=a.yaml,b.yaml and THEN=c.yaml,d.yaml, one act each, to use your own)
demo: $(CONTROL_PLANE) $(BIN)/kube-controller-manager
	$(GO) run ./cmd/demo $(if $(NODES),--nodes $(NODES)) $(if $(WORKLOADS),--workloads $(WORKLOADS)) $(if $(THEN),--then $(THEN))

## test: formatting, vet and generated files checked, unit tests with -race, then integration tests on a real control plane
##       (two shards at once), a short cardinal-sim replay,
##       then their version subset on each older supported kube-apiserver
test: verify verify-generate unit integration sim-short integration-versions

verify:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out" >&2; exit 1; fi
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /test/integration)

# Two shards at once, each on a control plane of its own (hack/integration.sh):
# the tests mostly wait, so two take the time of one. SHARDS=1 runs them in one.
SHARDS ?= 2
integration: $(CONTROL_PLANE) $(BIN)/kube-controller-manager $(BIN)/cardinal-scheduler-race
	GO=$(GO) BIN=$(BIN) SHARDS=$(SHARDS) hack/integration.sh

# The integration tests SPEC §6's version matrix runs on kube-apiserver 1.34,
# 1.35 and 1.36 (the full suite runs on 1.37 above): start-up fitted to the
# server, gangs, queue and card quota, preemption and reclaim, status, the
# Queue CRD's validation, kubectl cardinal, and Kubernetes' own PodGroup
# (a gang where the server serves it, 1.37; nothing changes where not).
VERSION_SUBSET := TestFitsTheAPIServer|TestRefusesAnOlderAPIServer|TestGangAllOrNothing|TestGangsDoNotDeadlock|TestGangGivesBackOnFailure|TestCardQuotaCap|TestCardAlternatives|TestMIGAndMPS|TestQueueCapability|TestGangHeldByQueue|TestNonPreemptibleUsesOnlyGuarantee|TestWholeLowPriorityGangGoes|TestFullQueuePreemptsItsOwnLowerPriorityWork|TestCardAwareReclaim|TestQueueStatusAgreesWithScheduler|TestQueueValidation|TestKubectlCardinalInATerminal|TestWhy|TestKubernetesPodGroup

## integration-versions: the version subset on each older supported kube-apiserver (APISERVER_VERSIONS)
integration-versions: $(CONTROL_PLANE) $(addprefix $(BIN)/kube-apiserver-,$(APISERVER_VERSIONS))
	@failed=""; for v in $(APISERVER_VERSIONS); do \
		echo "== integration subset on kube-apiserver $$v"; \
		CARDINAL_APISERVER_VERSION=$$v GO=$(GO) BIN=$(BIN) SHARDS=$(SHARDS) RUN='$(VERSION_SUBSET)' TIMEOUT=20m \
			hack/integration.sh || failed="$$failed $$v"; \
	done; \
	if [ -n "$$failed" ]; then echo "integration subset failed on kube-apiserver$$failed" >&2; exit 1; fi

## sim: cardinal-sim replays the shipped contended trace (examples/sim/contended.yaml) against Cardinal, the
##      default profile and scheduler-plugins, checks its expected ranges and writes the report to SIM_OUT
SIM_OUT ?= sim-out
SIM_K ?= 5
sim: $(CONTROL_PLANE) $(BIN)/cardinal-sim $(BIN)/scheduler-plugins-scheduler
	$(BIN)/cardinal-sim run --trace examples/sim/contended.yaml --expect examples/sim/contended-expect.yaml \
		--schedulers cardinal,default,scheduler-plugins --compress $(SIM_K) --out $(SIM_OUT)

## outcomes: docs/outcomes.md, cardinal-sim on Alibaba's openb-2023 GPU trace against all three schedulers
##           (about 2 hours); OPENB names the trace's csv directory (github.com/alibaba/clusterdata,
##           cluster-trace-gpu-v2023)
OPENB ?= openb-2023
OUTCOMES_K ?= 5
outcomes: $(CONTROL_PLANE) $(BIN)/cardinal-sim $(BIN)/scheduler-plugins-scheduler
	rm -rf docs/outcomes && mkdir -p docs/outcomes
	$(BIN)/cardinal-sim convert --from openb2023 $(OPENB)/openb_node_list_gpu_node.csv \
		$(OPENB)/openb_pod_list_gpuspec33.csv --min-duration 5m --max-duration 1h > docs/outcomes/trace.yaml
	$(BIN)/cardinal-sim run --trace docs/outcomes/trace.yaml --schedulers cardinal,default,scheduler-plugins \
		--compress $(OUTCOMES_K) --out docs/outcomes
	hack/outcomes.sh docs/outcomes docs/outcomes.md

# The short version `make test` runs: the same trace, twice as compressed,
# Cardinal alone, held to what must never happen at any load (a partial
# gang, a queue over its capability), without the
# compression check.
sim-short: $(CONTROL_PLANE) $(BIN)/cardinal-sim
	$(BIN)/cardinal-sim run --trace examples/sim/contended.yaml --expect examples/sim/contended-short-expect.yaml \
		--schedulers cardinal --compress 10 --sample 0 --stall 1m --out $$(mktemp -d)

## generate: regenerate deepcopy, conversion, defaults, clients and CRDs
generate: $(addprefix $(BIN)/,$(GEN_TOOLS))
	BIN=$(BIN) hack/update-codegen.sh

## verify-generate: fail if generated files differ from what the generators write
verify-generate: $(addprefix $(BIN)/,$(GEN_TOOLS))
	BIN=$(BIN) hack/verify-codegen.sh

## bench: Cardinal vs the default profile vs scheduler-plugins on the same workloads; writes docs/benchmarks.md
##        (MODE=full for the sizes results are quoted at; short takes a few minutes)
MODE ?= short
bench: $(CONTROL_PLANE) $(BIN)/scheduler-plugins-scheduler
	$(GO) run ./cmd/bench --mode $(MODE)

# scheduler-plugins' own release pairs with an older Kubernetes: it builds in
# its own module.
$(BIN)/scheduler-plugins-scheduler: bench/peer/go.mod bench/peer/go.sum bench/peer/main.go
	cd bench/peer && $(GO) build -o $@ .

## soak: seeded random runs with scheduler kills, leader failovers, kube-apiserver restarts and API faults,
##       every invariant checked after every step; every RACE_EVERY-th seed runs a scheduler built with -race;
##       writes docs/reliability.md (SEEDS=500, FIRST=1, STEPS=25; SEED=n replays one). Split a run by seed
##       range with RESULTS=dir on each part (FIRST, SEEDS), then `make soak-report RESULTS=dir` adds them up.
SEEDS ?= 500
FIRST ?= 1
STEPS ?= 25
RACE_EVERY ?= 5
soak: $(CONTROL_PLANE) $(BIN)/kube-controller-manager $(BIN)/cardinal-scheduler-race
	$(GO) run ./cmd/soak --first $(FIRST) --seeds $(SEEDS) --steps $(STEPS) --race-every $(RACE_EVERY) \
		$(if $(RESULTS),--results $(RESULTS)) $(if $(SEED),--seed $(SEED) -v)

## soak-report: write docs/reliability.md from the seeds' results in RESULTS
soak-report:
	$(GO) run ./cmd/soak --report-from $(RESULTS)

## fuzz: run each fuzz target for FUZZTIME (default 10m); a crash stops it and leaves the input in the
##       package's testdata/fuzz, which then runs with the unit tests
FUZZTIME ?= 10m
FUZZFLAGS ?=
FUZZ_TARGETS := ./pkg/cardmodel:FuzzParseNames ./pkg/cardmodel:FuzzParseRequest ./pkg/cardmodel:FuzzQueueCards \
	./apis/config/scheme:FuzzDecodeArgs ./pkg/state:FuzzQueueSpec ./pkg/workload:FuzzClassify ./pkg/quota:FuzzDeserved \
	./pkg/grouper:FuzzPlanFor ./pkg/sim/trace:FuzzDecode
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "== $${t#*:} ($${t%%:*}) for $(FUZZTIME)"; \
		$(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS); \
	done

clean:
	rm -rf $(BIN)
