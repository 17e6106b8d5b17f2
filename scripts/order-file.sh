#!/usr/bin/env bash
# Remakes Packaging/debian/whereaboutsd.order, the order in which the linker lays out whereaboutsd's functions
# (HACKING.md, "The daemon's code layout"). As root on Debian 12, about 2 minutes: builds the daemon as packaged
# and wbload, runs wbload's memory steps (polkitd with the package's policy, one client kept, then 30 more) with
# the daemon under callgrind, dumping what it ran at the start, for the first client and for the 30, and writes the
# functions the clients ran first, then the rest. Run it after a change to what a client's life runs, and commit
# the file with the change; a stale file costs only memory (functions it does not name are laid out as before).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_swift
ensure_packages dbus polkitd valgrind "${BUILD_PACKAGES[@]}"
export WHEREABOUTS_EXTRAS=1
swift build -c release --product wbload >&2
bin=$(swift build -c release --show-bin-path)
profiled=("${PACKAGE_BUILD_FLAGS[@]}" --scratch-path .build/order-profile)
swift build "${profiled[@]}" --product whereaboutsd >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# valgrind 3.19 cannot read the DWARF 5 the toolchain writes: it runs a copy without it (the symbols stay).
strip --strip-debug -o "$work/whereaboutsd.bin" "$(swift build "${profiled[@]}" --show-bin-path)/whereaboutsd"
cat > "$work/whereaboutsd" <<WRAPPER
#!/bin/sh
exec valgrind --tool=callgrind --demangle=no --compress-strings=no --compress-pos=no --dump-line=no \
    --callgrind-out-file="$work/callgrind.out" "$work/whereaboutsd.bin" "\$@"
WRAPPER
chmod +x "$work/whereaboutsd"

echo "order-file: wbload's memory steps with whereaboutsd under callgrind..." >&2
WHEREABOUTS_BIN_DIR="$work" "$bin/wbload" --only whereabouts --load-processes 1 --memory-steps 30 --hold 10 \
    --step-timeout 300 --settle 8 >"$work/wbload.txt" 2>"$work/wbload.log" &
load=$!
# Each dump ends a part of the profile: 1 the start (and the idle release), 2 the first client, 3 the next 30.
marks=("memory steps: idle" "holding 10 s at 0," "holding 10 s at 30,")
part=0
while kill -0 "$load" 2>/dev/null; do
    if [ "$part" -lt 3 ] && grep -q "${marks[$part]}" "$work/wbload.log"; then
        callgrind_control --dump "$work/whereaboutsd.bin" >/dev/null 2>&1
        part=$((part + 1))
    fi
    sleep 0.2
done
if ! wait "$load" || [ ! -s "$work/callgrind.out.3" ]; then
    cat "$work/wbload.log" "$work/wbload.txt" >&2
    echo "order-file: the profiled run failed; Packaging/debian/whereaboutsd.order is unchanged" >&2
    exit 1
fi
python3 scripts/order-file.py "$work/whereaboutsd.bin" "$work"/callgrind.out.{1,2,3} >"$work/order"
mv "$work/order" Packaging/debian/whereaboutsd.order
echo "order-file: $(wc -l <Packaging/debian/whereaboutsd.order) functions in Packaging/debian/whereaboutsd.order" >&2
