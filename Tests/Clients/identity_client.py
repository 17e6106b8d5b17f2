#!/usr/bin/python3
"""One app's client, doing what the app-identity tests ask, one printed line per step.

    identity_client.py ADDRESS DESKTOP_ID STEP...

DESKTOP_ID "-" leaves DesktopId unset. The client is made first (CreateClient, DesktopId, RequestedAccuracyLevel 8).
Steps, in the order given:
    identity   prints "identity APPIDENTITY hint DESKTOPHINT" (io.github.whereabouts1.Client's properties)
    desktop-id prints "desktop-id VALUE" (GeoClue's DesktopId, as the service keeps it)
    check      prints "status STATUS" (CheckAuthorisation)
    locate     Start, then prints "fix LATITUDE LONGITUDE" at the first LocationUpdated (10 s at most: "no fix")
    accuracy   prints "accuracy ACCURACY" of the fix the last locate printed
    request-when-in-use, request-always
               prints "status STATUS" (RequestAuthorisation of that kind)
    agent      AddAgent("gnome-shell"): prints "agent registered"
A refused call prints "refused NAME: MESSAGE" and the script goes on with the next step; it exits 0.

With IDENTITY_CLIENT_ORPHAN=1 the process that connected forks and exits at once, leaving the connection to its
child, which makes the calls once its parent is gone and reaped: the bus then names a process that no longer
exists.

With IDENTITY_CLIENT_UNDUMPABLE=1 the process makes itself one that may not dump core (as a setuid program is)
before it connects, and prints "undumpable" once its /proc files are root's, as the kernel makes them then.
"""

import ctypes
import os
import sys

import dbus
import dbus.bus
import dbus.mainloop.glib
from gi.repository import GLib

sys.dont_write_bytecode = True
from geoclue_names import (  # noqa: E402
    SERVICE, MANAGER_PATH, MANAGER, CLIENT, LOCATION, PROPERTIES, WHEREABOUTS_CLIENT, say)

address, desktop_id, steps = sys.argv[1], sys.argv[2], sys.argv[3:]
if os.environ.get("IDENTITY_CLIENT_UNDUMPABLE") == "1":
    PR_SET_DUMPABLE = 4
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    if os.stat("/proc/self/status").st_uid == 0:
        say("undumpable")
loop = GLib.MainLoop()
connection = dbus.bus.BusConnection(address, mainloop=dbus.mainloop.glib.DBusGMainLoop())

if os.environ.get("IDENTITY_CLIENT_ORPHAN") == "1":
    parent = os.getpid()
    if os.fork() != 0:
        os._exit(0)
    # Until it is reaped, a zombie keeps its /proc entry, cgroup and all.
    for _ in range(1000):
        if not os.path.exists("/proc/%d" % parent):
            break
        GLib.usleep(10000)
    else:
        say("the parent %d was not reaped" % parent)


def refused(error):
    say("refused %s: %s" % (error.get_dbus_name(), error.get_dbus_message()))


def call(path, interface, member, *arguments):
    return connection.get_object(SERVICE, path).get_dbus_method(member, interface)(*arguments)


try:
    client = call(MANAGER_PATH, MANAGER, "CreateClient")
    if desktop_id != "-":
        call(client, PROPERTIES, "Set", CLIENT, "DesktopId", dbus.String(desktop_id))
    call(client, PROPERTIES, "Set", CLIENT, "RequestedAccuracyLevel", dbus.UInt32(8))
except dbus.exceptions.DBusException as error:
    refused(error)
    sys.exit(0)


located = {}


def locate():
    found = {}

    def on_message(_connection, message):
        if message.get_type() == 4 and message.get_interface() == CLIENT and message.get_member() == "LocationUpdated":
            location = message.get_args_list()[1]
            found["fix"] = (call(location, PROPERTIES, "Get", LOCATION, "Latitude"),
                            call(location, PROPERTIES, "Get", LOCATION, "Longitude"))
            located["accuracy"] = call(location, PROPERTIES, "Get", LOCATION, "Accuracy")
            loop.quit()

    connection.add_message_filter(on_message)
    GLib.timeout_add(10000, loop.quit)
    try:
        call(client, CLIENT, "Start")
    except dbus.exceptions.DBusException as error:
        connection.remove_message_filter(on_message)
        refused(error)
        return
    loop.run()
    connection.remove_message_filter(on_message)
    say("fix %.6f %.6f" % found["fix"] if "fix" in found else "no fix")


for step in steps:
    try:
        if step == "identity":
            properties = call(client, PROPERTIES, "GetAll", WHEREABOUTS_CLIENT)
            say("identity %s hint %s" % (properties["AppIdentity"] or "-", properties["DesktopHint"] or "-"))
        elif step == "desktop-id":
            say("desktop-id %s" % call(client, PROPERTIES, "Get", CLIENT, "DesktopId"))
        elif step == "check":
            say("status %s" % call(client, WHEREABOUTS_CLIENT, "CheckAuthorisation"))
        elif step == "locate":
            locate()
        elif step == "accuracy":
            say("accuracy %.1f" % located["accuracy"] if "accuracy" in located else "no fix")
        elif step in ("request-when-in-use", "request-always"):
            kind = step[len("request-"):]
            say("status %s" % call(client, WHEREABOUTS_CLIENT, "RequestAuthorisation", kind, dbus.Dictionary({}, signature="sv")))
        elif step == "agent":
            call(MANAGER_PATH, MANAGER, "AddAgent", "gnome-shell")
            say("agent registered")
        else:
            say("unknown step %s" % step)
    except dbus.exceptions.DBusException as error:
        refused(error)
