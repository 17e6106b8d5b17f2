#!/usr/bin/python3
"""A flood of CheckAuthorisation calls that polkit's reused answers cannot absorb, as one user can send it.

    polkit_flood.py ADDRESS APP COUNT CONNECTIONS
        Opens CONNECTIONS connections with one client each, then sends COUNT calls in all, spread over them, each
        a Set of DesktopId to APP.nN (N counting up, so that every call is about an app of its own) followed by
        io.github.whereabouts1.Client.CheckAuthorisation, without waiting for the answers. Prints "sent COUNT" once
        every call is written, then "error NAME: MESSAGE" the first time each error name comes back, and
        "answered A failed F" when every call has been answered. Runs until every call is answered or it is killed.
"""

import sys

import dbus
import dbus.bus
import dbus.mainloop.glib
from gi.repository import GLib

sys.dont_write_bytecode = True
from geoclue_names import SERVICE, MANAGER, CLIENT, WHEREABOUTS_CLIENT, PROPERTIES, say  # noqa: E402

TIMEOUT = 300

address, app, count, connections = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
mainloop = dbus.mainloop.glib.DBusGMainLoop()
loop = GLib.MainLoop()
state = {"answered": 0, "failed": 0, "errors": set()}


def finished():
    if state["answered"] + state["failed"] == count:
        say("answered %d failed %d" % (state["answered"], state["failed"]))
        loop.quit()


def answered(_status):
    state["answered"] += 1
    finished()


def failed(error):
    state["failed"] += 1
    name = error.get_dbus_name()
    if name not in state["errors"]:
        state["errors"].add(name)
        say("error %s: %s" % (name, error.get_dbus_message()))
    finished()


clients = []
for _ in range(connections):
    connection = dbus.bus.BusConnection(address, mainloop=mainloop)
    manager = connection.get_object(SERVICE, "/org/freedesktop/GeoClue2/Manager", introspect=False)
    path = manager.CreateClient(dbus_interface=MANAGER, timeout=TIMEOUT)
    client = connection.get_object(SERVICE, path, introspect=False)
    clients.append((connection, client, dbus.Interface(client, PROPERTIES)))

for index in range(count):
    _connection, client, properties = clients[index % connections]
    properties.Set(CLIENT, "DesktopId", dbus.String("%s.n%d" % (app, index), variant_level=1),
                   reply_handler=lambda: None, error_handler=lambda error: None, timeout=TIMEOUT)
    client.CheckAuthorisation(dbus_interface=WHEREABOUTS_CLIENT, reply_handler=answered, error_handler=failed,
                              timeout=TIMEOUT)
# The calls above are queued in each connection; flushing them makes "sent" true.
for connection, _client, _properties in clients:
    connection.flush()
say("sent %d" % count)
loop.run()
