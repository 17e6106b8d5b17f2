#!/usr/bin/env bash
# Figures for the README (not a test): time from exec to owning org.freedesktop.GeoClue2, memory at idle,
# and time to first location through the CLI, with the release build and the static source.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_swift
ensure_packages dbus "${BUILD_PACKAGES[@]}"
swift build -c release --product whereaboutsd >&2
swift build -c release --product whereabouts >&2
bin=$(swift build -c release --show-bin-path)
runs=${RUNS:-10}

work=$(mktemp -d /tmp/whereabouts-measure.XXXXXX)
chmod 755 "$work"
pids=()
trap 'kill -9 "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT
write_bus_config "$work"
dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile --print-address=3 3>"$work/address" >/dev/null 2>&1 &
pids+=($!)
disown
for _ in $(seq 100); do [ -s "$work/address" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/system_bus_socket"
printf '[static-source]\nenable=true\npath=%s\n' "$PWD/demo/geolocation" >"$work/whereabouts.conf"
# No polkitd runs on the private bus: without polkit, an app nothing refuses is authorised.
printf '[authorisation]\npolkit=false\ngrants=%s/grants\n' "$work" >>"$work/whereabouts.conf"

owns() {
    local reply
    reply=$(dbus-send --bus="$DBUS_SYSTEM_BUS_ADDRESS" --print-reply --dest=org.freedesktop.DBus / \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.GeoClue2 2>/dev/null) || return 1
    [[ "$reply" == *true* ]]
}

startup=()
first=()
for _ in $(seq "$runs"); do
    begin=$(date +%s%N)
    "$bin/whereaboutsd" --config "$work/whereabouts.conf" --timeout 0 >/dev/null 2>&1 &
    pid=$!
    disown
    until owns; do :; done
    startup+=($(( ($(date +%s%N) - begin) / 1000 )))
    begin=$(date +%s%N)
    "$bin/whereabouts" locate >/dev/null
    first+=($(( ($(date +%s%N) - begin) / 1000 )))
    kill "$pid"
    while owns; do :; done
done
"$bin/whereaboutsd" --config "$work/whereabouts.conf" --timeout 0 >/dev/null 2>&1 &
pid=$!
pids+=($pid)
disown
until owns; do :; done
"$bin/whereabouts" locate >/dev/null
sleep 2
rss=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
private=$(awk '/^Private_(Clean|Dirty)/ {sum += $2} END {print sum}' "/proc/$pid/smaps_rollup")
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "machine: $(nproc) cores, $(uname -m), $(. /etc/os-release; echo "$PRETTY_NAME")"
echo "exec → name owned (µs, median of $runs, includes the polling client): $(median "${startup[@]}")"
echo "CLI locate, exec → first fix printed (µs, median of $runs): $(median "${first[@]}")"
echo "idle after one client came and went: RSS ${rss} KiB, private ${private} KiB"
