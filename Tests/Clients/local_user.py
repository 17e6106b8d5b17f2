#!/usr/bin/python3
"""What one local user can make the daemon do, for the limits tests; run as an unprivileged user.

    local_user.py ADDRESS APP hold COUNT
        On one connection: makes COUNT clients (CreateClient, at most 64 calls in flight), starts the first
        for APP at exact level and waits for its LocationUpdated. Prints "client PATH", "location PATH",
        "own-children N" (the children of /org/freedesktop/GeoClue2/Client its own Introspect lists) and "ready",
        then holds everything until killed.

    local_user.py ADDRESS APP requests CONNECTIONS PER-CONNECTION
        On each of CONNECTIONS connections: one client for APP, then PER-CONNECTION RequestLocation calls
        (timeout 300 s) sent at once. Once no answer came for 3 s prints "waiting N", "refused-connection N",
        "refused-user N", "other N" (with the first such error) and "ready", then holds the waiting calls until
        killed.

    local_user.py ADDRESS APP active-apps
        Starts a client for APP, waits for its LocationUpdated, prints "active-apps A,B,..." (ActiveApps as this
        user reads it; empty after the word when none) and "ready", then holds the client until killed.

    local_user.py ADDRESS APP regions COUNT PER-APP ID-BYTES
        Adds COUNT regions (ids of ID-BYTES bytes) through the clients of apps named APP.0, APP.1, ..., PER-APP to
        each app, each client on one connection, until one is refused with anything but LimitsExceeded. Prints
        "added N", "refused-limits N" with the first LimitsExceeded's message, "other N" with the first other
        error, and exits; the regions stay.

    local_user.py ADDRESS APP list
        Prints "listed ID,ID,..." (ListRegions of APP, sorted) and exits.

    local_user.py ADDRESS APP remove ID
        RemoveRegion(ID) for APP; prints "removed" and exits.
"""

import sys
import time

import dbus
import dbus.bus
import dbus.mainloop.glib
from gi.repository import GLib

sys.dont_write_bytecode = True
from geoclue_names import SERVICE, MANAGER_PATH, MANAGER, CLIENT, WHEREABOUTS_CLIENT, WHEREABOUTS_MANAGER, PROPERTIES, INTROSPECTABLE, say  # noqa: E402


address, app, mode = sys.argv[1], sys.argv[2], sys.argv[3]
loop = GLib.MainLoop()
mainloop = dbus.mainloop.glib.DBusGMainLoop()


def connect():
    return dbus.bus.BusConnection(address, mainloop=mainloop)


def started_client(connection, path):
    """Sets APP and exact level on the client at path and starts it; returns once LocationUpdated arrived."""
    located = []

    def on_message(_connection, message):
        if message.get_type() == 4 and message.get_member() == "LocationUpdated" and message.get_path() == path:
            located.append(message.get_args_list()[1])
            loop.quit()
        return None

    connection.add_message_filter(on_message)
    client = connection.get_object(SERVICE, path, introspect=False)
    properties = dbus.Interface(client, PROPERTIES)
    properties.Set(CLIENT, "DesktopId", dbus.String(app, variant_level=1))
    properties.Set(CLIENT, "RequestedAccuracyLevel", dbus.UInt32(8, variant_level=1))
    client.Start(dbus_interface=CLIENT)
    GLib.timeout_add_seconds(30, loop.quit)
    loop.run()
    if not located:
        sys.exit("no LocationUpdated for %s" % path)
    return str(located[0])


def hold(count):
    connection = connect()
    manager = connection.get_object(SERVICE, MANAGER_PATH, introspect=False)
    paths = []
    state = {"sent": 0, "answered": 0}

    def created(path):
        paths.append(str(path))
        answered()

    def failed(error):
        say("refused %s: %s" % (error.get_dbus_name(), error.get_dbus_message()))
        answered()

    def answered():
        state["answered"] += 1
        if state["answered"] == count:
            loop.quit()
        else:
            send()

    def send():
        while state["sent"] < count and state["sent"] - state["answered"] < 64:
            state["sent"] += 1
            manager.CreateClient(dbus_interface=MANAGER, reply_handler=created, error_handler=failed, timeout=120)

    send()
    loop.run()
    paths.sort(key=lambda path: int(path.rsplit("/", 1)[1]))
    say("client %s" % paths[0])
    say("location %s" % started_client(connection, paths[0]))
    node = connection.get_object(SERVICE, "/org/freedesktop/GeoClue2/Client", introspect=False)
    xml = node.Introspect(dbus_interface=INTROSPECTABLE)
    say("own-children %d" % xml.count("<node name="))
    say("ready")
    GLib.MainLoop().run()


def requests(connections, per_connection):
    counts = {"waiting": 0, "refused-connection": 0, "refused-user": 0, "other": 0}
    first_other = []
    last_answer = [time.monotonic()]
    holders = []

    def refused(error):
        last_answer[0] = time.monotonic()
        counts["waiting"] -= 1
        message = error.get_dbus_message()
        if error.get_dbus_name() == "org.freedesktop.DBus.Error.LimitsExceeded" and "one connection" in message:
            counts["refused-connection"] += 1
        elif error.get_dbus_name() == "org.freedesktop.DBus.Error.LimitsExceeded" and "one user" in message:
            counts["refused-user"] += 1
        else:
            counts["other"] += 1
            if not first_other:
                first_other.append("%s: %s" % (error.get_dbus_name(), message))

    def located(_path):
        last_answer[0] = time.monotonic()
        counts["waiting"] -= 1
        counts["other"] += 1
        if not first_other:
            first_other.append("answered with a location")

    for _ in range(connections):
        connection = connect()
        holders.append(connection)
        manager = connection.get_object(SERVICE, MANAGER_PATH, introspect=False)
        path = manager.CreateClient(dbus_interface=MANAGER)
        client = connection.get_object(SERVICE, path, introspect=False)
        dbus.Interface(client, PROPERTIES).Set(CLIENT, "DesktopId", dbus.String(app, variant_level=1))
        for _ in range(per_connection):
            counts["waiting"] += 1
            client.RequestLocation(
                dbus.Dictionary({"timeout": dbus.UInt32(300000)}, signature="sv"), dbus_interface=WHEREABOUTS_CLIENT,
                reply_handler=located, error_handler=refused, timeout=600)

    def settled():
        if time.monotonic() - last_answer[0] < 3:
            return True
        loop.quit()
        return False

    GLib.timeout_add(200, settled)
    loop.run()
    for key in ("waiting", "refused-connection", "refused-user", "other"):
        say("%s %d" % (key, counts[key]))
    if first_other:
        say("first-other %s" % first_other[0])
    say("ready")
    GLib.MainLoop().run()


def active_apps():
    connection = connect()
    manager = connection.get_object(SERVICE, MANAGER_PATH, introspect=False)
    path = manager.CreateClient(dbus_interface=MANAGER)
    started_client(connection, str(path))
    apps = dbus.Interface(manager, PROPERTIES).Get(WHEREABOUTS_MANAGER, "ActiveApps")
    say("active-apps %s" % ",".join(str(each) for each in apps))
    say("ready")
    GLib.MainLoop().run()


def app_client(connection, desktop_id):
    manager = connection.get_object(SERVICE, MANAGER_PATH, introspect=False)
    path = manager.CreateClient(dbus_interface=MANAGER)
    client = connection.get_object(SERVICE, path, introspect=False)
    dbus.Interface(client, PROPERTIES).Set(CLIENT, "DesktopId", dbus.String(desktop_id, variant_level=1))
    return client


def regions(count, per_app, id_bytes):
    connection = connect()
    added, limits, other = 0, [], []
    clients = {}
    for index in range(count):
        name = "%s.%d" % (app, index // per_app)
        if name not in clients:
            clients[name] = app_client(connection, name)
        region_id = ("%d-" % index).ljust(id_bytes, "x")
        try:
            clients[name].AddRegion(region_id, 48.8584 + (index % 100) * 0.001, 2.2945, 200.0,
                                    dbus.Dictionary({}, signature="sv"), dbus_interface=WHEREABOUTS_CLIENT)
            added += 1
        except dbus.exceptions.DBusException as error:
            if error.get_dbus_name() == "io.github.whereabouts1.Error.LimitsExceeded":
                limits.append(error.get_dbus_message())
            else:
                other.append("%s: %s" % (error.get_dbus_name(), error.get_dbus_message()))
                break
    say("added %d" % added)
    say("refused-limits %d %s" % (len(limits), limits[0] if limits else ""))
    say("other %d %s" % (len(other), other[0] if other else ""))


def listed():
    client = app_client(connect(), app)
    rows = client.ListRegions(dbus_interface=WHEREABOUTS_CLIENT)
    say("listed %s" % ",".join(sorted(str(row[0]) for row in rows)))


def remove(region_id):
    client = app_client(connect(), app)
    client.RemoveRegion(region_id, dbus_interface=WHEREABOUTS_CLIENT)
    say("removed")


if mode == "hold":
    hold(int(sys.argv[4]))
elif mode == "requests":
    requests(int(sys.argv[4]), int(sys.argv[5]))
elif mode == "active-apps":
    active_apps()
elif mode == "regions":
    regions(int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]))
elif mode == "list":
    listed()
elif mode == "remove":
    remove(sys.argv[4])
else:
    sys.exit("unknown mode " + mode)
