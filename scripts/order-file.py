#!/usr/bin/env python3
"""Writes whereaboutsd's symbol ordering file from three callgrind dumps of one run (scripts/order-file.sh).

usage: order-file.py EXECUTABLE STARTUP_DUMP FIRST_CLIENT_DUMP CLIENTS_DUMP > ORDER_FILE

The functions the clients ran come first, those run most first, then those only the first client ran, then those
only the start ran; each function of EXECUTABLE once. Functions of the libraries it links dynamically are left out.
"""
import sys
from collections import Counter


def executed(path, executable):
    """The functions of `executable` that ran in one dump, with the instructions each ran itself."""
    costs = Counter()
    current_object = function_object = function = None
    after_calls = False
    with open(path, errors="replace") as dump:
        for line in dump:
            if line.startswith("ob="):
                current_object = line[3:].rstrip("\n")
            elif line.startswith("fn="):
                function, function_object, after_calls = line[3:].rstrip("\n"), current_object, False
            elif line.startswith("calls="):
                after_calls = True  # the next cost line is the callee's, not this function's
            elif line[:1].isdigit() or line[:1] in "+-*":
                if after_calls:
                    after_calls = False
                    continue
                fields = line.split()
                if function and function_object == executable and len(fields) >= 2:
                    costs[function] += int(fields[1])
    return [name for name, cost in costs.most_common() if cost > 0 and not name.startswith("0x")]


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__.strip())
    executable, *dumps = sys.argv[1:]
    seen, order = set(), []
    for dump in reversed(dumps):  # the clients, the first client, the start
        for name in executed(dump, executable):
            if name not in seen:
                seen.add(name)
                order.append(name)
    if not order:
        sys.exit(f"order-file.py: no function of {executable} in the dumps")
    sys.stdout.write("".join(name + "\n" for name in order))


main()
