#!/usr/bin/env bash
# whereaboutsd and GeoClue 2.6 side by side (make bench): installs what it needs (as root, on Debian 12), builds
# the release products, runs wbbench for the gpsd path and the modem path (both services, GeoClue's modem GPS source
# and ours, through Debian's ModemManager on the emulated modem at 1 Hz and 10 Hz, each service run as its package's
# user with its package's polkit rules; about 5 minutes), a modem receiver's first fix with predicted orbits and
# without beside GeoClue's (the ModemManager stand-in's receiver; about 6 minutes) and what the satellites in view
# cost on the bus (about 2 minutes), wbnet for network positioning (both services: GeoClue's
# Wi-Fi source run on the same scans, about 13 minutes, then each service's CPU per scan, about 8) and wbload for both services, each with a real polkitd and
# the package's policy, and prints the table and the JSON; both are kept in build/bench/.
# Then wbload --floor: the bursts against two stand-in services that do the least, one keeping GeoClue's contract
# (floor.txt). Then wbload --attacks: a probe user's GetClient while one user keeps up each of six attacks (attacks.txt).
# Last, wbload --regions: whereaboutsd's CPU per fix with 10,000 regions against none, and memory per region
# (regions.txt).
# BENCH_SOAK_SECONDS (600) sets the length of the 1 fix/s soak with 1000 clients; a shorter one gives a quick run.
# Not a test: figures for the README.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_swift
ensure_packages dbus systemd util-linux bash gpsd geoclue-2.0 glib-networking polkitd python3-dbusmock python3-gi \
    modemmanager umockdev gir1.2-umockdev-1.0 openssl ca-certificates "${BUILD_PACKAGES[@]}"
# The package's system user, made from its sysusers.d file as the package makes it: the modem path runs the daemon
# as it, under the bus and polkit policy that name it (geoclue-2.0 makes GeoClue's).
systemd-sysusers "$PWD/Packaging/debian/whereabouts.sysusers"
# The benchmark programs are among Package.swift's extras.
export WHEREABOUTS_EXTRAS=1
for product in wbbench wbload wbnet; do
    swift build -c release --product "$product" >&2
done
bin=$(swift build -c release --show-bin-path)
# The daemon as the Debian package ships it (PACKAGE_BUILD_FLAGS and DAEMON_ORDER_FLAGS, scripts/lib.sh). (A dynamic
# build would share the runtime's pages with wbload, which is also Swift, and so look smaller than it is on a real
# system.)
static=("${PACKAGE_BUILD_FLAGS[@]}" "${DAEMON_ORDER_FLAGS[@]}" --scratch-path .build/bench-static)
swift build "${static[@]}" --product whereaboutsd >&2
export WHEREABOUTS_BIN_DIR
WHEREABOUTS_BIN_DIR=$(swift build "${static[@]}" --show-bin-path)
out=build/bench
mkdir -p "$out"
echo "bench: gpsd path (wbbench)..." >&2
"$bin/wbbench" --reports 200 | tee "$out/wbbench.txt" >&2
echo "bench: modem path (wbbench --modem)..." >&2
"$bin/wbbench" --modem --reports 120 | tee "$out/wbbench-modem.txt" >&2
echo "bench: a modem receiver's first fix with and without predicted orbits (wbbench --first-fix)..." >&2
"$bin/wbbench" --first-fix --trials 3 | tee "$out/wbbench-first-fix.txt" >&2
echo "bench: what the satellites in view cost (wbbench --sky)..." >&2
"$bin/wbbench" --sky --reports 60 | tee "$out/wbbench-sky.txt" >&2
echo "bench: network positioning (wbnet)..." >&2
"$bin/wbnet" --trials 50 | tee "$out/wbnet.txt" >&2
"$bin/wbnet" --filters | tee "$out/wbnet-filters.txt" >&2
"$bin/wbnet" --scan-cpu | tee "$out/wbnet-scan-cpu.txt" >&2
echo "bench: whereaboutsd and GeoClue 2.6 (wbload, soak ${BENCH_SOAK_SECONDS:-600} s each)..." >&2
"$bin/wbload" --soak-seconds "${BENCH_SOAK_SECONDS:-600}" --gpsd-report "$out/wbbench.txt" --output "$out"
echo "bench: the bursts against a service that does the least, and one that keeps the contract (wbload --floor)..." >&2
"$bin/wbload" --floor --burst-runs 5 --output "$out" >&2
echo "bench: what one user's attacks do to another user's GetClient (wbload --attacks)..." >&2
"$bin/wbload" --attacks 20 --output "$out" >&2
echo "bench: geofencing, CPU per fix with 10,000 regions and memory per region (wbload --regions)..." >&2
"$bin/wbload" --regions --output "$out" >&2
