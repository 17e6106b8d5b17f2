#!/bin/bash
# Usage: man-check.sh DEB   (`make deb-lint` runs it)
#
# Holds the packaged man pages against the packaged binaries, so that they cannot drift apart: every command of
# `whereabouts --help` has a `.B whereabouts COMMAND` line in whereabouts(1) and every such line is a command
# the CLI knows; every option either program's --help names is in its man page; every group and key the
# configuration parser knows is in whereabouts.conf(5) and in the packaged configuration file. Run from the
# top of the source tree.
set -euo pipefail
DEB=$(readlink -f "$1")
X=$(mktemp -d "${TMPDIR:-/tmp}/whereabouts-man-check.XXXXXX")
trap 'rm -rf "$X"' EXIT
dpkg-deb -x "$DEB" "$X"
failures=0
fail() { echo "man-check: $*" >&2; failures=$((failures + 1)); }
# The text of a man page with roff's escaped hyphens made plain.
page() { zcat "$X/usr/share/man/$1" | sed 's/\\-/-/g'; }

cli_help=$("$X/usr/bin/whereabouts" --help)
daemon_help=$("$X/usr/libexec/whereaboutsd" --help)
man1=$(page man1/whereabouts.1.gz)
man8=$(page man8/whereaboutsd.8.gz)
man5=$(page man5/whereabouts.conf.5.gz)

commands=$(sed -n 's/^ *\(Usage: \)\{0,1\}whereabouts \([a-z][a-z-]*\).*/\2/p' <<<"$cli_help" | sort -u)
documented=$(sed -n 's/^\.B whereabouts \([a-z][a-z-]*\).*/\1/p' <<<"$man1" | sort -u)
for command in $commands; do grep -qx "$command" <<<"$documented" || fail "whereabouts.1 lacks the command '$command'"; done
for command in $documented; do grep -qx "$command" <<<"$commands" || fail "whereabouts.1 has '$command', which whereabouts --help does not"; done

for option in $(grep -o -- '--[a-z][a-z-]*' <<<"$cli_help" | sort -u); do
    grep -qF -- "$option" <<<"$man1" || fail "whereabouts.1 lacks $option"
done
for option in $(grep -o -- '--[a-z][a-z-]*' <<<"$daemon_help" | sort -u); do
    grep -qF -- "$option" <<<"$man8" || fail "whereaboutsd.8 lacks $option"
done

# The groups and keys of the configuration file, as the parser checks them (`case "GROUP":` followed by
# `checkKeys([...])`, on one line or several): each must be in whereabouts.conf(5) and in the packaged configuration
# file.
conf="$X/etc/whereabouts/whereabouts.conf"
parser=Sources/WhereaboutsCore/Configuration/ConfigurationParsing.swift
groups=$(awk '/^ *case "[a-z0-9-]+":$/ { gsub(/[ ":]|case/, ""); group = $0; next }
              group != "" && /checkKeys\(\[/ { keys = "" }
              group != "" && keys != "-" { keys = keys $0
                                           if (keys ~ /\]\)/) { sub(/.*checkKeys\(\[/, "", keys); sub(/\]\).*/, "", keys)
                                                                gsub(/[ "]/, "", keys); sub(/,$/, "", keys)
                                                                print group ":" keys; group = ""; keys = "-" } }
              group == "" { keys = "-" }' "$parser")
[ -n "$groups" ] || fail "no configuration groups found in $parser"
for entry in $groups; do
    group=${entry%%:*}
    grep -qF "[$group]" <<<"$man5" || fail "whereabouts.conf.5 lacks [$group]"
    grep -q "^#\{0,1\}\[$group\]" "$conf" || fail "the packaged whereabouts.conf lacks [$group]"
    IFS=, read -ra keys <<<"${entry#*:}"
    for key in "${keys[@]}"; do
        grep -qF "$key=" <<<"$man5" || fail "whereabouts.conf.5 lacks $key= of [$group]"
        grep -q "^#\{0,1\}$key=" "$conf" || fail "the packaged whereabouts.conf lacks $key= of [$group]"
    done
done
# The packaged configuration must be one the daemon accepts: checked by the install test, which starts the
# daemon on it.

[ $failures = 0 ] || { echo "man-check: FAIL ($failures)"; exit 1; }
echo "man-check: the man pages cover $(wc -w <<<"$commands") commands, every option of both programs and $(wc -w <<<"$groups") configuration groups"
