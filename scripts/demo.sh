#!/usr/bin/env bash
# The demo: whereaboutsd on a private system-like bus with a built-in location, and the CLI printing fixes.
#
#   scripts/demo.sh              replay demo/track.gpx (a walk, looping) as a simulated source
#   scripts/demo.sh --static     serve the static location in demo/geolocation
#   scripts/demo.sh --count 5    stop after five fixes (any other option goes to `whereabouts watch`)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

source_kind=replay
watch_options=()
for argument in "$@"; do
    case "$argument" in
        --static) source_kind=static ;;
        --replay) source_kind=replay ;;
        *) watch_options+=("$argument") ;;
    esac
done

ensure_swift
ensure_packages dbus "${BUILD_PACKAGES[@]}"
echo "Building (release)..." >&2
swift build -c release --product whereaboutsd >&2
swift build -c release --product whereabouts >&2
bin=$(swift build -c release --show-bin-path)

work=$(mktemp -d /tmp/whereabouts-demo.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

write_bus_config "$work"

if [ "$source_kind" = static ]; then
    printf '[static-source]\nenable=true\npath=%s\n' "$PWD/demo/geolocation" >"$work/whereabouts.conf"
else
    printf '[replay]\nenable=true\npath=%s\nspeed=1\n' "$PWD/demo/track.gpx" >"$work/whereabouts.conf"
fi
# No polkitd runs on the private bus: without polkit, an app nothing refuses is authorised.
printf '[authorisation]\npolkit=false\ngrants=%s/grants\n' "$work" >>"$work/whereabouts.conf"

dbus-daemon --config-file="$work/bus.conf" --nofork --nopidfile --print-address=3 3>"$work/address" >/dev/null 2>&1 &
pids+=($!)
disown
for _ in $(seq 100); do [ -s "$work/address" ] && break; sleep 0.05; done
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$work/system_bus_socket"

"$bin/whereaboutsd" --config "$work/whereabouts.conf" --timeout 0 >/dev/null 2>"$work/daemon.log" &
pids+=($!)
disown
for _ in $(seq 100); do
    reply=$(dbus-send --bus="$DBUS_SYSTEM_BUS_ADDRESS" --print-reply --dest=org.freedesktop.DBus / \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.GeoClue2 2>/dev/null) || true
    [[ "$reply" == *true* ]] && break
    sleep 0.05
done
sed 's/^<[0-9]>/whereaboutsd: /' "$work/daemon.log" >&2
echo "Fixes from the $source_kind source (Ctrl-C to stop):" >&2
"$bin/whereabouts" watch "${watch_options[@]}"
