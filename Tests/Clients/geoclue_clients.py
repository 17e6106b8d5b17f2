#!/usr/bin/python3
"""GeoClue2 clients for the load and authorisation tests, each on a bus connection of its own.

    geoclue_clients.py ADDRESS APP burst COUNT TIMEOUT
        Opens COUNT connections, then starts one client on each at once (CreateClient, DesktopId,
        RequestedAccuracyLevel, Start) and waits up to TIMEOUT seconds for each to get LocationUpdated.
        An APP holding "{}" gives each client an app of its own, "{}" replaced by the client's number.
        Prints "served N of COUNT" and one line per failure; exits 0 when every client was served.

    geoclue_clients.py ADDRESS APP steps COUNT FLAGDIR
        For step 1 to COUNT: waits until FLAGDIR/step-N exists, then starts one client on a new connection
        and prints "step N: served" or "step N: refused NAME: MESSAGE". Exits after the last step.
"""

import os
import sys

import dbus
import dbus.bus
import dbus.mainloop.glib
from gi.repository import GLib

sys.dont_write_bytecode = True
from geoclue_names import MANAGER, CLIENT, PROPERTIES, say  # noqa: E402


address, app, mode = sys.argv[1], sys.argv[2], sys.argv[3]
loop = GLib.MainLoop()
mainloop = dbus.mainloop.glib.DBusGMainLoop()


class Client:
    """One app: a connection, a client object on it, and whether a location reached it."""

    def __init__(self, index, done):
        self.index = index
        self.done = done
        self.finished = False
        self.connection = dbus.bus.BusConnection(address, mainloop=mainloop)
        # The daemon sends its signals to the client's connection alone, so no match rule is needed.
        self.connection.add_message_filter(self.filter)

    def filter(self, connection, message):
        if message.get_type() == 4 and message.get_interface() == CLIENT and message.get_member() == "LocationUpdated":
            self.finish(None)
        return None

    def start(self):
        manager = self.connection.get_object("org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
                                             introspect=False)
        manager.CreateClient(dbus_interface=MANAGER, reply_handler=self.created, error_handler=self.failed,
                             timeout=120)

    def created(self, path):
        client = self.connection.get_object("org.freedesktop.GeoClue2", path, introspect=False)
        properties = dbus.Interface(client, PROPERTIES)
        properties.Set(CLIENT, "DesktopId", dbus.String(app.replace("{}", str(self.index)), variant_level=1), reply_handler=lambda: None,
                       error_handler=self.failed, timeout=120)
        properties.Set(CLIENT, "RequestedAccuracyLevel", dbus.UInt32(8, variant_level=1), reply_handler=lambda: None,
                       error_handler=self.failed, timeout=120)
        client.Start(dbus_interface=CLIENT, reply_handler=lambda: None, error_handler=self.failed, timeout=120)

    def failed(self, error):
        self.finish("%s: %s" % (error.get_dbus_name(), error.get_dbus_message()))

    def finish(self, error):
        if self.finished:
            return
        self.finished = True
        self.done(self, error)


def burst(count, timeout):
    served = []
    failures = []
    remaining = [count]

    def done(client, error):
        (served if error is None else failures).append((client.index, error))
        remaining[0] -= 1
        if remaining[0] == 0:
            loop.quit()

    clients = [Client(index, done) for index in range(count)]
    for client in clients:
        client.start()
    GLib.timeout_add_seconds(timeout, loop.quit)
    loop.run()
    say("served %d of %d" % (len(served), count))
    for index, error in failures:
        say("client %d: %s" % (index, error))
    unanswered = count - len(served) - len(failures)
    if unanswered:
        say("%d clients got nothing within %d s" % (unanswered, timeout))
    return 0 if len(served) == count else 1


def steps(count, flags):
    state = {"step": 1, "waiting": False}
    clients = []

    def done(client, error):
        say("step %d: %s" % (client.index, "served" if error is None else "refused " + error))
        state["waiting"] = False
        state["step"] += 1
        if state["step"] > count:
            loop.quit()

    def poll():
        if not state["waiting"] and os.path.exists(os.path.join(flags, "step-%d" % state["step"])):
            state["waiting"] = True
            client = Client(state["step"], done)
            clients.append(client)
            client.start()
        return True

    GLib.timeout_add(20, poll)
    loop.run()
    return 0


if mode == "burst":
    sys.exit(burst(int(sys.argv[4]), int(sys.argv[5])))
elif mode == "steps":
    sys.exit(steps(int(sys.argv[4]), sys.argv[5]))
else:
    sys.exit("unknown mode " + mode)
