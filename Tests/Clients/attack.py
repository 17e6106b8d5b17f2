#!/usr/bin/python3
"""What one local user can keep doing to the daemon, for the responsiveness figures (wbload --attacks); run as an
unprivileged user. Each mode prints "ready" once the attack is under way, then keeps it up until killed.

    attack.py ADDRESS APP introspect CLIENTS
        Holds CLIENTS clients on one connection and sends Introspect calls without waiting for their answers, 500
        at a time, to the client folder and to its own first client.

    attack.py ADDRESS APP requests CONNECTIONS
        One client for APP on each of CONNECTIONS connections, each keeping 356 RequestLocation calls in flight:
        more than a connection may have waiting, each call that comes back (answered or refused) sent again.

    attack.py ADDRESS APP answers CONNECTIONS
        On each of CONNECTIONS connections, keeps 128 Introspect calls to the Manager in flight (the system bus's
        default limit on a connection's calls waiting for answers), each call sent again when its answer comes:
        small calls on many connections, whose larger answers the bus reads from the daemon's one connection.

    attack.py ADDRESS APP bodies CONNECTIONS
        One client for APP on each of CONNECTIONS connections, each keeping 64 RequestLocation calls in flight whose
        options repeat the key "timeout" 15,000 times (some 360 KB a call, every entry valid), each call sent again
        when it comes back: calls the daemon holds until the next fix, with large bodies.

    attack.py ADDRESS APP churn CLIENTS
        Opens a connection, makes CLIENTS clients on it and closes it, again and again.

    attack.py ADDRESS APP checks CONNECTIONS
        On each of CONNECTIONS connections, one client whose DesktopId is set to a new app (APP.nN) before every
        CheckAuthorisation, at most 200 calls in flight per connection: checks that polkit's reused answers
        cannot absorb.

    attack.py ADDRESS APP grants
        Asks for *when in use* for a new app (APP.gN) again and again (RequestAuthorisation), one at a time: a
        decision to store each time, until the user's share is full, and refused after.

    attack.py ADDRESS APP agents
        Registers an agent (AddAgent "gnome-shell") on a new connection and leaves, again and again.

    attack.py ADDRESS APP regions
        Adds regions with 255-byte ids for three apps (APP-r0, APP-r1, APP-r2), 1000 to each, one call at a time,
        and then keeps re-adding them (and asking for more, refused past the user's share): "ready" once the user's
        share is full, the flood of changes going on after it.
"""

import sys

import dbus
import dbus.bus
import dbus.lowlevel
import dbus.mainloop.glib
from gi.repository import Gio, GLib

sys.dont_write_bytecode = True
from geoclue_names import SERVICE, MANAGER_PATH, MANAGER, CLIENT, WHEREABOUTS_CLIENT, PROPERTIES, INTROSPECTABLE, say  # noqa: E402

TIMEOUT = 300

address, app, mode, arguments = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
mainloop = dbus.mainloop.glib.DBusGMainLoop()
loop = GLib.MainLoop()
state = {"ready": False, "counter": 0}


def ready():
    if not state["ready"]:
        state["ready"] = True
        say("ready")


def ignore(*_arguments):
    return None


def connect():
    return dbus.bus.BusConnection(address, mainloop=mainloop)


def manager_of(connection):
    return connection.get_object(SERVICE, MANAGER_PATH, introspect=False)


def make_clients(connection, count):
    """CreateClient COUNT times on connection, at most 64 calls in flight; returns the paths."""
    manager = manager_of(connection)
    paths = []
    pending = {"sent": 0, "back": 0}

    def send():
        while pending["sent"] < count and pending["sent"] - pending["back"] < 64:
            pending["sent"] += 1
            manager.CreateClient(dbus_interface=MANAGER, reply_handler=created, error_handler=failed, timeout=TIMEOUT)

    def created(path):
        paths.append(path)
        back()

    def failed(_error):
        back()

    def back():
        pending["back"] += 1
        if pending["back"] == count:
            loop.quit()
        else:
            send()

    send()
    loop.run()
    return paths


def introspect(clients):
    connection = connect()
    paths = make_clients(connection, clients)
    targets = ["/org/freedesktop/GeoClue2/Client"] + paths[:1]

    def flood():
        for index in range(500):
            message = dbus.lowlevel.MethodCallMessage(SERVICE, targets[index % len(targets)], INTROSPECTABLE,
                                                      "Introspect")
            message.set_no_reply(True)
            connection.send_message(message)
        connection.flush()
        ready()
        return True

    GLib.timeout_add(10, flood)
    loop.run()


def answers(connections):
    def keep_asking(connection):
        def send(*_arguments):
            message = dbus.lowlevel.MethodCallMessage(SERVICE, MANAGER_PATH, INTROSPECTABLE, "Introspect")
            connection.send_message_with_reply(message, send, TIMEOUT)

        for _ in range(128):
            send()

    for _ in range(connections):
        keep_asking(connect())
    ready()
    loop.run()


def client_for(connection, desktop_id):
    client = connection.get_object(SERVICE, manager_of(connection).CreateClient(dbus_interface=MANAGER), introspect=False)
    dbus.Interface(client, PROPERTIES).Set(CLIENT, "DesktopId", dbus.String(desktop_id, variant_level=1))
    return client


def requests(connections):
    def keep_sending(client):
        def back(*_arguments):
            send(1)

        def send(count):
            for _ in range(count):
                client.RequestLocation(dbus.Dictionary({"timeout": dbus.UInt32(300000)}, signature="sv"),
                                       dbus_interface=WHEREABOUTS_CLIENT, reply_handler=back, error_handler=back,
                                       timeout=TIMEOUT)

        # More than a connection may have waiting: each call that comes back is sent again at once.
        send(356)

    for _ in range(connections):
        keep_sending(client_for(connect(), app))
    ready()
    loop.run()


def bodies(connections):
    # dbus-python keeps a dictionary's keys unique; GLib builds the array of entries as given.
    entry = GLib.Variant.new_dict_entry(GLib.Variant("s", "timeout"), GLib.Variant("v", GLib.Variant("u", 300000)))
    options = GLib.Variant.new_tuple(GLib.Variant.new_array(None, [entry] * 15000))
    flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION

    def keep_sending(connection, path):
        def send(*_arguments):
            connection.call(SERVICE, path, WHEREABOUTS_CLIENT, "RequestLocation", options, None,
                            Gio.DBusCallFlags.NONE, TIMEOUT * 1000, None, back)

        def back(source, result):
            try:
                source.call_finish(result)
            except GLib.Error:
                pass
            send()

        for _ in range(64):
            send()

    for _ in range(connections):
        connection = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
        path = connection.call_sync(SERVICE, MANAGER_PATH, MANAGER, "CreateClient", None, None,
                                    Gio.DBusCallFlags.NONE, TIMEOUT * 1000, None).unpack()[0]
        connection.call_sync(SERVICE, path, PROPERTIES, "Set",
                             GLib.Variant("(ssv)", (CLIENT, "DesktopId", GLib.Variant("s", app))), None,
                             Gio.DBusCallFlags.NONE, TIMEOUT * 1000, None)
        keep_sending(connection, path)
    ready()
    loop.run()


def churn(clients):
    while True:
        connection = connect()
        make_clients(connection, clients)
        connection.close()
        ready()


def checks(connections):
    def keep_checking(connection, client):
        properties = dbus.Interface(client, PROPERTIES)
        in_flight = {"count": 0}

        def back(*_arguments):
            in_flight["count"] -= 1
            send()

        def send():
            while in_flight["count"] < 200:
                state["counter"] += 1
                in_flight["count"] += 1
                properties.Set(CLIENT, "DesktopId", dbus.String("%s.n%d" % (app, state["counter"]), variant_level=1),
                               reply_handler=ignore, error_handler=ignore, timeout=TIMEOUT)
                client.CheckAuthorisation(dbus_interface=WHEREABOUTS_CLIENT, reply_handler=back, error_handler=back,
                                          timeout=TIMEOUT)

        send()

    for _ in range(connections):
        connection = connect()
        keep_checking(connection, client_for(connection, app))
    ready()
    loop.run()


def grants():
    connection = connect()
    client = client_for(connection, app)
    properties = dbus.Interface(client, PROPERTIES)
    while True:
        state["counter"] += 1
        properties.Set(CLIENT, "DesktopId", dbus.String("%s.g%d" % (app, state["counter"]), variant_level=1))
        try:
            client.RequestAuthorisation("when-in-use", dbus.Dictionary({}, signature="sv"),
                                        dbus_interface=WHEREABOUTS_CLIENT, timeout=TIMEOUT)
        except dbus.exceptions.DBusException:
            pass
        ready()


def agents():
    while True:
        connection = connect()
        try:
            manager_of(connection).AddAgent("gnome-shell", dbus_interface=MANAGER, timeout=TIMEOUT)
        except dbus.exceptions.DBusException:
            pass
        connection.close()
        ready()


def regions():
    connection = connect()
    clients = {}
    while True:
        number = state["counter"]
        state["counter"] += 1
        name = "%s-r%d" % (app, (number // 1000) % 3)
        if name not in clients:
            clients[name] = client_for(connection, name)
        region_id = ("%d-" % (number % 2500)).ljust(255, "x")
        try:
            clients[name].AddRegion(region_id, 48.8584 + (number % 100) * 0.001, 2.2945, 200.0,
                                    dbus.Dictionary({}, signature="sv"), dbus_interface=WHEREABOUTS_CLIENT,
                                    timeout=TIMEOUT)
        except dbus.exceptions.DBusException:
            pass
        if number >= 2000:
            ready()


if mode == "introspect":
    introspect(int(arguments[0]))
elif mode == "requests":
    requests(int(arguments[0]))
elif mode == "answers":
    answers(int(arguments[0]))
elif mode == "bodies":
    bodies(int(arguments[0]))
elif mode == "churn":
    churn(int(arguments[0]))
elif mode == "checks":
    checks(int(arguments[0]))
elif mode == "grants":
    grants()
elif mode == "agents":
    agents()
elif mode == "regions":
    regions()
else:
    sys.exit("unknown mode " + mode)
