#!/usr/bin/python3
"""A stand-in for iio-sensor-proxy's compass whose readings the test chooses, bad ones included.

    compass_standin.py ADDRESS READING...
        Owns net.hadess.SensorProxy on the bus at ADDRESS and serves /net/hadess/SensorProxy/Compass
        (net.hadess.SensorProxy.Compass: HasCompass true, CompassHeading, ClaimCompass, ReleaseCompass) as
        iio-sensor-proxy 3.0 does. At the first claim it sends each READING in turn as a CompassHeading change
        (PropertiesChanged), 50 ms apart; a READING is a number, "nan", "inf" or "-inf", or "pause" for 2.5 s
        without one. Prints "ready" once it owns the name and "claimed" and "released" as the calls come.

The real iio-sensor-proxy's fake compass only ever turns by 10 degrees, so it cannot show what the daemon does
with a reading that is no heading.
"""

import sys

from gi.repository import Gio, GLib

NAME = 'net.hadess.SensorProxy'
PATH = '/net/hadess/SensorProxy/Compass'
INTERFACE = 'net.hadess.SensorProxy.Compass'
XML = f'''
<node>
  <interface name="{INTERFACE}">
    <method name="ClaimCompass"/>
    <method name="ReleaseCompass"/>
    <property name="HasCompass" type="b" access="read"/>
    <property name="CompassHeading" type="d" access="read"/>
  </interface>
</node>
'''

address, readings = sys.argv[1], sys.argv[2:]
loop = GLib.MainLoop()
connection = Gio.DBusConnection.new_for_address_sync(
    address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None,
    None)
state = {'heading': 0.0, 'started': False}


def send_next(queue):
    if not queue:
        return False
    reading = queue.pop(0)
    if reading == 'pause':
        GLib.timeout_add(2500, send_next, queue)
        return False
    state['heading'] = float(reading)
    connection.emit_signal(
        None, PATH, 'org.freedesktop.DBus.Properties', 'PropertiesChanged',
        GLib.Variant('(sa{sv}as)', (INTERFACE, {'CompassHeading': GLib.Variant('d', state['heading'])}, [])))
    GLib.timeout_add(50, send_next, queue)
    return False


def method_call(_connection, _sender, _path, _interface, method, _parameters, invocation):
    print('claimed' if method == 'ClaimCompass' else 'released', flush=True)
    invocation.return_value(None)
    if method == 'ClaimCompass' and not state['started']:
        state['started'] = True
        GLib.timeout_add(200, send_next, list(readings))


def get_property(_connection, _sender, _path, _interface, name):
    if name == 'HasCompass':
        return GLib.Variant('b', True)
    return GLib.Variant('d', state['heading'])


node = Gio.DBusNodeInfo.new_for_xml(XML)
connection.register_object(PATH, node.interfaces[0], method_call, get_property, None)
reply = connection.call_sync('org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'RequestName',
                             GLib.Variant('(su)', (NAME, 4)), None, Gio.DBusCallFlags.NONE, -1, None)
if reply.unpack()[0] != 1:
    print(f'cannot own {NAME}', flush=True)
    sys.exit(1)
print('ready', flush=True)
loop.run()
