# The one test command is `make test`: it installs what the tests need when it
# is missing, checks formatting, vets, and runs every test with the race detector.
GO ?= go
BENCH_COUNT ?= 6
MODULE := github.com/robotsgate/robotsgate

.PHONY: test deps fmt-check vet bench fuzz

test: deps fmt-check vet
	$(GO) test -race ./...

# deps installs the external programs the tests start: redis-server (the
# pacing store's tests run a real one), curl and wget (the end-to-end test
# drives the real binary with them) and chromium (the status page is checked
# in a real headless browser). Installing needs root and Debian's apt;
# otherwise it says what is missing and stops.
DEPS_BINARIES = redis-server curl wget chromium
DEPS_PACKAGES = redis-server curl wget chromium

deps:
	@missing=""; for b in $(DEPS_BINARIES); do command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing$$missing"; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEPS_PACKAGES) >/dev/null; \
		else \
			echo "missing:$$missing (install them, e.g. apt-get install $(DEPS_PACKAGES), then rerun make test)"; exit 1; \
		fi; \
	fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# bench runs the benchmarks side by side with their baselines and prints the
# benchstat table (columns = implementation): the robots package's, the
# resolver's (cache hit and the memory of 100,000 cached origins, ours only),
# then the proxy's (direct / goproxy / robotsgate over loopback, see
# proxy/bench_test.go).
# The BENCH_COUNT repetitions are separate runs of every benchmark, so that
# the implementations alternate and a change in the machine's load during
# the run does not favour one of them. The corpus benchmarks need
# ../shared/testdata (or ROBOTSGATE_TESTDATA); they skip without it.
bench:
	@rm -f bench.out
	@for i in $$(seq $(BENCH_COUNT)); do \
		$(GO) test -run '^$$' -bench . -benchmem -count 1 ./robots/ ./robots/resolver/ ./proxy/ | tee -a bench.out || exit 1; \
	done
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/robots' -col '/impl@(robotsgate temoto grobotstxt)' bench.out
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/robots/resolver' bench.out
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/proxy' -col '/impl@(goproxy robotsgate direct)' bench.out

# fuzz runs each fuzz target for a short while (FUZZTIME, default 30s).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseMatch$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzUserAgent$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzMatchPattern$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzLint$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./origin/
	$(GO) test -run '^$$' -fuzz '^FuzzFramingAgreesWithNetHTTP$$' -fuzztime $(FUZZTIME) ./proxy/
	$(GO) test -run '^$$' -fuzz '^FuzzSniffProtocol$$' -fuzztime $(FUZZTIME) ./proxy/
	$(GO) test -run '^$$' -fuzz '^FuzzRequestPath$$' -fuzztime $(FUZZTIME) ./proxy/
