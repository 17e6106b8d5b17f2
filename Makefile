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

BUILD_TOOLS := debhelper libdbus-1-dev libgps-dev libpolkit-gobject-1-dev pkgconf git
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
