# bd-claim: everything a developer or CI runs. `make help` lists the targets.
GO      ?= go
MODULE  := github.com/bdclaim/bd-claim
COVER   := $(CURDIR)/.cover
# Coverage counts every package linked into the bd-claim binary: claim, cli,
# db (the sqlc-generated code included) and main.
COVERPKG = $(shell $(GO) list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' . | grep '^$(MODULE)' | paste -sd, -)
# The supported real bd releases are the pinned modules tools/bd-vX.Y.Z, newest first.
BD_VERSIONS := $(shell printf '%s\n' $(patsubst tools/bd-%/go.mod,%,$(wildcard tools/bd-v*/go.mod)) | sort -rV)
BD_NEWEST   := $(firstword $(BD_VERSIONS))

.PHONY: help demo build test bd verify generate schema clean

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-9s %s\n", $$1, $$2}'

demo: ## claim a generated demo workspace with 8 racing agents
	$(GO) run . demo

build: ## build ./bd-claim
	$(GO) build -o bd-claim .

bd: ## build the real bd (every tools/bd-v*) that the interop tests drive
	@for v in $(BD_VERSIONS); do scripts/build-bd.sh $$v >/dev/null || exit 1; done

test: bd dolt ## every test with -race (the Dolt ones against a real dolt sql-server), then the 100% statement coverage gate
	rm -rf $(COVER) && mkdir -p $(COVER)/data
	$(GO) test -race -count=1 -timeout 40m -coverpkg=$(COVERPKG) ./... -args -test.gocoverdir=$(COVER)/data
	$(GO) tool covdata textfmt -i=$(COVER)/data -o $(COVER)/cover.out
	$(GO) tool cover -func=$(COVER)/cover.out > $(COVER)/func.txt
	@awk '$$NF != "100.0%" {print "not covered:", $$0; bad=1} END {exit bad}' $(COVER)/func.txt || \
		{ echo "coverage gate: statements above are below 100% (see .cover/cover.out)"; exit 1; }
	@tail -1 $(COVER)/func.txt

verify: ## fail on drift: generated code vs sql/ (sqlc diff, sqlc vet), vendored schemas vs the pinned bd releases, gofmt, vet
	$(GO) tool sqlc diff
	$(GO) tool sqlc vet
	scripts/schema.sh --check
	scripts/dolt-schema.sh --check
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

generate: ## regenerate db/ from sql/ with the pinned sqlc
	$(GO) tool sqlc generate

schema: ## re-vendor sql/schema/ from the real bd's `bd init`, and sql/dolt/ from bd v1.3.0's `bd init --server`
	scripts/schema.sh
	scripts/dolt-schema.sh

.PHONY: dolt
dolt: ## build bd v1.3.0 and dolt 2.2.0 (cgo, libicu) that the Dolt (server mode) tests drive
	scripts/build-dolt.sh >/dev/null

.PHONY: bench
bench: ## build bd-claim, the newest bd, bd v1.3.0 + dolt and a hello-world, print the benchmark table (BENCH_FLAGS='-quick', '-write', '-runs N')
	$(GO) build -o .bin/bd-claim .
	scripts/build-bd.sh $(BD_NEWEST) >/dev/null
	scripts/build-dolt.sh >/dev/null
	$(GO) run ./scripts/bench -bin .bin/bd-claim -bd .bin/bd-$(BD_NEWEST) $(BENCH_FLAGS)

clean:
	rm -rf $(COVER) .bin bd-claim
