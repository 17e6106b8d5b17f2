#!/usr/bin/env bash
# Every test: installs what the tests need (as root, on Debian 12), checks the house's import rules
# (scripts/check-imports.py) and format (swift format lint), builds, runs the README's demo, runs the whole suite,
# replays every fuzzing corpus through its target (make fuzz-regress), then the Debian package's checks (make
# deb-check). The suite starts its own private dbus-daemon, polkitd, gpsd, logind, wpa_supplicant and NetworkManager
# stand-ins, a loopback HTTPS Ichnaea server, GeoClue 2.6, xdg-desktop-portal on a private session bus and the real
# whereaboutsd; it never touches the machine's system bus. A skipped test fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_swift
ensure_packages make dbus systemd util-linux gpsd gpsd-clients python3-gps polkitd pkexec python3-dbusmock geoclue-2.0 \
    xdg-desktop-portal bubblewrap python3-gi iio-sensor-proxy umockdev gir1.2-umockdev-1.0 modemmanager \
    libcurl4 ca-certificates openssl iproute2 \
    "${BUILD_PACKAGES[@]}"
# The package's system user, made from its sysusers.d file as the package makes it: the identity tests run the
# daemon as it, under the bus and polkit policy that name it.
systemd-sysusers "$PWD/Packaging/debian/whereabouts.sysusers"
python3 scripts/check-imports.py
# The house's format (.swift-format: 120 columns), as
# `swift format --in-place --recursive Sources Tests Benchmarks Fuzz Package.swift` applies it.
swift format lint --strict --recursive --parallel Sources Tests Benchmarks Fuzz Package.swift
# The first commands a developer or a packager types, `swift build` and `swift build -c release`, must work and build
# only the products and what they link; the suite's build adds the benchmark programs and the fuzz targets' replayers
# (WHEREABOUTS_EXTRAS, Package.swift), so that every target still compiles.
swift build
swift build -c release
# The README's other command, on the release build just made: the demo must print fixes from each of its sources
# (the replay's fixes keep coming; the static source gives one).
for source in replay static; do
    count=$([ "$source" = replay ] && echo 2 || echo 1)
    fixes=$(timeout 300 scripts/demo.sh "--$source" --count "$count") || true
    if [ "$(grep -c ' ±' <<<"$fixes")" -ne "$count" ]; then
        echo "scripts/demo.sh --$source --count $count printed, instead of $count fixes: $fixes" >&2
        exit 1
    fi
done
export WHEREABOUTS_EXTRAS=1
swift build --build-tests
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
# The polkit load tests (1000 clients on 1000 connections) run on their own after the rest, so that their load
# cannot slow the other suites, which run in parallel.
load=PolkitLoadTests
swift test --skip-build --skip "$load" 2>&1 | tee "$log" || status=$?
swift test --skip-build --filter "$load" 2>&1 | tee -a "$log" || status=$?
if grep -qE '^(➜|↪|◇|✔|✘).* skipped' "$log"; then
    echo "A test was skipped; skipped tests fail the run." >&2
    exit 1
fi
[ "$status" -eq 0 ] || exit "$status"
make fuzz-regress
make deb-check
