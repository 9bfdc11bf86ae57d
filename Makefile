# The one test command is `make test`: it installs what the tests need when it
# is missing, checks formatting, vets, and runs every test with the race detector.
GO ?= go
BENCH_COUNT ?= 6

.PHONY: test deps fmt-check vet bench fuzz

test: deps fmt-check vet
	$(GO) test -race ./...

# deps installs the external programs the tests start (none yet; redis-server
# arrives with the pacing store).
deps:
	@true

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# bench runs the benchmarks side by side with their baselines and prints the
# benchstat table (columns = implementation). Needs ../shared/testdata for the
# corpus benchmarks; they skip without it.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count $(BENCH_COUNT) ./robots/ | tee bench.out
	$(GO) tool benchstat -col /impl bench.out

# fuzz runs each fuzz target for a short while (FUZZTIME, default 30s).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseMatch$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzUserAgent$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzMatchPattern$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzLint$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./origin/
