SHELL := /bin/bash
NPM ?= npm

.PHONY: install generate check-generated build run migrate test typecheck clean

# npm install rather than npm ci: the lock file holds the versions, and npm ci refuses a lock file
# that lists only this platform's optional native packages.
node_modules: package.json package-lock.json
	$(NPM) install --no-audit --no-fund
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

build: node_modules
	$(NPM) run build

migrate: build
	$(NPM) run migrate

## run: install, build, migrate and start on http://127.0.0.1:8000 (embedded database unless DATABASE_URL is set)
run: build
	$(NPM) run migrate
	$(NPM) start

typecheck: node_modules
	npx tsc --noEmit

## test: contract freshness, type check, then the whole suite; the timing tests run last, alone,
## so that no other test competes with them for the CPU
SUMMARY := $(shell mktemp -u /tmp/jest-summary.XXXXXX)
test: node_modules check-generated typecheck
	@rm -f $(SUMMARY)
	JEST_SUMMARY_FILE=$(SUMMARY) $(NPM) test -- --testPathIgnorePatterns '\.timing\.test\.ts$$'
	JEST_SUMMARY_FILE=$(SUMMARY) $(NPM) test -- --runInBand --testPathPatterns '\.timing\.test\.ts$$'
	@rm -f $(SUMMARY)

clean:
	rm -rf dist
