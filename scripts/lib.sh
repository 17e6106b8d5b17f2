# Shared helpers for the scripts in this folder. Source it; it defines functions only.

# ensure_packages PKG...: installs the Debian packages that are missing (as root), quietly.
ensure_packages() {
    local missing=() package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "Missing packages: ${missing[*]}. Run as root, or install them first." >&2
        exit 1
    fi
    echo "Installing ${missing[*]}..." >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ensure_swift: fails with a clear message when the Swift toolchain is not on PATH.
ensure_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        [ -x /opt/swift/usr/bin/swift ] && export PATH="/opt/swift/usr/bin:$PATH" && return 0
        echo "The Swift toolchain (6.2 or newer) is needed: put 'swift' on PATH." >&2
        exit 1
    fi
}

# write_bus_config DIR: a system-bus-like policy in DIR/bus.conf, listening on DIR/system_bus_socket, activating
# services from DIR/activation and including the project's own bus policy from dbus/ (run from the project root).
write_bus_config() {
    mkdir -p "$1/activation"
    sed -e "s|@SOCKET@|$1/system_bus_socket|" -e "s|@SERVICE_DIR@|$1/activation|" -e "s|@POLICY_DIR@|$PWD/dbus|" \
        -e "s|@EXTRA_POLICY@||" scripts/system-bus.conf.in >"$1/bus.conf"
}

# The packages every build needs: the libdbus and libgps headers, and pkg-config to find them; the libpolkit and
# libcurl headers, for the tests that hold the Polkit and HTTP modules' own declarations to them (the build itself
# does not use them: libpolkit-gobject-1 and libcurl are loaded at run time).
BUILD_PACKAGES=(libdbus-1-dev libgps-dev libpolkit-gobject-1-dev libcurl4-openssl-dev pkg-config)

# How Packaging/debian/rules builds the shipped executables (keep the two alike; run from the project root): the
# Swift runtime linked in statically, full RELRO with every symbol bound at start, ld.lld with the read-only data kept
# read-only (Packaging/debian/read-only-data.ld), each function in a section of its own. DAEMON_ORDER_FLAGS lay
# whereaboutsd's code out in the order of Packaging/debian/whereaboutsd.order (scripts/order-file.sh).
PACKAGE_BUILD_FLAGS=(-c release --static-swift-stdlib --disable-local-rpath
    -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now
    -Xswiftc -use-ld=lld -Xlinker "--script=$PWD/Packaging/debian/read-only-data.ld"
    -Xswiftc -Xfrontend -Xswiftc -function-sections)
DAEMON_ORDER_FLAGS=(-Xlinker "--symbol-ordering-file=$PWD/Packaging/debian/whereaboutsd.order"
    -Xlinker --no-warn-symbol-ordering)
