#!/usr/bin/python3
"""One GeoClue2 client's life, and a GeoClue agent, for counting the bus messages a client costs.

    client_life.py ADDRESS APP life
        On a bus connection of its own, one call at a time as libgeoclue makes them: CreateClient, Set DesktopId
        to APP, Set RequestedAccuracyLevel to 8, Start, then on the first LocationUpdated GetAll of the new
        Location, Stop, DeleteClient, and disconnects. It adds no match rule: the signals it needs are sent to
        its connection. Prints "name UNIQUE-NAME" when connected and "located LATITUDE LONGITUDE" at the end;
        exits 0 when the life went through, 1 with the error otherwise.

    client_life.py ADDRESS APP life-extended
        The same life, reading io.github.whereabouts1.Client's AuthorisationStatus before Start, as a client of
        Whereabouts' own interfaces does.

    client_life.py ADDRESS AGENT-ID agent
        Exports org.freedesktop.GeoClue2.Agent at /org/freedesktop/GeoClue2/Agent (MaxAccuracyLevel 8,
        AuthorizeApp allowing every app at the level it asks), registers it with AddAgent as AGENT-ID, prints
        "registered" and serves until killed. GeoClue answers the clients of a user only once that user has one.
"""

import sys

import dbus
import dbus.bus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

sys.dont_write_bytecode = True
from geoclue_names import SERVICE, MANAGER_PATH, MANAGER, CLIENT, LOCATION, AGENT, WHEREABOUTS_CLIENT, PROPERTIES, say  # noqa: E402

TIMEOUT = 30

address, name, mode = sys.argv[1], sys.argv[2], sys.argv[3]
mainloop = dbus.mainloop.glib.DBusGMainLoop()
loop = GLib.MainLoop()


def life(app, extended):
    connection = dbus.bus.BusConnection(address, mainloop=mainloop)
    say("name %s" % connection.get_unique_name())
    manager = connection.get_object(SERVICE, MANAGER_PATH, introspect=False)
    state = {"status": 1, "client": None, "path": None, "located": False}

    def failed(error):
        say("failed: %s: %s" % (error.get_dbus_name(), error.get_dbus_message()))
        loop.quit()

    def created(path):
        state["path"] = path
        state["client"] = connection.get_object(SERVICE, path, introspect=False)
        dbus.Interface(state["client"], PROPERTIES).Set(
            CLIENT, "DesktopId", dbus.String(app, variant_level=1), reply_handler=desktop_id_set,
            error_handler=failed, timeout=TIMEOUT)

    def desktop_id_set():
        dbus.Interface(state["client"], PROPERTIES).Set(
            CLIENT, "RequestedAccuracyLevel", dbus.UInt32(8, variant_level=1), reply_handler=level_set,
            error_handler=failed, timeout=TIMEOUT)

    def level_set():
        if extended:
            dbus.Interface(state["client"], PROPERTIES).Get(
                WHEREABOUTS_CLIENT, "AuthorisationStatus", reply_handler=start, error_handler=failed, timeout=TIMEOUT)
        else:
            start()

    def start(status=None):
        if status is not None:
            say("status %s" % status)
        state["client"].Start(dbus_interface=CLIENT, reply_handler=lambda: None, error_handler=failed,
                              timeout=TIMEOUT)

    def filter(connection, message):
        if (message.get_type() == 4 and message.get_interface() == CLIENT
                and message.get_member() == "LocationUpdated" and message.get_path() == state["path"]
                and not state["located"]):
            state["located"] = True
            location = connection.get_object(SERVICE, message.get_args_list()[1], introspect=False)
            dbus.Interface(location, PROPERTIES).GetAll(LOCATION, reply_handler=read, error_handler=failed,
                                                         timeout=TIMEOUT)
        return None

    def read(properties):
        say("located %f %f" % (properties["Latitude"], properties["Longitude"]))
        state["client"].Stop(dbus_interface=CLIENT, reply_handler=stopped, error_handler=failed, timeout=TIMEOUT)

    def stopped():
        manager.DeleteClient(dbus.ObjectPath(state["path"]), dbus_interface=MANAGER, reply_handler=deleted,
                             error_handler=failed, timeout=TIMEOUT)

    def deleted():
        state["status"] = 0
        loop.quit()

    connection.add_message_filter(filter)
    manager.CreateClient(dbus_interface=MANAGER, reply_handler=created, error_handler=failed, timeout=TIMEOUT)
    GLib.timeout_add_seconds(TIMEOUT, loop.quit)
    loop.run()
    connection.close()
    return state["status"]


class Agent(dbus.service.Object):
    """A GeoClue agent allowing every app."""

    @dbus.service.method(AGENT, in_signature="su", out_signature="bu")
    def AuthorizeApp(self, desktop_id, level):
        return True, level

    @dbus.service.method(PROPERTIES, in_signature="ss", out_signature="v")
    def Get(self, interface, prop):
        if interface == AGENT and prop == "MaxAccuracyLevel":
            return dbus.UInt32(8)
        raise dbus.exceptions.DBusException("No such property", name="org.freedesktop.DBus.Error.InvalidArgs")

    @dbus.service.method(PROPERTIES, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {"MaxAccuracyLevel": dbus.UInt32(8)} if interface == AGENT else {}


def agent(agent_id):
    connection = dbus.bus.BusConnection(address, mainloop=mainloop)
    served = Agent(connection, "/org/freedesktop/GeoClue2/Agent")
    manager = connection.get_object(SERVICE, MANAGER_PATH, introspect=False)
    # GeoClue reads the agent's properties before it answers AddAgent: the loop must serve them meanwhile.
    manager.AddAgent(agent_id, dbus_interface=MANAGER, reply_handler=lambda: say("registered"),
                     error_handler=lambda error: sys.exit("AddAgent failed: %s" % error), timeout=TIMEOUT)
    loop.run()
    del served
    return 0


if mode in ("life", "life-extended"):
    sys.exit(life(name, mode == "life-extended"))
elif mode == "agent":
    sys.exit(agent(name))
else:
    sys.exit("unknown mode " + mode)
