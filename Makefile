# The one test command is `make test`: it installs what the tests need when it
# is missing, checks formatting, vets, runs staticcheck (pinned as a tool in
# go.mod), and runs every test with the race detector. The tests run through internal/testreport, which prints go test's
# usual output, then every skipped test with its reason, and fails when a test
# skipped that .ci/allowed-skips does not list (with why it may skip).
GO ?= go
BENCH_COUNT ?= 6
MODULE := github.com/robotsgate/robotsgate

.PHONY: test deps fmt-check vet staticcheck bench bench-peers fuzz

test: deps fmt-check vet staticcheck
	$(GO) run ./internal/testreport -go $(GO) -allow .ci/allowed-skips -- -race ./...

# deps installs what the tests start, only what is missing (quick when all
# is there):
#   - Debian packages: redis-server (the pacing store's tests run a real
#     one, and three-node Clusters) and redis-sentinel (the fleet's
#     failover tests run a primary, a replica and three sentinels; the
#     package may also start a system sentinel on 26379, which the tests do
#     not use), squid (the parent proxy tests start their own on a free
#     loopback port; the package may also start a system squid on 3128,
#     which the tests do not use), curl and wget (the end-to-end tests drive the real binary with
#     them), chromium (the status page, and a client of e2e/clients_test.go) with
#     certutil (libnss3-tools: Chromium's trust store), nft (nftables: the
#     transparent listeners' tests REDIRECT ports 80 and 443 inside a
#     network namespace of their own), and for the Python clients of
#     e2e/clients_test.go Debian's python3-requests, -httpx, -h2, -aiohttp,
#     -scrapy and -socks (PySocks: requests through SOCKS5), which are for
#     Debian's /usr/bin/python3 (PyPI is not used), and systemd, whose
#     systemd-analyze and systemd-sysusers check deploy/'s unit
#     (e2e/deploy_systemd_test.go; nothing is started with them), and
#     buildah, podman and runc, which build the container image without a
#     daemon (deploy/build-image.sh) and run it (e2e/deploy_image_test.go;
#     runc, since crun refuses this machine's cgroup hybrid). A binary counts when it
#     is on PATH; redis-server, redis-sentinel, squid and nft also in
#     /usr/local/sbin, /usr/sbin or /sbin, which a non-root PATH lacks (Debian's squid and
#     nft are in /usr/sbin), where their tests look as well. Installing
#     needs root and apt; otherwise it says what is missing and stops.
#   - Node.js 20 or later with npm (not installed here: Debian's is older):
#     the Node clients of e2e/clients_test.go and the Web Bot Auth verifier
#     (e2e/webbotauth/verify.cjs) run with it.
#   - npm packages of the Node clients, at the exact versions of
#     e2e/testdata/clients/package-lock.json, into ROBOTSGATE_NODE_DIR (default
#     ~/.cache/robotsgate-e2e/node, outside the repository; the tests look
#     there too), with the machine's npm. Reinstalled when the lock file
#     changes.
#   - npm packages of the independent Web Bot Auth verifier (web-bot-auth,
#     http-message-sig), at the exact versions of
#     e2e/webbotauth/package-lock.json, into ROBOTSGATE_WBA_DIR (default
#     ~/.cache/robotsgate-e2e/webbotauth; e2e/webbotauth_test.go looks
#     there), the same way.
#   - npm packages of the independent PAC evaluator (pac-resolver and its
#     QuickJS sandbox, quickjs-wasi), at the exact versions of
#     e2e/pac/package-lock.json, into ROBOTSGATE_PAC_DIR (default
#     ~/.cache/robotsgate-e2e/pac; e2e/pac_test.go looks there), the same
#     way.
DEPS_BINARIES = curl wget chromium certutil systemd-analyze buildah podman runc
DEPS_SERVERS = redis-server redis-sentinel squid nft
DEPS_SBIN = /usr/local/sbin /usr/sbin /sbin
DEPS_PACKAGES = redis-server redis-sentinel squid curl wget chromium libnss3-tools nftables \
	python3-requests python3-httpx python3-h2 python3-aiohttp python3-scrapy python3-socks systemd \
	buildah podman runc ca-certificates
DEPS_PYTHON = /usr/bin/python3
DEPS_PYTHON_MODULES = requests httpx h2 aiohttp scrapy socks
NODE_CLIENTS = e2e/testdata/clients
ROBOTSGATE_NODE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/robotsgate-e2e/node
export ROBOTSGATE_NODE_DIR
WBA_VERIFIER = e2e/webbotauth
ROBOTSGATE_WBA_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/robotsgate-e2e/webbotauth
export ROBOTSGATE_WBA_DIR
PAC_EVALUATOR = e2e/pac
ROBOTSGATE_PAC_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/robotsgate-e2e/pac
export ROBOTSGATE_PAC_DIR

deps:
	@missing=""; for b in $(DEPS_BINARIES); do command -v $$b >/dev/null 2>&1 || missing="$$missing $$b"; done; \
	for b in $(DEPS_SERVERS); do \
		found=""; command -v $$b >/dev/null 2>&1 && found=1; \
		for d in $(DEPS_SBIN); do [ -x $$d/$$b ] && found=1; done; \
		[ -n "$$found" ] || missing="$$missing $$b"; \
	done; \
	if [ -x $(DEPS_PYTHON) ]; then \
		missing="$$missing $$($(DEPS_PYTHON) -c 'import importlib.util, sys; print(" ".join("python3-" + m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))' $(DEPS_PYTHON_MODULES))"; \
	else missing="$$missing $(DEPS_PYTHON)"; fi; \
	missing=$$(echo $$missing); \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
			echo "installing (missing: $$missing)"; \
			DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(DEPS_PACKAGES) >/dev/null; \
		else \
			echo "missing: $$missing (install them, e.g. apt-get install $(DEPS_PACKAGES), then rerun make test)"; exit 1; \
		fi; \
	fi
	@command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && \
		node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || \
		{ echo "missing: node and npm, Node.js 20 or later (for the Node clients of e2e/clients_test.go and the Web Bot Auth verifier of e2e/webbotauth_test.go; node $$(node --version 2>/dev/null || echo 'not found'))"; exit 1; }
	@if ! cmp -s $(NODE_CLIENTS)/package-lock.json "$(ROBOTSGATE_NODE_DIR)/installed-package-lock.json" || \
		[ ! -d "$(ROBOTSGATE_NODE_DIR)/node_modules" ]; then \
		echo "installing the Node clients' npm packages into $(ROBOTSGATE_NODE_DIR)"; \
		mkdir -p "$(ROBOTSGATE_NODE_DIR)" && \
		rm -f "$(ROBOTSGATE_NODE_DIR)/installed-package-lock.json" && \
		cp $(NODE_CLIENTS)/package.json $(NODE_CLIENTS)/package-lock.json "$(ROBOTSGATE_NODE_DIR)/" && \
		npm ci --prefix "$(ROBOTSGATE_NODE_DIR)" --no-audit --no-fund --loglevel=error && \
		cp $(NODE_CLIENTS)/package-lock.json "$(ROBOTSGATE_NODE_DIR)/installed-package-lock.json"; \
	fi
	@if ! cmp -s $(WBA_VERIFIER)/package-lock.json "$(ROBOTSGATE_WBA_DIR)/installed-package-lock.json" || \
		[ ! -d "$(ROBOTSGATE_WBA_DIR)/node_modules" ]; then \
		echo "installing the Web Bot Auth verifier's npm packages into $(ROBOTSGATE_WBA_DIR)"; \
		mkdir -p "$(ROBOTSGATE_WBA_DIR)" && \
		rm -f "$(ROBOTSGATE_WBA_DIR)/installed-package-lock.json" && \
		cp $(WBA_VERIFIER)/package.json $(WBA_VERIFIER)/package-lock.json "$(ROBOTSGATE_WBA_DIR)/" && \
		npm ci --prefix "$(ROBOTSGATE_WBA_DIR)" --no-audit --no-fund --loglevel=error && \
		cp $(WBA_VERIFIER)/package-lock.json "$(ROBOTSGATE_WBA_DIR)/installed-package-lock.json"; \
	fi
	@if ! cmp -s $(PAC_EVALUATOR)/package-lock.json "$(ROBOTSGATE_PAC_DIR)/installed-package-lock.json" || \
		[ ! -d "$(ROBOTSGATE_PAC_DIR)/node_modules" ]; then \
		echo "installing the PAC evaluator's npm packages into $(ROBOTSGATE_PAC_DIR)"; \
		mkdir -p "$(ROBOTSGATE_PAC_DIR)" && \
		rm -f "$(ROBOTSGATE_PAC_DIR)/installed-package-lock.json" && \
		cp $(PAC_EVALUATOR)/package.json $(PAC_EVALUATOR)/package-lock.json "$(ROBOTSGATE_PAC_DIR)/" && \
		npm ci --prefix "$(ROBOTSGATE_PAC_DIR)" --no-audit --no-fund --loglevel=error && \
		cp $(PAC_EVALUATOR)/package-lock.json "$(ROBOTSGATE_PAC_DIR)/installed-package-lock.json"; \
	fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

staticcheck:
	$(GO) tool staticcheck ./...

# bench runs the benchmarks side by side with their baselines and prints the
# benchstat table (columns = implementation): the robots package's, the
# resolver's (cache hit and the memory of 100,000 cached origins, ours only),
# then the proxy's (direct / goproxy / robotsgate over loopback, see
# proxy/bench_test.go) and the time to first byte that usage.scan_html adds
# to a 200 KiB page (proxy/usage_bench_test.go), then verify's lines/s
# (compliance), then the deny lists' lookups at a thousand and a million
# entries side by side (the same probes at either size; at a million the
# maps miss the CPU's cache) and their load at a million (egress).
# The BENCH_COUNT repetitions are separate runs of every benchmark, so that
# the implementations alternate and a change in the machine's load during
# the run does not favour one of them. The corpus benchmarks need
# ../shared/testdata (or ROBOTSGATE_TESTDATA); they skip without it.
bench:
	@rm -f bench.out
	@for i in $$(seq $(BENCH_COUNT)); do \
		$(GO) test -run '^$$' -bench . -benchmem -count 1 ./robots/ ./robots/resolver/ ./proxy/ ./compliance/ ./egress/ | tee -a bench.out || exit 1; \
	done
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/robots' -col '/impl@(robotsgate temoto grobotstxt)' bench.out
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/robots/resolver' bench.out
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/proxy' -col '/impl@(goproxy robotsgate direct)' bench.out
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/proxy .name:ScanHTMLTTFB' bench.out
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/compliance' bench.out
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/egress .name:DenyListLookup' -col /entries bench.out
	$(GO) tool benchstat -filter 'pkg:$(MODULE)/egress .name:DenyListLoad' bench.out

# bench-peers measures the real binary against Privoxy, Squid (plain and
# ssl-bump) and a tuned goproxy, each a process pinned to one CPU, and prints
# the markdown table of docs/benchmarks.md (Against the peers). It installs
# wrk, privoxy and squid with apt-get when missing (as root), writes only
# under a temporary directory and stops every process it started. Not part
# of make test. PEERBENCH_FLAGS passes flags, e.g. PEERBENCH_FLAGS=-quick
# (1 round of 2 s, to check the harness) or "-rounds 5 -setups all"; go run
# ./internal/peerbench -help lists them.
PEERBENCH_FLAGS ?=
bench-peers:
	@GO=$(GO) $(GO) run ./internal/peerbench $(PEERBENCH_FLAGS)

# fuzz runs each fuzz target for a short while (FUZZTIME, default 30s).
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParseMatch$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzUserAgent$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzMatchPattern$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzCanonicalTarget$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzLint$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodedTarget$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzRobotsTag$$' -fuzztime $(FUZZTIME) ./robots/
	$(GO) test -run '^$$' -fuzz '^FuzzRobotsTagNeverHidesNoai$$' -fuzztime $(FUZZTIME) ./policy/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./origin/
	$(GO) test -run '^$$' -fuzz '^FuzzFramingAgreesWithNetHTTP$$' -fuzztime $(FUZZTIME) ./wire/
	$(GO) test -run '^$$' -fuzz '^FuzzSniffProtocol$$' -fuzztime $(FUZZTIME) ./wire/
	$(GO) test -run '^$$' -fuzz '^FuzzRequestPath$$' -fuzztime $(FUZZTIME) ./proxy/
	$(GO) test -run '^$$' -fuzz '^FuzzHandshake$$' -fuzztime $(FUZZTIME) ./socks/
	$(GO) test -run '^$$' -fuzz '^FuzzMetaScan$$' -fuzztime $(FUZZTIME) ./htmlmeta/
	$(GO) test -run '^$$' -fuzz '^FuzzTDMRep$$' -fuzztime $(FUZZTIME) ./tdmrep/
	$(GO) test -run '^$$' -fuzz '^FuzzRSL$$' -fuzztime $(FUZZTIME) ./rsl/
	$(GO) test -run '^$$' -fuzz '^FuzzLinkLicenses$$' -fuzztime $(FUZZTIME) ./rsl/
	$(GO) test -run '^$$' -fuzz '^FuzzDenyListMatchesLikeDenyHosts$$' -fuzztime $(FUZZTIME) ./egress/
	$(GO) test -run '^$$' -fuzz '^FuzzReadAudit$$' -fuzztime $(FUZZTIME) ./compliance/
	$(GO) test -run '^$$' -fuzz '^FuzzCheckChain$$' -fuzztime $(FUZZTIME) ./compliance/
	$(GO) test -run '^$$' -fuzz '^FuzzAppendRecord$$' -fuzztime $(FUZZTIME) ./auditlog/
	$(GO) test -run '^$$' -fuzz '^FuzzWitness$$' -fuzztime $(FUZZTIME) ./witness/
	$(GO) test -run '^$$' -fuzz '^FuzzBuild$$' -fuzztime $(FUZZTIME) ./report/
	$(GO) test -run '^$$' -fuzz '^FuzzCoveredFields$$' -fuzztime $(FUZZTIME) ./botauth/
	$(GO) test -run '^$$' -fuzz '^FuzzParseAgent$$' -fuzztime $(FUZZTIME) ./botauth/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./paycrawl/
	$(GO) test -run '^$$' -fuzz '^FuzzGlobRegexpAgreesWithPathMatch$$' -fuzztime $(FUZZTIME) ./pac/
