#!/usr/bin/python3
"""One GeoClue2 app on a bus connection of its own, for the network-positioning figures (wbnet) and the modem
path's (wbbench --modem).

    location_client.py ADDRESS APP first TIMEOUT
        CreateClient, DesktopId APP, RequestedAccuracyLevel 8 (exact), then Start, and waits up to TIMEOUT
        seconds for the first LocationUpdated. Prints "fix MS" (milliseconds from just before Start was sent
        to the signal's arrival) and exits 0, or prints "no fix in TIMEOUT s" and exits 1; a refused call
        prints "refused NAME: MESSAGE" and exits 2. The client is stopped before exiting.

    location_client.py ADDRESS APP hold
        The same client, started, kept until SIGTERM; prints "fix N" for each LocationUpdated, "started"
        once Start has returned, and "refused NAME: MESSAGE" (then exits 2) if a call fails.

    location_client.py ADDRESS APP modem MODEM
        The "hold" client that also watches ModemManager's modem at object path MODEM on the same connection:
        prints "modem T E" for each PropertiesChanged of its org.freedesktop.ModemManager1.Modem.Location that
        carries Location, E the time field of the GGA among its NMEA sentences ("-" without one), which names the
        receiver's epoch, and "fix T" for each LocationUpdated, T the signal's arrival on the monotonic clock in
        nanoseconds; "started" and "refused ..." as "hold" does.

Run it as the user whose app it plays (e.g. through setpriv as nobody): the service decides by that user.
"""

import signal
import sys
import time

import dbus
import dbus.bus
import dbus.mainloop.glib
from gi.repository import GLib

sys.dont_write_bytecode = True
from geoclue_names import SERVICE, MANAGER, CLIENT, PROPERTIES, say  # noqa: E402

EXACT = 8
MODEM_MANAGER = "org.freedesktop.ModemManager1"
MODEM_LOCATION = "org.freedesktop.ModemManager1.Modem.Location"
# The gps-nmea bit of ModemManager's MMModemLocationSource, its key in the Location dictionary.
GPS_NMEA = 4

address, app, mode = sys.argv[1], sys.argv[2], sys.argv[3]
loop = GLib.MainLoop()
connection = dbus.bus.BusConnection(address, mainloop=dbus.mainloop.glib.DBusGMainLoop())
state = {"sent": None, "fixes": 0, "status": 0}


def refused(error):
    say("refused %s: %s" % (error.get_dbus_name(), error.get_dbus_message()))
    state["status"] = 2
    loop.quit()


def epoch_time(location):
    """The time field of the GGA among the NMEA sentences of ModemManager's Location value, or "-"."""
    for sentence in str(location.get(GPS_NMEA, "")).split():
        fields = sentence.split(",")
        if fields[0].endswith("GGA") and len(fields) > 1 and fields[1]:
            return fields[1]
    return "-"


def on_message(_connection, message):
    arrived = time.monotonic_ns()
    if message.get_type() != 4:
        return
    if mode == "modem" and message.get_path() == sys.argv[4] and message.get_member() == "PropertiesChanged":
        arguments = message.get_args_list()
        if arguments[0] == MODEM_LOCATION and "Location" in arguments[1]:
            say("modem %d %s" % (arrived, epoch_time(arguments[1]["Location"])))
    # The service sends its signals to the client's connection alone, so no match rule is needed.
    if message.get_interface() == CLIENT and message.get_member() == "LocationUpdated":
        state["fixes"] += 1
        if mode == "first" and state["fixes"] == 1:
            say("fix %.3f" % ((arrived - state["sent"]) / 1e6))
            loop.quit()
        elif mode == "hold":
            say("fix %d" % state["fixes"])
        elif mode == "modem":
            say("fix %d" % arrived)


def main():
    connection.add_message_filter(on_message)
    if mode == "modem":
        connection.add_match_string(
            "type='signal',sender='%s',path='%s',interface='%s',member='PropertiesChanged'"
            % (MODEM_MANAGER, sys.argv[4], PROPERTIES))
    manager = connection.get_object(SERVICE, "/org/freedesktop/GeoClue2/Manager", introspect=False)
    try:
        path = manager.CreateClient(dbus_interface=MANAGER, timeout=60)
        client = connection.get_object(SERVICE, path, introspect=False)
        properties = dbus.Interface(client, PROPERTIES)
        properties.Set(CLIENT, "DesktopId", dbus.String(app, variant_level=1), timeout=60)
        properties.Set(CLIENT, "RequestedAccuracyLevel", dbus.UInt32(EXACT, variant_level=1), timeout=60)
    except dbus.exceptions.DBusException as error:
        refused(error)
        return state["status"]
    state["sent"] = time.monotonic_ns()
    client.Start(dbus_interface=CLIENT, timeout=60, error_handler=refused,
                 reply_handler=lambda: say("started") if mode != "first" else None)
    if mode == "first":
        timeout = float(sys.argv[4])

        def expired():
            say("no fix in %g s" % timeout)
            state["status"] = 1
            loop.quit()
            return False

        GLib.timeout_add(int(timeout * 1000), expired)
    else:
        GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    loop.run()
    if state["status"] != 2:
        try:
            client.Stop(dbus_interface=CLIENT, timeout=10)
        except dbus.exceptions.DBusException:
            pass
    return state["status"]


sys.exit(main())
