#!/usr/bin/python3
"""A compass user of iio-sensor-proxy (net.hadess.SensorProxy), on a bus connection of its own.

    compass_client.py ADDRESS COUNT
        Watches the compass's PropertiesChanged, calls ClaimCompass, and prints "heading H" for each of the
        first COUNT CompassHeading changes; then exits without ReleaseCompass, leaving iio-sensor-proxy to drop
        the claim when the connection goes. Prints "refused NAME: MESSAGE" and exits 2 if the claim is refused,
        and "no heading" (exit 1) if COUNT changes do not come within 10 s.

Run it as the user whose claim it plays (e.g. through setpriv as geoclue, whom the package's bus policy lets use
the compass).
"""

import sys

from gi.repository import Gio, GLib

SERVICE = 'net.hadess.SensorProxy'
COMPASS_PATH = '/net/hadess/SensorProxy/Compass'
COMPASS = 'net.hadess.SensorProxy.Compass'

address, count = sys.argv[1], int(sys.argv[2])
loop = GLib.MainLoop()
connection = Gio.DBusConnection.new_for_address_sync(
    address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None,
    None)
state = {'headings': 0, 'status': 1}


def changed(_connection, _sender, _path, _interface, _member, parameters):
    interface, properties, _ = parameters.unpack()
    if interface != COMPASS or 'CompassHeading' not in properties:
        return
    print(f"heading {properties['CompassHeading']:g}", flush=True)
    state['headings'] += 1
    if state['headings'] == count:
        state['status'] = 0
        loop.quit()


connection.signal_subscribe(SERVICE, 'org.freedesktop.DBus.Properties', 'PropertiesChanged', COMPASS_PATH, None,
                            Gio.DBusSignalFlags.NONE, changed)
try:
    connection.call_sync(SERVICE, COMPASS_PATH, COMPASS, 'ClaimCompass', None, None, Gio.DBusCallFlags.NONE, -1,
                         None)
except GLib.Error as error:
    print(f'refused {Gio.DBusError.get_remote_error(error)}: {error.message}', flush=True)
    sys.exit(2)
GLib.timeout_add_seconds(10, loop.quit)
loop.run()
if state['status'] == 1:
    print('no heading', flush=True)
sys.exit(state['status'])
