'''wpa_supplicant mock template for python-dbusmock

Load with: python3 -m dbusmock --template Tests/StandIns/wpa_supplicant_mock.py [-p '{"Interfaces": ["wlan0"]}']

It serves the part of wpa_supplicant's D-Bus API (fi.w1.wpa_supplicant1, as wpa_supplicant 2.10 has it) that
Wi-Fi positioning uses:

* /fi/w1/wpa_supplicant1, interface fi.w1.wpa_supplicant1: properties Interfaces (ao), DebugLevel,
  Capabilities; methods CreateInterface(a{sv}) -> o, RemoveInterface(o), GetInterface(s) -> o; signals
  InterfaceAdded(o, a{sv}) and InterfaceRemoved(o).
* /fi/w1/wpa_supplicant1/Interfaces/N, interface fi.w1.wpa_supplicant1.Interface: properties Ifname, Driver,
  State, Scanning, BSSs (ao); method Scan(a{sv}) taking Type "active" or "passive", which after a short delay
  replaces the interface's BSS objects with the ones set by SetScanResults (BSSAdded(o, a{sv}) and
  BSSRemoved(o) for the difference), then emits ScanDone(true). A Scan while a scan runs fails with
  fi.w1.wpa_supplicant1.Interface.ScanError "Scan request rejected", as wpa_supplicant's does.
* .../BSSs/M, interface fi.w1.wpa_supplicant1.BSS: BSSID (ay), SSID (ay), Signal (n), Frequency (q), Age (u),
  or whatever SetScanResults gave.

Property changes emit org.freedesktop.DBus.Properties.PropertiesChanged.

Control (interface org.freedesktop.DBus.Mock, on /fi/w1/wpa_supplicant1):
* AddInterface(s ifname) -> o and RemoveInterfaceByName(s ifname): hot-plug a radio.
* SetScanResults(o interface, aa{sv} bsses): what the interface's scans find from now on; each entry has the
  BSS properties (BSSID, SSID, Signal, Frequency, Age) with any types, so malformed ones can be served.
* GetScanCount(o interface) -> u: how many Scan calls the interface received, refused ones included.
* SetBusy(o interface, b busy): holds the interface in a scan that never ends (Scanning true, Scan refused),
  or lets it go (without a ScanDone).
* SetScanDelay(o interface, u milliseconds): how long the interface's scans take (parameter ScanDelay, 100 ms
  by default, for every interface).

Parameters: Interfaces (list of interface names to start with), ScanDelay (milliseconds).
'''

import dbus
from gi.repository import GLib

from dbusmock import MOCK_IFACE
import dbusmock

BUS_NAME = 'fi.w1.wpa_supplicant1'
MAIN_OBJ = '/fi/w1/wpa_supplicant1'
MAIN_IFACE = 'fi.w1.wpa_supplicant1'
SYSTEM_BUS = True

IFACE_IFACE = 'fi.w1.wpa_supplicant1.Interface'
BSS_IFACE = 'fi.w1.wpa_supplicant1.BSS'
ERROR_INVALID_ARGS = 'fi.w1.wpa_supplicant1.InvalidArgs'
ERROR_IFACE_EXISTS = 'fi.w1.wpa_supplicant1.InterfaceExists'
ERROR_IFACE_UNKNOWN = 'fi.w1.wpa_supplicant1.InterfaceUnknown'
ERROR_SCAN = 'fi.w1.wpa_supplicant1.Interface.ScanError'


class _State:  # pylint: disable=too-few-public-methods
    '''What the mock keeps besides the objects' properties.'''
    root = None
    next_interface = 0
    scan_delay = 100
    # interface path -> per-interface state dict
    interfaces = {}


def _root():
    return _State.root


def _emit_changed(obj, interface, changes):
    obj.EmitSignal(dbus.PROPERTIES_IFACE, 'PropertiesChanged', 'sa{sv}as',
                   [interface, dbus.Dictionary(changes, signature='sv'), dbus.Array([], signature='s')])


def _set(obj, interface, changes):
    for name, value in changes.items():
        obj.props[interface][name] = value
    _emit_changed(obj, interface, changes)


def _interface_state(path):
    state = _State.interfaces.get(str(path))
    if state is None:
        raise dbus.exceptions.DBusException(f'no interface {path}', name=ERROR_IFACE_UNKNOWN)
    return state


def _create_interface(ifname):
    for path, state in _State.interfaces.items():
        if state['ifname'] == ifname:
            raise dbus.exceptions.DBusException(f'wpa_supplicant already controls {ifname}', name=ERROR_IFACE_EXISTS)
    path = f'{MAIN_OBJ}/Interfaces/{_State.next_interface}'
    _State.next_interface += 1
    root = _root()
    props = {
        'Ifname': dbus.String(ifname),
        'Driver': dbus.String('nl80211'),
        'State': dbus.String('inactive'),
        'Scanning': dbus.Boolean(False),
        'BSSs': dbus.Array([], signature='o'),
        'CurrentBSS': dbus.ObjectPath('/'),
    }
    root.AddObject(path, IFACE_IFACE, props, [('Scan', 'a{sv}', '', _scan)])
    _State.interfaces[path] = {
        'ifname': ifname,
        'scanning': False,
        'busy': False,
        'scan_count': 0,
        'delay': _State.scan_delay,
        'results': [],
        'bsses': {},  # BSSID bytes -> BSS path
        'next_bss': 0,
    }
    interfaces = root.props[MAIN_IFACE]['Interfaces']
    interfaces.append(dbus.ObjectPath(path))
    _set(root, MAIN_IFACE, {'Interfaces': dbus.Array(interfaces, signature='o')})
    root.EmitSignal(MAIN_IFACE, 'InterfaceAdded', 'oa{sv}', [dbus.ObjectPath(path), dbus.Dictionary(props, signature='sv')])
    return dbus.ObjectPath(path)


def _remove_interface(path):
    path = str(path)
    state = _interface_state(path)
    root = _root()
    for bss in list(state['bsses'].values()):
        root.RemoveObject(bss)
    del _State.interfaces[path]
    root.RemoveObject(path)
    interfaces = [p for p in root.props[MAIN_IFACE]['Interfaces'] if str(p) != path]
    _set(root, MAIN_IFACE, {'Interfaces': dbus.Array(interfaces, signature='o')})
    root.EmitSignal(MAIN_IFACE, 'InterfaceRemoved', 'o', [dbus.ObjectPath(path)])


def _scan(self, options):
    path = self.path
    state = _interface_state(path)
    state['scan_count'] += 1
    kind = options.get('Type')
    if not isinstance(kind, str):
        raise dbus.exceptions.DBusException('Wrong Type value type. String required', name=ERROR_INVALID_ARGS)
    if kind not in ('active', 'passive'):
        raise dbus.exceptions.DBusException(f'Wrong scan type: {kind}.  Must be "active" or "passive"',
                                            name=ERROR_INVALID_ARGS)
    if state['scanning'] or state['busy']:
        raise dbus.exceptions.DBusException('Scan request rejected', name=ERROR_SCAN)
    state['scanning'] = True
    _set(self, IFACE_IFACE, {'Scanning': dbus.Boolean(True), 'State': dbus.String('scanning')})
    GLib.timeout_add(state['delay'], _finish_scan, path)


def _bss_key(entry):
    value = entry.get('BSSID', b'')
    if isinstance(value, str):
        return ('s:' + value).encode()
    try:
        return bytes(int(b) for b in value)
    except (TypeError, ValueError):
        return repr(value).encode()


def _finish_scan(path):
    state = _State.interfaces.get(path)
    if state is None or not state['scanning']:
        return False
    root = _root()
    obj = dbusmock.get_object(path)
    wanted = {_bss_key(entry): entry for entry in state['results']}
    for key in [k for k in state['bsses'] if k not in wanted]:
        bss = state['bsses'].pop(key)
        root.RemoveObject(bss)
        obj.EmitSignal(IFACE_IFACE, 'BSSRemoved', 'o', [dbus.ObjectPath(bss)])
    for key, entry in wanted.items():
        props = dbus.Dictionary(entry, signature='sv')
        if key in state['bsses']:
            bss_obj = dbusmock.get_object(state['bsses'][key])
            bss_obj.props[BSS_IFACE] = props
            _emit_changed(bss_obj, BSS_IFACE, props)
            continue
        bss = f'{path}/BSSs/{state["next_bss"]}'
        state['next_bss'] += 1
        root.AddObject(bss, BSS_IFACE, props, [])
        state['bsses'][key] = bss
        obj.EmitSignal(IFACE_IFACE, 'BSSAdded', 'oa{sv}', [dbus.ObjectPath(bss), props])
    state['scanning'] = False
    _set(obj, IFACE_IFACE, {
        'BSSs': dbus.Array([dbus.ObjectPath(p) for p in state['bsses'].values()], signature='o'),
        'Scanning': dbus.Boolean(state['busy']),
        'State': dbus.String('inactive'),
    })
    obj.EmitSignal(IFACE_IFACE, 'ScanDone', 'b', [dbus.Boolean(True)])
    return False


def load(mock, parameters):
    _State.root = mock
    _State.scan_delay = int(parameters.get('ScanDelay', 100))
    mock.AddProperties(MAIN_IFACE, {
        'Interfaces': dbus.Array([], signature='o'),
        'DebugLevel': dbus.String('info'),
        'DebugTimestamp': dbus.Boolean(False),
        'DebugShowKeys': dbus.Boolean(False),
        'EapMethods': dbus.Array(['MD5', 'TLS', 'PEAP'], signature='s'),
        'Capabilities': dbus.Array(['ap', 'ibss-rsn', 'p2p', 'interworking', 'mesh'], signature='s'),
    })
    mock.AddMethods(MAIN_IFACE, [
        ('CreateInterface', 'a{sv}', 'o', _create_interface_method),
        ('RemoveInterface', 'o', '', lambda self, path: _remove_interface(path)),
        ('GetInterface', 's', 'o', _get_interface_method),
    ])
    for ifname in parameters.get('Interfaces', []):
        _create_interface(str(ifname))


def _create_interface_method(_self, arguments):
    ifname = arguments.get('Ifname')
    if not isinstance(ifname, str) or not ifname:
        raise dbus.exceptions.DBusException('Did not receive correct message arguments.', name=ERROR_INVALID_ARGS)
    return _create_interface(str(ifname))


def _get_interface_method(_self, ifname):
    for path, state in _State.interfaces.items():
        if state['ifname'] == ifname:
            return dbus.ObjectPath(path)
    raise dbus.exceptions.DBusException('wpa_supplicant knows nothing about this interface.', name=ERROR_IFACE_UNKNOWN)


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='o')
def AddInterface(_self, ifname):
    '''Adds a wireless interface, as CreateInterface({"Ifname": ifname}) does; returns its path.'''
    return _create_interface(str(ifname))


@dbus.service.method(MOCK_IFACE, in_signature='s', out_signature='')
def RemoveInterfaceByName(_self, ifname):
    '''Removes the interface named ifname, as RemoveInterface does.'''
    _remove_interface(_get_interface_method(None, str(ifname)))


@dbus.service.method(MOCK_IFACE, in_signature='oaa{sv}', out_signature='')
def SetScanResults(_self, path, bsses):
    '''Sets what the interface's scans find from now on: one property dictionary per BSS.'''
    _interface_state(path)['results'] = [dict(entry) for entry in bsses]


@dbus.service.method(MOCK_IFACE, in_signature='o', out_signature='u')
def GetScanCount(_self, path):
    '''How many Scan calls the interface received, refused ones included.'''
    return dbus.UInt32(_interface_state(path)['scan_count'])


@dbus.service.method(MOCK_IFACE, in_signature='ob', out_signature='')
def SetBusy(_self, path, busy):
    '''Holds the interface in a never-ending scan of its own (Scan is refused), or lets it go.'''
    state = _interface_state(path)
    state['busy'] = bool(busy)
    _set(dbusmock.get_object(str(path)), IFACE_IFACE, {'Scanning': dbus.Boolean(state['busy'] or state['scanning'])})


@dbus.service.method(MOCK_IFACE, in_signature='ou', out_signature='')
def SetScanDelay(_self, path, milliseconds):
    '''How long the interface's scans take from now on.'''
    _interface_state(path)['delay'] = int(milliseconds)
