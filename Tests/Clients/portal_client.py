#!/usr/bin/python3
"""An app asking xdg-desktop-portal's Location portal for a location, as a sandboxed app does.

    portal_client.py ADDRESS first TIMEOUT [ACCURACY]
        On the session bus at ADDRESS: org.freedesktop.portal.Location's CreateSession (with the portal's
        ACCURACY, 0 none to 5 exact; the portal's default, exact, when left out), then Start, and waits up to
        TIMEOUT seconds for the first LocationUpdated. Prints "portal version N" first, "response N" when the
        Start request's Response arrives, then "location LATITUDE LONGITUDE ACCURACY" for the first
        LocationUpdated and exits 0. Prints "refused N" and exits 2 when the Response is not 0 (the portal denied
        or failed), "refused NAME: MESSAGE" and exits 2 when a call fails, and "no location in TIMEOUT s" and
        exits 1 when nothing came in time. The session is closed before exiting.

    portal_client.py ADDRESS hold TIMEOUT [ACCURACY]
        The same, but after the first location it keeps the session, printing a "location" line for each
        LocationUpdated, until SIGTERM.

The portal tells apps apart by the process on the connection (the /.flatpak-info at its root): run it inside the
sandbox it plays, such as bwrap with that file bound in.
"""

import signal
import sys

import dbus
import dbus.bus
import dbus.mainloop.glib
from gi.repository import GLib

sys.dont_write_bytecode = True
from geoclue_names import PROPERTIES, say  # noqa: E402

PORTAL = "org.freedesktop.portal.Desktop"
PORTAL_PATH = "/org/freedesktop/portal/desktop"
LOCATION_PORTAL = "org.freedesktop.portal.Location"
REQUEST = "org.freedesktop.portal.Request"
SESSION = "org.freedesktop.portal.Session"
TOKEN = "whereabouts"

address, mode, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
accuracy = int(sys.argv[4]) if len(sys.argv) > 4 else None
loop = GLib.MainLoop()
connection = dbus.bus.BusConnection(address, mainloop=dbus.mainloop.glib.DBusGMainLoop())
state = {"status": 1, "session": None, "located": False}


def finish(status, text):
    say(text)
    state["status"] = status
    loop.quit()


def refused(error):
    finish(2, "refused %s: %s" % (error.get_dbus_name(), error.get_dbus_message()))


def on_message(_connection, message):
    # The portal sends LocationUpdated to the app's connection alone; the Request's Response goes to every
    # connection that asked for it, hence the match rule in main.
    if message.get_type() != 4:
        return
    if message.get_interface() == REQUEST and message.get_member() == "Response":
        response = int(message.get_args_list()[0])
        say("response %d" % response)
        if response != 0:
            finish(2, "refused %d" % response)
    elif message.get_interface() == LOCATION_PORTAL and message.get_member() == "LocationUpdated":
        session, location = message.get_args_list()
        if session != state["session"]:
            return
        text = "location %r %r %r" % (float(location["Latitude"]), float(location["Longitude"]),
                                      float(location["Accuracy"]))
        state["located"] = True
        if mode == "first":
            finish(0, text)
        else:
            state["status"] = 0
            say(text)


def expired():
    if not state["located"]:
        finish(1, "no location in %g s" % timeout)
    return False


def main():
    connection.add_message_filter(on_message)
    connection.add_match_string("type='signal',interface='%s',member='Response'" % REQUEST)
    portal = connection.get_object(PORTAL, PORTAL_PATH, introspect=False)
    options = {"session_handle_token": dbus.String(TOKEN)}
    if accuracy is not None:
        options["accuracy"] = dbus.UInt32(accuracy)
    try:
        version = dbus.Interface(portal, PROPERTIES).Get(LOCATION_PORTAL, "version", timeout=30)
        say("portal version %d" % int(version))
        state["session"] = portal.CreateSession(dbus.Dictionary(options, signature="sv"),
                                                dbus_interface=LOCATION_PORTAL, timeout=30)
        portal.Start(state["session"], "", dbus.Dictionary({"handle_token": dbus.String(TOKEN)}, signature="sv"),
                     dbus_interface=LOCATION_PORTAL, timeout=30)
    except dbus.exceptions.DBusException as error:
        refused(error)
        return state["status"]
    GLib.timeout_add(int(timeout * 1000), expired)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    loop.run()
    try:
        session = connection.get_object(PORTAL, state["session"], introspect=False)
        session.Close(dbus_interface=SESSION, timeout=10)
    except dbus.exceptions.DBusException:
        pass
    return state["status"]


sys.exit(main())
