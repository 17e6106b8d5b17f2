# The Debian package (Packaging/debian) and its checks. As root on Debian 12, with the Swift toolchain on PATH or
# in /opt/swift. Missing Debian packages are installed first (scripts/lib.sh's ensure_packages).
#
#   make deb          build/deb/whereabouts_VERSION_ARCH.deb (static Swift stdlib, debhelper)
#   make deb-check    deb; lintian, and the man pages held against the binaries (deb-lint); the install test in
#                     a fresh bookworm tree without Swift: apt install, D-Bus activation through systemd in
#                     systemd-nspawn, a static-source location through busctl and the CLI, the bus policy,
#                     polkit, upgrade, purge, replacing geoclue-2.0 (deb-test); piuparts (deb-piuparts)
#
# Everything is written under build/ (git-ignored): the staged source and results in build/deb, the Swift
# build products in build/swift, the bookworm base tarballs in build/cache (rebuilt each ISO week).

SHELL      := /bin/bash
SWIFT_BIN  ?= /opt/swift/usr/bin
SUITE      ?= bookworm
MIRROR     ?= $(or $(shell sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n1),http://deb.debian.org/debian)
CACHE      ?= build/cache
WEEK       := $(shell date -u +%G-W%V)

CHANGELOG  := Packaging/debian/changelog
PKG        := $(shell dpkg-parsechangelog -l $(CHANGELOG) -S Source)
VERSION    := $(shell dpkg-parsechangelog -l $(CHANGELOG) -S Version)
ARCH       := $(shell dpkg --print-architecture)
OUT        := build/deb
STAGE      := $(OUT)/$(PKG)-$(VERSION)
DEB        := $(OUT)/$(PKG)_$(VERSION)_$(ARCH).deb
CHANGES    := $(OUT)/$(PKG)_$(VERSION)_$(ARCH).changes
SCRATCH    := $(CURDIR)/build/swift
BASE_MIN   := $(CACHE)/$(SUITE)-minbase-$(WEEK).tar.gz
BASE_SYSD  := $(CACHE)/$(SUITE)-systemd-dbus-polkitd-$(WEEK).tar.gz

BUILD_TOOLS := debhelper libdbus-1-dev libgps-dev pkgconf git
CHECK_TOOLS := lintian mmdebstrap piuparts systemd-container

.PHONY: deb deb-lint deb-test deb-piuparts deb-check deb-build-tools deb-check-tools deb-clean

deb-build-tools:
	@. scripts/lib.sh && ensure_packages $(BUILD_TOOLS)

deb-check-tools:
	@. scripts/lib.sh && ensure_packages $(CHECK_TOOLS)

# Stages the tracked and new (not ignored) files with Packaging/debian as debian/, so that nothing is written
# into the work tree or its parent. The Swift build products stay in build/swift between runs.
deb: deb-build-tools
	rm -rf $(OUT) && mkdir -p $(STAGE)
	git ls-files -z --cached --others --exclude-standard \
	    | tar --null --ignore-failed-read -T - -cf - | tar -C $(STAGE) -xf -
	rm -rf $(STAGE)/debian && cp -a Packaging/debian $(STAGE)/debian
	cd $(STAGE) && PATH=$(SWIFT_BIN):$$PATH SWIFT_SCRATCH=$(SCRATCH) dpkg-buildpackage -us -uc -b
	@echo "Built $(DEB)"

deb-lint: deb-check-tools
	@test -f $(CHANGES) || { echo "No $(CHANGES): run 'make deb' first." >&2; exit 1; }
	lintian --fail-on error,warning --display-info --pedantic $(CHANGES)
	Packaging/tests/man-check.sh $(DEB)

# The base tarballs: plain minbase for the install test (so apt must pull every dependency the package
# declares), and for piuparts minbase with systemd, dbus and polkitd, as on a desktop: piuparts purges the
# dependencies it installed, and systemd and polkitd leave their own changes behind (/var/lib/private,
# /usr/share/polkit-1/rules.d owned by polkitd), which piuparts would blame on this package.
$(BASE_MIN):
	@. scripts/lib.sh && ensure_packages $(CHECK_TOOLS)
	mkdir -p $(@D) && rm -f $(CACHE)/$(SUITE)-minbase-*.tar.gz
	mmdebstrap -q --variant=minbase $(SUITE) $@.tmp.tar.gz $(MIRROR) && mv $@.tmp.tar.gz $@
$(BASE_SYSD):
	@. scripts/lib.sh && ensure_packages $(CHECK_TOOLS)
	mkdir -p $(@D) && rm -f $(CACHE)/$(SUITE)-systemd-dbus-*.tar.gz
	mmdebstrap -q --variant=minbase --include=systemd-sysv,dbus,polkitd $(SUITE) $@.tmp.tar.gz $(MIRROR) && mv $@.tmp.tar.gz $@

deb-test: deb-check-tools $(BASE_MIN)
	@test -f $(DEB) || { echo "No $(DEB): run 'make deb' first." >&2; exit 1; }
	Packaging/tests/install-test.sh $(BASE_MIN) $(DEB)

deb-piuparts: deb-check-tools $(BASE_SYSD)
	@test -f $(DEB) || { echo "No $(DEB): run 'make deb' first." >&2; exit 1; }
	@echo "piuparts: install and purge in $(BASE_SYSD) (log: $(OUT)/piuparts.log)"
	@piuparts -d $(SUITE) -m $(MIRROR) -b $(BASE_SYSD) $(DEB) >$(OUT)/piuparts.log 2>&1 \
	    || { tail -n 60 $(OUT)/piuparts.log; echo "piuparts: FAIL"; exit 1; }
	@grep -E 'PASS:|Can.t test upgrade' $(OUT)/piuparts.log

# The package build and the two base tarballs (network-bound) run side by side, then the checks one by one.
deb-check: deb-build-tools deb-check-tools
	@start=$$SECONDS; \
	$(MAKE) --no-print-directory -j3 deb $(BASE_MIN) $(BASE_SYSD) \
	    && echo "deb-check: package and base tarballs ready after $$((SECONDS - start)) s" \
	    && $(MAKE) --no-print-directory deb-lint deb-test deb-piuparts \
	    && echo "deb-check: PASS in $$((SECONDS - start)) s"

deb-clean:
	rm -rf $(OUT) $(SCRATCH)

# The benchmark: whereaboutsd and GeoClue 2.6 side by side on private buses, release build (scripts/bench.sh).
# Results in build/bench/ (bench.txt, bench.json). `make bench BENCH_SOAK_SECONDS=60` for a quick run.
BENCH_SOAK_SECONDS ?= 600

.PHONY: bench
bench:
	BENCH_SOAK_SECONDS=$(BENCH_SOAK_SECONDS) PATH=$(SWIFT_BIN):$$PATH scripts/bench.sh

# --- Fuzzing and sanitizers ----------------------------------------------------------------------------------------
#
#   make fuzz               builds the libFuzzer targets (Fuzz/Targets) and fuzzes each for FUZZ_SECONDS; inputs
#                           that reach new code are minimised into Fuzz/corpus/<target> (-merge=1); crashes land in
#                           .build/fuzz/artifacts/<target>
#   make fuzz-regress       builds the targets and runs each over its corpus once, without fuzzing (quick)
#   make check-sanitizers   the test suite built and run under AddressSanitizer, then ThreadSanitizer; the daemon
#                           the end-to-end tests start is the one from the same sanitized build
#
# The targets are executable targets of Package.swift (Fuzz/Targets/<target>, product fuzz-<target>), built by
# SwiftPM in a scratch folder of their own, in release, with libFuzzer's coverage instrumentation and
# AddressSanitizer in every module they link (the C shim over libgps included), linked with libFuzzer's main
# (-DFUZZING, see Package.swift). One product per `swift build`: it builds only the last --product it is given. The
# targets are among Package.swift's extras (WHEREABOUTS_EXTRAS=1).

FUZZ_TARGETS := nmea gpsd config grants static-location gpx dbus ichnaea position-cache cell-cache predicted-orbits routes regions history identity
FUZZ_SECONDS ?= 60
FUZZ_OUT     := .build/fuzz
# SwiftPM's scratch folder holds an artifacts folder of its own, so it is not .build/fuzz, where the crashes go.
FUZZ_SCRATCH := $(FUZZ_OUT)/swiftpm
FUZZ_BIN     := $(FUZZ_SCRATCH)/release
# SwiftPM passes each --sanitize to swiftc as an option of its own, and swiftc keeps only the last one: the Swift
# modules would get the coverage instrumentation without AddressSanitizer. -Xswiftc -sanitize=fuzzer,address comes
# after them and asks for both (clang, for the C modules, takes every -fsanitize). The dbus and gpsd targets reach
# what they feed through `package` declarations, so nothing needs -enable-testing. lld: gold warns that it cannot
# export a local symbol of AddressSanitizer's runtime.
FUZZ_BUILD   := WHEREABOUTS_EXTRAS=1 swift build -c release --scratch-path $(FUZZ_SCRATCH) --sanitize=fuzzer --sanitize=address \
                -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING -Xswiftc -use-ld=lld
FUZZ_RUN_ENV := SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1

.PHONY: fuzz fuzz-build fuzz-regress fuzz-tools check-sanitizers

fuzz-tools:
	@. scripts/lib.sh && ensure_packages libdbus-1-dev libgps-dev pkg-config

fuzz-build: fuzz-tools
	@. scripts/lib.sh && ensure_swift && for target in $(FUZZ_TARGETS); do \
	    echo "fuzz-build: fuzz-$$target"; \
	    $(FUZZ_BUILD) --product fuzz-$$target || exit 1; \
	done

fuzz-regress: fuzz-build
	@for target in $(FUZZ_TARGETS); do \
	    printf '%-16s ' $$target; \
	    $(FUZZ_RUN_ENV) $(FUZZ_BIN)/fuzz-$$target -runs=0 -timeout=10 Fuzz/corpus/$$target >$(FUZZ_OUT)/$$target.log 2>&1 \
	        || { echo FAIL; cat $(FUZZ_OUT)/$$target.log; exit 1; }; \
	    grep -o 'INITED.*' $(FUZZ_OUT)/$$target.log | head -n1; \
	done

fuzz: fuzz-build
	@set -o pipefail; for target in $(FUZZ_TARGETS); do \
	    dict=$$(ls Fuzz/dict/$$target.dict 2>/dev/null); \
	    mkdir -p $(FUZZ_OUT)/corpus/$$target $(FUZZ_OUT)/artifacts/$$target; \
	    echo "fuzz: $$target for $(FUZZ_SECONDS) s"; \
	    $(FUZZ_RUN_ENV) $(FUZZ_BIN)/fuzz-$$target -max_total_time=$(FUZZ_SECONDS) -timeout=10 -print_final_stats=1 \
	        $${dict:+-dict=$$dict} -artifact_prefix=$(FUZZ_OUT)/artifacts/$$target/ \
	        $(FUZZ_OUT)/corpus/$$target Fuzz/corpus/$$target 2>&1 | grep -E '^(#[0-9]+.*(DONE|time:)|stat::|==|SUMMARY|artifact)'; \
	    status=$$?; \
	    if [ $$status -ne 0 ]; then \
	        echo "fuzz: $$target failed; the input is in $(FUZZ_OUT)/artifacts/$$target" >&2; exit 1; fi; \
	    $(FUZZ_RUN_ENV) $(FUZZ_BIN)/fuzz-$$target -merge=1 Fuzz/corpus/$$target $(FUZZ_OUT)/corpus/$$target 2>&1 \
	        | grep -E 'MERGE-OUTER: [0-9]+ new files' || exit 1; \
	done

# The suite under each sanitizer, in a build of its own. Reports from every process the tests start (the test
# runner, whereaboutsd, the CLI) are written to .build/sanitizers/<sanitizer>/ instead of standard error; any report
# of an error fails the run and is printed (LeakSanitizer also writes a file that only counts suppressed leaks).
# Suppressions, each with its reason, are in Fuzz/sanitizers.
SANITIZERS          := address thread
SANITIZER_OUT       := $(CURDIR)/.build/sanitizers
SANITIZER_PACKAGES  := make dbus systemd util-linux gpsd gpsd-clients python3-gps polkitd pkexec python3-dbusmock geoclue-2.0 \
                       xdg-desktop-portal bubblewrap python3-gi iio-sensor-proxy umockdev \
                       libdbus-1-dev libgps-dev libpolkit-gobject-1-dev pkg-config
SANITIZER_ENV_address = ASAN_OPTIONS=log_path=$(SANITIZER_OUT)/address/report:detect_leaks=1 \
                        LSAN_OPTIONS=suppressions=$(CURDIR)/Fuzz/sanitizers/lsan.supp
SANITIZER_ENV_thread  = TSAN_OPTIONS=log_path=$(SANITIZER_OUT)/thread/report:suppressions=$(CURDIR)/Fuzz/sanitizers/tsan.supp
# Tests that assert how long something takes; instrumentation slows everything several times over. Under
# ThreadSanitizer (about ten times slower) the end-to-end tests also run one at a time, or their daemons miss the
# tests' reply timeouts, and the grant store stress test gets no decision confirmed between its kills.
SANITIZER_FLAGS_address := --skip parsesLargeInputsInLinearTime
SANITIZER_FLAGS_thread  := --skip parsesLargeInputsInLinearTime --skip noConfirmedDecisionIsLostAcross100Kills --no-parallel

check-sanitizers:
	@. scripts/lib.sh && ensure_swift && ensure_packages $(SANITIZER_PACKAGES)
	@set -o pipefail; for sanitizer in $(SANITIZERS); do \
	    case $$sanitizer in \
	        address) scratch=.build/asan; flags="$(SANITIZER_FLAGS_address)";; \
	        thread) scratch=.build/tsan; flags="$(SANITIZER_FLAGS_thread)";; \
	    esac; \
	    echo "check-sanitizers: $$sanitizer: building in $$scratch"; \
	    swift build --build-tests --sanitize=$$sanitizer --scratch-path $$scratch || exit 1; \
	    rm -rf $(SANITIZER_OUT)/$$sanitizer && mkdir -m 1777 -p $(SANITIZER_OUT)/$$sanitizer; \
	    env SWIFT_BACKTRACE=enable=no $(SANITIZER_ENV_address) $(SANITIZER_ENV_thread) \
	        swift test --skip-build --sanitize=$$sanitizer --scratch-path $$scratch $$flags \
	        2>&1 | tee $(SANITIZER_OUT)/$$sanitizer/test.log; \
	    status=$$?; \
	    if grep -qE '^(➜|↪|◇|✔|✘).* skipped' $(SANITIZER_OUT)/$$sanitizer/test.log; then \
	        echo "check-sanitizers: $$sanitizer: a test was skipped" >&2; exit 1; fi; \
	    reports=$$(grep -lE '^(==[0-9]+==ERROR|WARNING: ThreadSanitizer|SUMMARY: )' $(SANITIZER_OUT)/$$sanitizer/report.* 2>/dev/null); \
	    if [ -n "$$reports" ]; then \
	        cat $$reports; \
	        echo "check-sanitizers: $$sanitizer: reports in $(SANITIZER_OUT)/$$sanitizer" >&2; exit 1; fi; \
	    [ $$status -eq 0 ] || { echo "check-sanitizers: $$sanitizer: the suite failed" >&2; exit 1; }; \
	    echo "check-sanitizers: $$sanitizer: PASS"; \
	done
