#!/bin/bash
# Usage: install-test.sh BASE_TARBALL DEB   (as root; `make deb-test` runs it)
#
# The install test of the Debian package, in a fresh Debian 12 tree unpacked from BASE_TARBALL (mmdebstrap
# minbase: no Swift toolchain, no systemd, no dbus):
#   1. in a chroot (private mount and pid namespaces): `apt-get install ./whereabouts_*.deb`, so every
#      dependency must come from what the package declares; the binaries run without Swift;
#   2. the same tree booted with systemd as PID 1 under systemd-nspawn (private network), where a probe checks:
#      D-Bus activation through the tree's own dbus-daemon and systemd (SystemdService=), the service user and
#      the unit's hardening, the shipped network providers (and that nothing is sent without a client), that
#      the bus policy admits the service user, and only it, to wpa_supplicant, a static-source location through
#      busctl and through the CLI, that another user
#      cannot own org.freedesktop.GeoClue2, that polkit's defaults refuse a user outside any session and a rule
#      lets them in, an upgrade that keeps the edited configuration and the grant store, and a purge that
#      leaves nothing of the package behind;
#   3. back in the chroot: installing over Debian's geoclue-2.0 removes it, and a package that depends on
#      geoclue-2.0 (>= 2.3.1) stays installed (Conflicts, Replaces and the versioned Provides).
# The machine's own system bus is never used: every bus here is the one inside the tree.
set -euo pipefail

BASE=$(readlink -f "$1")
DEB=$(readlink -f "$2")
PKG=$(dpkg-deb -f "$DEB" Package)
VERSION=$(dpkg-deb -f "$DEB" Version)
NEXT_VERSION="$VERSION+upgradetest1"

for tool in systemd-nspawn unshare chroot dpkg-deb; do
    command -v "$tool" >/dev/null || { echo "install-test: $tool is missing" >&2; exit 1; }
done

R=$(mktemp -d "${TMPDIR:-/tmp}/whereabouts-install-test.XXXXXX")
W=$(mktemp -d "${TMPDIR:-/tmp}/whereabouts-next-deb.XXXXXX")
trap 'rm -rf --one-file-system "$R" "$W"' EXIT
start=$SECONDS
phase() { printf '== %s (%d s)\n' "$*" $((SECONDS - start)); }

phase "unpacking $(basename "$BASE")"
tar -C "$R" -xf "$BASE"
cp /etc/resolv.conf "$R/etc/resolv.conf"
cp "$DEB" "$R/tmp/pkg.deb"
# Maintainer scripts start nothing in the chroot.
printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"
chmod 755 "$R/usr/sbin/policy-rc.d"

# The upgrade: the same package with a higher version and a changed default configuration, so that dpkg has
# to choose between the administrator's edit and the new default.
phase "making $PKG $NEXT_VERSION for the upgrade"
dpkg-deb -R "$DEB" "$W/root"
sed -i "s/^Version: .*/Version: $NEXT_VERSION/" "$W/root/DEBIAN/control"
printf '\n# (changed in %s)\n' "$NEXT_VERSION" >>"$W/root/etc/whereabouts/whereabouts.conf"
(cd "$W/root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    >"$W/root/DEBIAN/md5sums"
dpkg-deb -Zgzip -z1 -b "$W/root" "$R/root/next.deb" >/dev/null
# An app that needs GeoClue, as gnome-maps (>= 2.0) and gnome-weather (>= 2.3.1) do.
mkdir -p "$W/consumer/DEBIAN"
cat >"$W/consumer/DEBIAN/control" <<CONTROL
Package: geoclue-consumer-test
Version: 1.0
Architecture: all
Maintainer: Whereabouts install test <nobody@localhost>
Depends: geoclue-2.0 (>= 2.3.1)
Description: stand-in for an app that depends on GeoClue
CONTROL
dpkg-deb -b "$W/consumer" "$R/root/consumer.deb" >/dev/null

phase "chroot: apt-get install ./$(basename "$DEB")"
unshare --mount --pid --fork --mount-proc="$R/proc" -- bash -c '
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$1/dev/pts"
    exec chroot "$1" /bin/bash -s "$2"' _ "$R" "$PKG" <<'CHROOT'
set -euo pipefail
PKG=$1
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
fail() { echo "FAIL: $*"; exit 1; }
for tool in systemctl dbus-daemon; do ! command -v $tool >/dev/null || fail "the base already has $tool"; done
apt-get update -qq
apt-get install -y -q /tmp/pkg.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "apt install"; }
grep -E '^(Need to get|After this operation)' /tmp/apt.log
# wpa_supplicant, whose own bus policy admits only root and netdev, for the bus policy check after the boot.
apt-get install -y -q --no-install-recommends wpasupplicant >/tmp/apt-wpa.log 2>&1 || { cat /tmp/apt-wpa.log; fail "apt install wpasupplicant"; }
[ "$(dpkg-query -W -f='${Status}' "$PKG")" = "install ok installed" ] || fail "not installed"
[ ! -e /opt/swift ] || fail "a Swift toolchain is present"
[ -z "$(find / -xdev -name 'libswift*' -print -quit)" ] || fail "a Swift runtime library is present"
/usr/libexec/whereaboutsd --version
/usr/bin/whereabouts --help >/dev/null || fail "whereabouts --help"
id whereabouts
[ "$(stat -c '%U %G %a' /var/lib/whereabouts)" = "whereabouts whereabouts 750" ] || fail "state directory: $(stat -c '%U %G %a' /var/lib/whereabouts)"
dpkg-query -W -f='${Conffiles}\n' "$PKG" | grep -q '^ /etc/whereabouts/whereabouts.conf ' || fail "the configuration is no conffile"
apt-get clean
echo "chroot: PASS"
CHROOT
rm "$R/usr/sbin/policy-rc.d"
# systemd came in through the package's own dependencies (sysusers); the boot needs it.
[ -x "$R/lib/systemd/systemd" ] || { echo "install-test: FAIL: the install brought no systemd to boot"; exit 1; }

# The probe runs as a oneshot unit once the container has booted, and powers it off.
cat >"$R/probe.sh" <<'PROBE'
#!/bin/bash
exec >/probe.out 2>&1
set -uo pipefail
export LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
GC=org.freedesktop.GeoClue2 MP=/org/freedesktop/GeoClue2/Manager MI=org.freedesktop.GeoClue2.Manager
UNIT=whereabouts.service CONF=/etc/whereabouts/whereabouts.conf
fail() {
    echo "FAIL: $*"
    echo "--- journal"; journalctl -b --no-pager -o short-monotonic | tail -n 60
    echo FAIL >/probe.status; systemctl poweroff; exit 1
}
step() { echo; echo "--- $*"; }
bus() { busctl --system "$@"; }
owner() { bus call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus "$1" s $GC | awk '{print $2}'; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
wait_inactive() { for _ in $(seq 50); do systemctl is-active -q $UNIT || return 0; sleep 0.1; done; return 1; }

step "D-Bus activation through systemd"
systemctl is-active -q $UNIT && fail "$UNIT runs before any call"
out=$(bus call $GC $MP $MI GetClient) || fail "GetClient: $out"
echo "GetClient: $out"
[[ $out == 'o "/org/freedesktop/GeoClue2/Client/'* ]] || fail "GetClient answered $out"
journalctl -b -u dbus.service --no-pager -o cat | grep "Activating via systemd: service name='$GC' unit='$UNIT'" \
    || fail "dbus-daemon did not activate $UNIT through systemd"
systemctl show $UNIT -p ActiveState -p SubState -p Type -p User -p MainPID
[ "$(systemctl show -p ActiveState --value $UNIT)" = active ] || fail "$UNIT is not active"
pid=$(systemctl show -p MainPID --value $UNIT)
uid=$(id -u whereabouts)
[ "$(owner GetConnectionUnixProcessID)" = "$pid" ] || fail "$GC is not owned by the unit's main process"
[ "$(owner GetConnectionUnixUser)" = "$uid" ] || fail "$GC is not owned by the whereabouts user"
[ "$(readlink /proc/$pid/exe)" = /usr/libexec/whereaboutsd ] || fail "main process is $(readlink /proc/$pid/exe)"

step "the unit's hardening, as the kernel sees it"
grep -E '^(Uid|Gid|Groups|NoNewPrivs|Seccomp|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/$pid/status
status() { awk -v k="$1:" '$1 == k {print $2}' /proc/$pid/status; }
[ "$(status Uid)" = "$uid" ] || fail "runs as uid $(status Uid)"
for cap in CapInh CapPrm CapEff CapBnd CapAmb; do [ "$(status $cap)" = 0000000000000000 ] || fail "$cap is $(status $cap)"; done
[ "$(status NoNewPrivs)" = 1 ] || fail "NoNewPrivs is off"
[ "$(status Seccomp)" = 2 ] || fail "no seccomp filter"
[ "$(stat -c '%U %a' /var/lib/whereabouts)" = "whereabouts 750" ] || fail "state directory: $(stat -c '%U %a' /var/lib/whereabouts)"
systemd-analyze verify --man=no /lib/systemd/system/$UNIT || fail "systemd-analyze verify"
exposure=$(systemd-analyze security --no-pager $UNIT | tail -n 1)
echo "$exposure"
awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+$/) { exit !($i <= 2.0) }; exit 1}' <<<"$exposure" \
    || fail "systemd-analyze security rates the unit above 2.0: $exposure"

step "the shipped configuration enables gpsd, Wi-Fi, IP, the modem and the compass, and nothing is sent without a client"
providers=$(bus get-property $GC $MP io.github.whereabouts1.Manager Providers)
echo "Providers: $providers"
for kind in gpsd wifi ip modem-gnss cell cdma compass; do
    grep -q "\"$kind\"" <<<"$providers" || fail "no $kind provider: $providers"
done
whereabouts status | tee /tmp/status.txt || fail "whereabouts status"
grep -q '^provider wifi: ' /tmp/status.txt || fail "whereabouts status lists no Wi-Fi provider"
[ "$(grep -c '^  sent: nothing$' /tmp/status.txt)" = 3 ] || fail "a lookup was sent with no client"
journalctl -b -u $UNIT --no-pager -o cat | grep 'Wi-Fi positioning: unknown places are looked up at https://api.beacondb.net/v1/geolocate' \
    || fail "no log line saying where Wi-Fi lookups go"

step "the bus policy admits the service's user to wpa_supplicant, and nobody else"
wpa() { busctl --system get-property fi.w1.wpa_supplicant1 /fi/w1/wpa_supplicant1 fi.w1.wpa_supplicant1 Interfaces; }
out=$(setpriv --reuid=whereabouts --regid=whereabouts --clear-groups bash -c "$(declare -f wpa); wpa" 2>&1) \
    || fail "the whereabouts user cannot read wpa_supplicant's interfaces: $out"
echo "as whereabouts: Interfaces = $out"
out=$(as_nobody bash -c "$(declare -f wpa); wpa" 2>&1) && fail "nobody may talk to wpa_supplicant: $out"
echo "as nobody: $out"
for _ in $(seq 50); do whereabouts status | grep -q '^  Wi-Fi scans: wpa_supplicant$' && break; sleep 0.1; done
whereabouts status | grep '^  Wi-Fi scans: wpa_supplicant$' || fail "the daemon did not find wpa_supplicant once it ran"

step "a static location, through busctl and the CLI"
printf '# Brandenburg Gate\n52.5163\n13.3777\n34\n15\n' >/etc/geolocation
printf '\n# Added by the install test.\n[static-source]\nenable=true\npath=/etc/geolocation\n' >>$CONF
systemctl stop $UNIT; wait_inactive || fail "$UNIT did not stop"
[ "$(bus get-property $GC $MP $MI AvailableAccuracyLevel)" = "u 8" ] || fail "AvailableAccuracyLevel is not 8"
bus monitor $GC >/tmp/monitor.txt 2>&1 &
monitor=$!
sleep 0.5
whereabouts locate --timeout 10 | tee /tmp/cli.txt || fail "whereabouts locate"
grep -q '^52\.516300, 13\.377700 ±15\.0 m  alt 34\.0 m' /tmp/cli.txt || fail "CLI printed $(cat /tmp/cli.txt)"
whereabouts locate --json --timeout 10 | tee /tmp/cli.json || fail "whereabouts locate --json"
for field in '"latitude":52.5163' '"longitude":13.3777' '"altitude":34.0'; do
    grep -qF "$field" /tmp/cli.json || fail "JSON without $field: $(cat /tmp/cli.json)"
done
sleep 0.3; kill $monitor; wait $monitor 2>/dev/null
grep -A2 '"Latitude"' /tmp/monitor.txt | head -n 3
grep -A2 'STRING "Latitude"' /tmp/monitor.txt | grep -q 'DOUBLE 52.5163;' || fail "busctl monitor saw no Latitude 52.5163"
grep -A2 'STRING "Longitude"' /tmp/monitor.txt | grep -q 'DOUBLE 13.3777;' || fail "busctl monitor saw no Longitude 13.3777"
echo "busctl monitor: the Location's Latitude 52.5163 and Longitude 13.3777 sent to the CLI"
out=$(as_nobody busctl --system call $GC $MP $MI CreateClient) || fail "CreateClient as nobody: $out"
echo "CreateClient as nobody: $out"
# A watching client starts the network providers, which follow the kernel's routes through the unit's sandbox.
timeout 10 whereabouts watch --count 1 >/dev/null || fail "whereabouts watch"
for _ in $(seq 50); do journalctl -b -u $UNIT --no-pager -o cat | grep -qE '^network: (online|offline)' && break; sleep 0.1; done
journalctl -b -u $UNIT --no-pager -o cat | grep -E '^network: (online|offline)' \
    || { journalctl -b -u $UNIT --no-pager -o cat | tail -n 30
         fail "the daemon did not read the routing table (does the unit refuse AF_NETLINK?)"; }
journalctl -b -u $UNIT --no-pager -o cat | grep 'network changes are not followed' && fail "the routes are not followed"

step "polkit decides for other users"
pkaction --action-id io.github.whereabouts1.location-when-in-use | head -n 1 || fail "polkit does not know our actions"
as_nobody whereabouts locate --timeout 10; rc=$?
[ $rc = 4 ] || fail "nobody, outside any session, was not refused by polkit's defaults (exit $rc, not 4)"
# nobody runs outside any login session, where a grant for use when in use does not hold: the rule grants always.
cat >/etc/polkit-1/rules.d/50-install-test.rules <<'RULES'
polkit.addRule(function (action, subject) {
    if (action.id == "io.github.whereabouts1.location-always" && subject.user == "nobody") {
        return polkit.Result.YES;
    }
});
RULES
for _ in $(seq 30); do as_nobody whereabouts locate --json --timeout 10 >/tmp/nobody.json 2>/dev/null && break; sleep 0.2; done
cat /tmp/nobody.json
grep -qF '"latitude":52.5163' /tmp/nobody.json || fail "nobody got no location with a polkit rule that allows it"
rm /etc/polkit-1/rules.d/50-install-test.rules

step "regions keep the daemon running, from boot on"
REGIONS=/var/lib/whereabouts/regions.d
systemctl is-enabled -q whereabouts-regions.path || fail "whereabouts-regions.path is not enabled"
systemctl is-active -q whereabouts-regions.path || fail "whereabouts-regions.path is not active"
whereabouts region add home 52.5163 13.3777 300 || fail "whereabouts region add"
for _ in $(seq 100); do [ -f $REGIONS/0 ] && break; sleep 0.1; done
ls -l $REGIONS
[ "$(stat -c '%U %a' $REGIONS/0)" = "whereabouts 600" ] || fail "root's regions file: $(stat -c '%U %a' $REGIONS/0)"
# A stop, as a reboot is: the path unit starts the daemon again while a region is kept.
systemctl stop $UNIT
for _ in $(seq 100); do systemctl is-active -q $UNIT && break; sleep 0.1; done
systemctl is-active -q $UNIT || fail "whereabouts-regions.path did not start $UNIT with a region kept"
whereabouts region list | grep -q home || fail "the region did not outlive the stop"
whereabouts region remove home || fail "whereabouts region remove"
for _ in $(seq 100); do [ -z "$(ls -A $REGIONS)" ] && break; sleep 0.1; done
[ -z "$(ls -A $REGIONS)" ] || fail "a regions file stayed with no region kept: $(ls -A $REGIONS)"
echo "the path unit ran $UNIT while a region was kept; with none, $REGIONS is empty"

step "another user cannot own $GC"
systemctl stop $UNIT; wait_inactive || fail "$UNIT did not stop"
as_nobody /usr/libexec/whereaboutsd --timeout 1 2>/tmp/deny.err; rc=$?
sed 's/^/  /' /tmp/deny.err
[ $rc = 1 ] || fail "whereaboutsd as nobody exited with $rc"
grep -q 'AccessDenied' /tmp/deny.err || fail "no AccessDenied for nobody"

step "upgrade to the next version keeps the edited configuration and the grant store"
bus call $GC $MP $MI GetClient >/dev/null || fail "GetClient before the upgrade"
old_pid=$(systemctl show -p MainPID --value $UNIT)
conf_sum=$(md5sum <$CONF)
# A user's stored decision, in the grant store's format.
printf '# whereabouts grants 1\n1000\torg.example.Maps\talways\tprecise\n' >/var/lib/whereabouts/grants
chown whereabouts:whereabouts /var/lib/whereabouts/grants; chmod 600 /var/lib/whereabouts/grants
grants_sum=$(md5sum </var/lib/whereabouts/grants)
apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold /root/next.deb \
    >/tmp/upgrade.log 2>&1 || { cat /tmp/upgrade.log; fail "upgrade"; }
grep -E -A3 'Unpacking|Setting up|Configuration file' /tmp/upgrade.log | grep -v '^--'
dpkg-query -W -f='${Version}\n' whereabouts | grep -q 'upgradetest1$' || fail "not upgraded"
[ "$(md5sum <$CONF)" = "$conf_sum" ] || fail "the edited configuration was replaced"
[ -f $CONF.dpkg-dist ] || fail "no $CONF.dpkg-dist with the new default"
[ "$(md5sum </var/lib/whereabouts/grants 2>/dev/null)" = "$grants_sum" ] || fail "the grant store did not survive"
echo "kept: the edited $CONF (the new default is $CONF.dpkg-dist) and /var/lib/whereabouts/grants"
[ "$(id -u whereabouts)" = "$uid" ] || fail "the user's uid changed"
new_pid=$(systemctl show -p MainPID --value $UNIT)
echo "running daemon: pid $old_pid before, $new_pid after (try-restart)"
[ "$new_pid" != 0 ] && [ "$new_pid" != "$old_pid" ] || fail "the running daemon was not restarted"
whereabouts locate --timeout 10 || fail "no location after the upgrade"
journalctl -b -u $UNIT --no-pager -o cat | grep -i 'grants' && fail "the daemon complained about the grant store"

rm -f /root/next.deb

step "purge leaves nothing behind"
dpkg -L whereabouts | sort >/tmp/files.txt
apt-get purge -y -q whereabouts >/tmp/purge.log 2>&1 || { cat /tmp/purge.log; fail "purge"; }
systemctl is-active -q $UNIT && fail "$UNIT still runs after the purge"
left=$(while read -r f; do [ -e "$f" ] && [ ! -d "$f" ] && echo "$f"; done </tmp/files.txt
       find / -xdev \( -path /proc -o -path /sys -o -path /tmp -o -path /run \) -prune -o -name '*whereabouts*' -print)
[ -z "$left" ] || fail "left behind: $left"
[ ! -e /etc/whereabouts ] && [ ! -e /var/lib/whereabouts ] || fail "/etc/whereabouts or /var/lib/whereabouts left"
out=$(bus call $GC $MP $MI GetClient 2>&1) && fail "$GC still activatable: $out"
echo "after the purge: $out"
echo "(the whereabouts system user stays, as Debian practice has it: $(getent passwd whereabouts))"

echo; echo PASS | tee /probe.status
systemctl poweroff
PROBE
chmod 755 "$R/probe.sh"
cat >"$R/etc/systemd/system/probe.service" <<'UNIT'
[Unit]
Description=Install test probe
After=multi-user.target dbus.socket
Wants=dbus.socket
[Service]
Type=oneshot
ExecStart=/probe.sh
UNIT
mkdir -p "$R/etc/systemd/system/multi-user.target.wants"
ln -s /etc/systemd/system/probe.service "$R/etc/systemd/system/multi-user.target.wants/probe.service"

phase "systemd-nspawn --boot"
# --register=no and --keep-unit: the host may have no systemd and no system bus of its own.
timeout 180 systemd-nspawn -q -D "$R" --register=no --keep-unit --private-network --boot \
    >"$W/nspawn.log" 2>&1 </dev/null || true
cat "$R/probe.out" 2>/dev/null || { echo "the probe did not run:"; cat "$W/nspawn.log"; }
[ "$(cat "$R/probe.status" 2>/dev/null)" = PASS ] || { echo "install-test: FAIL"; exit 1; }

# Replacing Debian's GeoClue: apt removes geoclue-2.0, and an app depending on it stays installed.
phase "chroot: replacing geoclue-2.0"
printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"
chmod 755 "$R/usr/sbin/policy-rc.d"
unshare --mount --pid --fork --mount-proc="$R/proc" -- bash -c '
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$1/dev/pts"
    exec chroot "$1" /bin/bash -s' _ "$R" <<'CHROOT'
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 PATH=/usr/sbin:/usr/bin:/sbin:/bin
fail() { echo "FAIL: $*"; exit 1; }
state() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | tr -d ' '; }
apt-get install -y -q --no-install-recommends geoclue-2.0 /root/consumer.deb >/tmp/apt.log 2>&1 \
    || { cat /tmp/apt.log; fail "installing geoclue-2.0"; }
echo "installed: geoclue-2.0 $(dpkg-query -W -f='${Version}' geoclue-2.0), geoclue-consumer-test"
apt-get install -y -q /tmp/pkg.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; fail "installing over geoclue-2.0"; }
sed -n '/REMOVED:/,/^[^ ]/p' /tmp/apt.log | head -n 2
grep -A1 'REMOVED:' /tmp/apt.log | grep -qw 'geoclue-2.0' || fail "apt did not remove geoclue-2.0"
[ "$(state whereabouts)" = ii ] || fail "whereabouts: $(state whereabouts)"
case "$(state geoclue-2.0)" in rc|un|"") ;; *) fail "geoclue-2.0: $(state geoclue-2.0)" ;; esac
[ "$(state geoclue-consumer-test)" = ii ] || fail "the app depending on geoclue-2.0 was removed"
[ "$(dpkg -S /usr/share/dbus-1/system-services/org.freedesktop.GeoClue2.service | cut -d: -f1)" = whereabouts ] \
    || fail "the activation file is not ours"
echo "geoclue-2.0 removed ($(state geoclue-2.0)); geoclue-consumer-test (Depends: geoclue-2.0 (>= 2.3.1)) still installed"
echo "chroot: PASS"
CHROOT
phase "done"
echo "install-test: PASS"
