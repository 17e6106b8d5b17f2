#!/usr/bin/python3
'''A stand-in for ModemManager (as Debian 12 ships it, 1.20.4) on a private system bus, for tests.

Run: DBUS_SYSTEM_BUS_ADDRESS=unix:path=... /usr/bin/python3 Tests/StandIns/modemmanager_mock.py

It owns org.freedesktop.ModemManager1 on the bus DBUS_SYSTEM_BUS_ADDRESS names and serves, with ModemManager's
interface definitions, paths, error names and messages, what location clients use:

* /org/freedesktop/ModemManager1: org.freedesktop.ModemManager1 (Version; ScanDevices, SetLogging,
  ReportKernelEvent, InhibitDevice) and org.freedesktop.DBus.ObjectManager (GetManagedObjects, InterfacesAdded,
  InterfacesRemoved) for the modems.
* /org/freedesktop/ModemManager1/Modem/N (N counting from 0, never reused): org.freedesktop.ModemManager1.Modem,
  every property of it, StateChanged(old, new, reason) after the State change is flushed (on registering, after
  the network's AccessTechnologies and the serving cell in Location, as ModemManager reports them), Enable(b)
  taking the modem through enabling to enabled (or straight to registered when the network has a serving cell)
  and back through disabling; and org.freedesktop.ModemManager1.Modem.Location, exported only while the modem has location
  capabilities and is past its SIM lock (state disabled or above), added and removed with InterfacesAdded and
  InterfacesRemoved as the state crosses that line.

The Location interface does what mm-iface-modem-location.c does:
* Enabling the modem enables every non-GPS source it supports (3GPP_LAC_CI, CDMA_BS); disabling it disables every
  source and forgets all gathered data (GPS refresh timers included).
* Setup(sources, signal_location), SetGpsRefreshRate, SetSuplServer and InjectAssistanceData need polkit's
  org.freedesktop.ModemManager1.Device.Control, GetLocation needs org.freedesktop.ModemManager1.Location; a caller
  whose Unix user (the bus's GetConnectionUnixUser) is not among the users authorised for the action is refused
  with org.freedesktop.ModemManager1.Error.Core.Unauthorized, before anything else is checked. Then a modem below
  enabled refuses with ...Error.Core.WrongState, and sources outside Capabilities with ...Error.Core.Unsupported.
  Setup turns SignalsLocation on or off first (rebuilding Location from what is gathered, or emptying it), then
  enables and disables sources in bit order; enabling 3GPP_LAC_CI re-reads the registration, so the serving cell
  shows at once when the modem is registered.
* Each source keeps what it gathered only while enabled: the 3GPP cell ("MCC,MNC,LAC,CI,TAC", LAC, CI and TAC in
  upper-case hexadecimal without leading zeros, absent until operator code, LAC or TAC, and CI are all known), the
  latest NMEA sentence of each type (sequences such as GSV kept whole), each ending in CR LF and joined with one
  more, in an order that is not the receiver's ("" before any),
  the GGA fix as {utc-time, latitude, longitude, altitude} (GNGGA preferred over GPGGA once seen), the CDMA base
  station as {latitude, longitude}. GetLocation answers from that.
* The Location property follows only while SignalsLocation is true, and for the GPS sources at most once per
  GpsRefreshRate seconds (30 by default, 0 for every sentence); like ModemManager it keeps a disabled source's last
  value until SignalsLocation is switched.

Property changes are emitted as ModemManager's generated skeletons emit them: one PropertiesChanged per
interface per main-loop turn, with only the values that really changed.

Control (interface io.github.whereabouts1.Test.ModemManager, object /io/github/whereabouts1/Test/ModemManager,
for root):
* AddModem(a{sv} settings) -> o: a modem appears (InterfacesAdded). Settings: State (i, 3 disabled by default; a
  state above disabled is reached through StateChanged after the modem appears), LocationCapabilities (u),
  SupportedAssistanceData (u, 1 for XTRA), AssistanceDataServers (as), AccessTechnologies (u, the network's,
  shown while registered), and any
  org.freedesktop.ModemManager1.Modem property by name (Manufacturer, Model, EquipmentIdentifier, ...).
* RemoveModem(o): it goes (InterfacesRemoved).
* SetState(o, i state, u reason): the modem's state changes as ModemManager would report it (StateChanged with
  reason); SetFailed(o, u failed_reason): it fails (state -1 with StateFailedReason).
* SetServingCell(o, s operator_code, u lac, u tac, u ci): the cell the network serves (operator code as MCC and
  MNC digits, "" for unknown; 0 for an unknown number), read while the modem is registered; as ModemManager reads
  the operator only when the registration changes, a new operator code shows after the modem was searching
  (SetState) or once the 3GPP source is enabled, as a network changing operators makes it search.
* SetAccessTechnologies(o, u): the network's MMModemAccessTechnology bits.
* PushNmea(o, s sentences): sentences from the modem's GPS port, one per line (CR LF or LF).
* SetReceiver(o, d latitude, d longitude, d cold_start, d assisted_start): the modem's receiver streams on its own
  from then on, as a real one does: while a GPS source is enabled, an epoch a second (GPGGA, GPGSA, GPRMC), without
  a position until its time to first fix has passed since it was turned on: `cold_start` seconds, or
  `assisted_start` once predicted orbits were injected into the modem (counted from the injection when that came
  after the receiver was turned on). Turning it off forgets the sky, so each start is cold again unless the modem
  holds injected orbits, which it keeps until it is removed.
* SetCdmaBaseStation(o, d latitude, d longitude): the CDMA base station's position.
* EmitRawPropertiesChanged(o, s interface, a{sv} changed): PropertiesChanged from the modem's object exactly as
  given, values of the wrong type included, which ModemManager never sends: for tests of a client's checks. The
  modem's own properties stay as they were.
* SetAuthorisedUsers(s action, au uids): the users polkit authorises for a ModemManager action (only root at
  first, for every action).
* FailNextCall(o, s method, s error): the modem's next call of `method` (Setup, SetGpsRefreshRate, GetLocation,
  SetSuplServer or InjectAssistanceData)
  fails with ...Error.Core.<error> (or `error` itself when it is a full name) before anything is checked, and is
  recorded with that error; the calls after it are served as usual.
* GetSetupCalls(o) -> a(uubs): each Setup call, refused ones included: caller uid, sources, signal_location, and
  the error name ("" when it succeeded); GetGpsRefreshRateCalls(o) -> a(uus): caller uid, rate, error name;
  GetLocationCalls(o) -> a(us): caller uid, error name; GetInjectedAssistanceData(o) -> a(uays): caller uid, the
  bytes, error name; GetSuplServerCalls(o) -> a(uss): caller uid, server, error name; GetCallOrder(o) -> as: the
  names of the Location interface's methods called on the modem, in the order they were received.
'''

import re
import sys
import time

from gi.repository import Gio, GLib

BUS_NAME = 'org.freedesktop.ModemManager1'
ROOT_PATH = '/org/freedesktop/ModemManager1'
MANAGER_IFACE = 'org.freedesktop.ModemManager1'
MODEM_IFACE = 'org.freedesktop.ModemManager1.Modem'
LOCATION_IFACE = 'org.freedesktop.ModemManager1.Modem.Location'
OBJECT_MANAGER_IFACE = 'org.freedesktop.DBus.ObjectManager'
PROPERTIES_IFACE = 'org.freedesktop.DBus.Properties'
CONTROL_PATH = '/io/github/whereabouts1/Test/ModemManager'
CONTROL_IFACE = 'io.github.whereabouts1.Test.ModemManager'
VERSION = '1.20.4'

CORE_ERROR = 'org.freedesktop.ModemManager1.Error.Core.'
MANAGER_CONTROL = 'org.freedesktop.ModemManager1.Control'
DEVICE_CONTROL = 'org.freedesktop.ModemManager1.Device.Control'
LOCATION_ACTION = 'org.freedesktop.ModemManager1.Location'

# MMModemState
STATE_FAILED, STATE_UNKNOWN, STATE_INITIALIZING, STATE_LOCKED, STATE_DISABLED = -1, 0, 1, 2, 3
STATE_DISABLING, STATE_ENABLING, STATE_ENABLED, STATE_SEARCHING, STATE_REGISTERED = 4, 5, 6, 7, 8
STATE_NAMES = {
    -1: 'failed', 0: 'unknown', 1: 'initializing', 2: 'locked', 3: 'disabled', 4: 'disabling', 5: 'enabling',
    6: 'enabled', 7: 'searching', 8: 'registered', 9: 'disconnecting', 10: 'connecting', 11: 'connected',
}
# MMModemStateChangeReason, MMModemStateFailedReason, MMModemLock, MMModemPowerState
REASON_UNKNOWN, REASON_USER_REQUESTED = 0, 1
FAILED_REASON_NONE, FAILED_REASON_UNKNOWN = 0, 1
LOCK_NONE, LOCK_SIM_PIN = 1, 2
POWER_LOW, POWER_ON = 2, 3

# MMModemLocationSource
SOURCE_3GPP_LAC_CI, SOURCE_GPS_RAW, SOURCE_GPS_NMEA, SOURCE_CDMA_BS = 1 << 0, 1 << 1, 1 << 2, 1 << 3
SOURCE_GPS_UNMANAGED, SOURCE_AGPS_MSA, SOURCE_AGPS_MSB = 1 << 4, 1 << 5, 1 << 6
SOURCE_NAMES = [
    (SOURCE_3GPP_LAC_CI, '3gpp-lac-ci'), (SOURCE_GPS_RAW, 'gps-raw'), (SOURCE_GPS_NMEA, 'gps-nmea'),
    (SOURCE_CDMA_BS, 'cdma-bs'), (SOURCE_GPS_UNMANAGED, 'gps-unmanaged'), (SOURCE_AGPS_MSA, 'agps-msa'),
    (SOURCE_AGPS_MSB, 'agps-msb'),
]
GPS_SOURCES = SOURCE_GPS_RAW | SOURCE_GPS_NMEA
NOT_DEFAULT_SOURCES = SOURCE_GPS_RAW | SOURCE_GPS_NMEA | SOURCE_GPS_UNMANAGED | SOURCE_AGPS_MSA | SOURCE_AGPS_MSB
# The order ModemManager builds the Location dictionary in.
LOCATION_ORDER = [SOURCE_3GPP_LAC_CI, SOURCE_GPS_NMEA, SOURCE_GPS_RAW, SOURCE_CDMA_BS]
GPS_REFRESH_DEFAULT = 30

INTROSPECTION = '''
<node>
  <interface name="org.freedesktop.ModemManager1">
    <method name="ScanDevices"/>
    <method name="SetLogging"><arg name="level" type="s" direction="in"/></method>
    <method name="ReportKernelEvent"><arg name="properties" type="a{sv}" direction="in"/></method>
    <method name="InhibitDevice">
      <arg name="uid" type="s" direction="in"/><arg name="inhibit" type="b" direction="in"/>
    </method>
    <property name="Version" type="s" access="read"/>
  </interface>
  <interface name="org.freedesktop.DBus.ObjectManager">
    <method name="GetManagedObjects">
      <arg name="object_paths_interfaces_and_properties" type="a{oa{sa{sv}}}" direction="out"/>
    </method>
    <signal name="InterfacesAdded">
      <arg name="object_path" type="o"/><arg name="interfaces_and_properties" type="a{sa{sv}}"/>
    </signal>
    <signal name="InterfacesRemoved"><arg name="object_path" type="o"/><arg name="interfaces" type="as"/></signal>
  </interface>
  <interface name="org.freedesktop.ModemManager1.Modem">
    <method name="Enable"><arg name="enable" type="b" direction="in"/></method>
    <method name="ListBearers"><arg name="bearers" type="ao" direction="out"/></method>
    <method name="CreateBearer">
      <arg name="properties" type="a{sv}" direction="in"/><arg name="path" type="o" direction="out"/>
    </method>
    <method name="DeleteBearer"><arg name="bearer" type="o" direction="in"/></method>
    <method name="Reset"/>
    <method name="FactoryReset"><arg name="code" type="s" direction="in"/></method>
    <method name="SetPowerState"><arg name="state" type="u" direction="in"/></method>
    <method name="SetCurrentCapabilities"><arg name="capabilities" type="u" direction="in"/></method>
    <method name="SetCurrentModes"><arg name="modes" type="(uu)" direction="in"/></method>
    <method name="SetCurrentBands"><arg name="bands" type="au" direction="in"/></method>
    <method name="SetPrimarySimSlot"><arg name="sim_slot" type="u" direction="in"/></method>
    <method name="GetCellInfo"><arg name="cell_info" type="aa{sv}" direction="out"/></method>
    <method name="Command">
      <arg name="cmd" type="s" direction="in"/><arg name="timeout" type="u" direction="in"/>
      <arg name="response" type="s" direction="out"/>
    </method>
    <signal name="StateChanged"><arg name="old" type="i"/><arg name="new" type="i"/><arg name="reason" type="u"/></signal>
    <property name="Sim" type="o" access="read"/>
    <property name="SimSlots" type="ao" access="read"/>
    <property name="PrimarySimSlot" type="u" access="read"/>
    <property name="Bearers" type="ao" access="read"/>
    <property name="SupportedCapabilities" type="au" access="read"/>
    <property name="CurrentCapabilities" type="u" access="read"/>
    <property name="MaxBearers" type="u" access="read"/>
    <property name="MaxActiveBearers" type="u" access="read"/>
    <property name="MaxActiveMultiplexedBearers" type="u" access="read"/>
    <property name="Manufacturer" type="s" access="read"/>
    <property name="Model" type="s" access="read"/>
    <property name="Revision" type="s" access="read"/>
    <property name="CarrierConfiguration" type="s" access="read"/>
    <property name="CarrierConfigurationRevision" type="s" access="read"/>
    <property name="HardwareRevision" type="s" access="read"/>
    <property name="DeviceIdentifier" type="s" access="read"/>
    <property name="Device" type="s" access="read"/>
    <property name="Drivers" type="as" access="read"/>
    <property name="Plugin" type="s" access="read"/>
    <property name="PrimaryPort" type="s" access="read"/>
    <property name="Ports" type="a(su)" access="read"/>
    <property name="EquipmentIdentifier" type="s" access="read"/>
    <property name="UnlockRequired" type="u" access="read"/>
    <property name="UnlockRetries" type="a{uu}" access="read"/>
    <property name="State" type="i" access="read"/>
    <property name="StateFailedReason" type="u" access="read"/>
    <property name="AccessTechnologies" type="u" access="read"/>
    <property name="SignalQuality" type="(ub)" access="read"/>
    <property name="OwnNumbers" type="as" access="read"/>
    <property name="PowerState" type="u" access="read"/>
    <property name="SupportedModes" type="a(uu)" access="read"/>
    <property name="CurrentModes" type="(uu)" access="read"/>
    <property name="SupportedBands" type="au" access="read"/>
    <property name="CurrentBands" type="au" access="read"/>
    <property name="SupportedIpFamilies" type="u" access="read"/>
  </interface>
  <interface name="org.freedesktop.ModemManager1.Modem.Location">
    <method name="Setup">
      <arg name="sources" type="u" direction="in"/><arg name="signal_location" type="b" direction="in"/>
    </method>
    <method name="GetLocation"><arg name="Location" type="a{uv}" direction="out"/></method>
    <method name="SetSuplServer"><arg name="supl" type="s" direction="in"/></method>
    <method name="InjectAssistanceData"><arg name="data" type="ay" direction="in"/></method>
    <method name="SetGpsRefreshRate"><arg name="rate" type="u" direction="in"/></method>
    <property name="Capabilities" type="u" access="read"/>
    <property name="SupportedAssistanceData" type="u" access="read"/>
    <property name="Enabled" type="u" access="read"/>
    <property name="SignalsLocation" type="b" access="read"/>
    <property name="Location" type="a{uv}" access="read"/>
    <property name="SuplServer" type="s" access="read"/>
    <property name="AssistanceDataServers" type="as" access="read"/>
    <property name="GpsRefreshRate" type="u" access="read"/>
  </interface>
  <interface name="io.github.whereabouts1.Test.ModemManager">
    <method name="AddModem">
      <arg name="settings" type="a{sv}" direction="in"/><arg name="modem" type="o" direction="out"/>
    </method>
    <method name="RemoveModem"><arg name="modem" type="o" direction="in"/></method>
    <method name="SetState">
      <arg name="modem" type="o" direction="in"/><arg name="state" type="i" direction="in"/>
      <arg name="reason" type="u" direction="in"/>
    </method>
    <method name="SetFailed">
      <arg name="modem" type="o" direction="in"/><arg name="failed_reason" type="u" direction="in"/>
    </method>
    <method name="SetServingCell">
      <arg name="modem" type="o" direction="in"/><arg name="operator_code" type="s" direction="in"/>
      <arg name="lac" type="u" direction="in"/><arg name="tac" type="u" direction="in"/>
      <arg name="ci" type="u" direction="in"/>
    </method>
    <method name="SetAccessTechnologies">
      <arg name="modem" type="o" direction="in"/><arg name="access_technologies" type="u" direction="in"/>
    </method>
    <method name="PushNmea">
      <arg name="modem" type="o" direction="in"/><arg name="sentences" type="s" direction="in"/>
    </method>
    <method name="SetReceiver">
      <arg name="modem" type="o" direction="in"/><arg name="latitude" type="d" direction="in"/>
      <arg name="longitude" type="d" direction="in"/><arg name="cold_start" type="d" direction="in"/>
      <arg name="assisted_start" type="d" direction="in"/>
    </method>
    <method name="SetCdmaBaseStation">
      <arg name="modem" type="o" direction="in"/><arg name="latitude" type="d" direction="in"/>
      <arg name="longitude" type="d" direction="in"/>
    </method>
    <method name="EmitRawPropertiesChanged">
      <arg name="modem" type="o" direction="in"/><arg name="interface" type="s" direction="in"/>
      <arg name="changed" type="a{sv}" direction="in"/>
    </method>
    <method name="SetAuthorisedUsers">
      <arg name="action" type="s" direction="in"/><arg name="uids" type="au" direction="in"/>
    </method>
    <method name="FailNextCall">
      <arg name="modem" type="o" direction="in"/><arg name="method" type="s" direction="in"/>
      <arg name="error" type="s" direction="in"/>
    </method>
    <method name="GetSetupCalls">
      <arg name="modem" type="o" direction="in"/><arg name="calls" type="a(uubs)" direction="out"/>
    </method>
    <method name="GetGpsRefreshRateCalls">
      <arg name="modem" type="o" direction="in"/><arg name="calls" type="a(uus)" direction="out"/>
    </method>
    <method name="GetLocationCalls">
      <arg name="modem" type="o" direction="in"/><arg name="calls" type="a(us)" direction="out"/>
    </method>
    <method name="GetInjectedAssistanceData">
      <arg name="modem" type="o" direction="in"/><arg name="calls" type="a(uays)" direction="out"/>
    </method>
    <method name="GetSuplServerCalls">
      <arg name="modem" type="o" direction="in"/><arg name="calls" type="a(uss)" direction="out"/>
    </method>
    <method name="GetCallOrder">
      <arg name="modem" type="o" direction="in"/><arg name="methods" type="as" direction="out"/>
    </method>
  </interface>
</node>
'''
NODE = Gio.DBusNodeInfo.new_for_xml(INTROSPECTION)


def interface_info(name):
    '''The parsed definition of interface `name`.'''
    return NODE.lookup_interface(name)


class ModemManagerError(Exception):
    '''An error answered to a caller: `name` after org.freedesktop.ModemManager1.Error.Core., or a full name.'''

    def __init__(self, name, message):
        super().__init__(message)
        self.name = name if '.' in name else CORE_ERROR + name
        self.message = message


def source_names(mask):
    '''Names a location source mask as ModemManager's mm_modem_location_source_build_string_from_mask does.'''
    for value, name in SOURCE_NAMES:
        if mask == value:
            return name
    names = [name for value, name in SOURCE_NAMES if mask & value]
    return ', '.join(names) if names else '(null)'


class Exported:
    '''One interface of one object on the bus: its properties and their PropertiesChanged, batched per main-loop
    turn like a gdbus-codegen skeleton, without the values that ended up unchanged.'''

    def __init__(self, service, path, name, properties, handler):
        self.service = service
        self.path = path
        self.name = name
        self.info = interface_info(name)
        self.properties = {}
        for prop in self.info.properties:
            self.properties[prop.name] = properties[prop.name]
        self.before_batch = {}
        self.handler = handler
        self.registration = service.connection.register_object(path, self.info, self._call, self._get, None)

    def _get(self, _connection, _sender, _path, _interface, name):
        return self.properties[name]

    def _call(self, _connection, sender, _path, _interface, method, parameters, invocation):
        self.service.answer(invocation, lambda: self.handler(method, sender, parameters))

    def set(self, name, value):
        '''Sets property `name` to `value` (a GLib.Variant, or a Python value of its D-Bus type).'''
        if not isinstance(value, GLib.Variant):
            value = GLib.Variant(self.info.lookup_property(name).signature, value)
        if self.properties[name] == value:
            return
        self.before_batch.setdefault(name, self.properties[name])
        self.properties[name] = value
        self.service.schedule_flush(self)

    def get(self, name):
        '''The Python value of property `name`.'''
        return self.properties[name].unpack()

    def flush(self):
        '''Emits the pending PropertiesChanged now.'''
        changed = {name: self.properties[name] for name, old in self.before_batch.items()
                   if old != self.properties[name]}
        self.before_batch = {}
        if changed and self.registration:
            self.service.emit(self.path, PROPERTIES_IFACE, 'PropertiesChanged', '(sa{sv}as)', (self.name, changed, []))

    def unexport(self):
        '''Leaves the bus; pending changes are dropped.'''
        self.before_batch = {}
        if self.registration:
            self.service.connection.unregister_object(self.registration)
            self.registration = 0


class Cell:
    '''The 3GPP location ModemManager gathers (MMLocation3gpp): operator code, LAC, TAC and cell id.'''

    def __init__(self):
        self.operator_code = None
        self.lac = 0
        self.tac = 0
        self.ci = 0

    def set_operator_code(self, code):
        '''Takes an MCCMNC of 5 or 6 digits; returns whether it changed (an invalid one is ignored).'''
        if code == self.operator_code:
            return False
        if code is not None and not (5 <= len(code) <= 6 and code.isdigit() and code.isascii()):
            return False
        self.operator_code = code
        return True

    def update(self, lac, tac, ci):
        '''Applies a registration report as mm_iface_modem_location_3gpp_update_lac_tac_ci does; returns whether
        anything changed.'''
        changed = False
        if lac:
            if self.lac != lac:
                self.lac, changed = lac, True
            if not tac and self.tac:
                self.tac, changed = 0, True
        if tac:
            if self.tac != tac:
                self.tac, changed = tac, True
            if not lac and self.lac:
                self.lac, changed = 0, True
        if ci and self.ci != ci:
            self.ci, changed = ci, True
        return changed

    def reset(self):
        '''Forgets everything; returns whether there was anything.'''
        if self.operator_code is None and not (self.lac or self.tac or self.ci):
            return False
        self.operator_code = None
        self.lac = self.tac = self.ci = 0
        return True

    def value(self):
        '''"MCC,MNC,LAC,CI,TAC" in ModemManager's format, or None while incomplete.'''
        if not self.operator_code or not (self.lac or self.tac) or not self.ci:
            return None
        code = self.operator_code
        return GLib.Variant('s', f'{code[:3]},{code[3:]},{self.lac:X},{self.ci:X},{self.tac:X}')


class NmeaTraces:
    '''The latest NMEA sentence of each type (MMLocationGpsNmea); the sentences of a sequence kept together.'''

    SEQUENCE = re.compile(r'\$..(?:ALM|GSV|RTE|SFI),(\d),(\d).*')

    def __init__(self):
        self.traces = {}

    def add(self, trace):
        '''Caches one sentence; returns whether it was taken.'''
        comma = trace.find(',')
        if comma <= 0:
            return False
        kind = trace[:comma]
        sequence = self.SEQUENCE.search(trace)
        if sequence and int(sequence.group(2)) != 1:
            previous = self.traces.get(kind)
            if previous is not None:
                if trace in previous:
                    return True
                trace = previous + ('' if previous.endswith('\r\n') else '\r\n') + trace
        self.traces[kind] = trace
        return True

    def value(self):
        '''The cached sentences as ModemManager 1.20 writes them: each with its CR LF, one more CR LF between two,
        in an order of their own (ModemManager's hash table's; here the types sorted backwards), never necessarily the
        order the receiver sent them in.'''
        kinds = sorted(self.traces, reverse=True)
        return GLib.Variant('s', '\r\n'.join(self.traces[kind] + '\r\n' for kind in kinds))


def nmea_number(text):
    '''A number as mm_get_double_from_str reads one (digits, '-' and '.' only), or None.'''
    if not text or any(c not in '0123456789-.' for c in text):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def nmea_coordinate(text):
    '''Degrees from NMEA's (d)ddmm.mmmm, or None.'''
    dot = text.find('.')
    if dot < 3:
        return None
    minutes = nmea_number(text[dot - 2:])
    degrees = nmea_number(text[:dot - 2])
    if minutes is None or degrees is None:
        return None
    return degrees + minutes / 60.0


class RawFix:
    '''The fix ModemManager reads from GGA sentences (MMLocationGpsRaw).'''

    GGA = re.compile(r'\$G(?:P|N)GGA,(.*),(.*),(.*),(.*),(.*),(.*),(.*),(.*),(.*),(.*),(.*),(.*),(.*),(.*)\*(.*).*')

    def __init__(self):
        self.utc_time = None
        self.latitude = None
        self.longitude = None
        self.altitude = None
        self.prefer_gngga = False

    def add(self, trace):
        '''Reads a GPGGA or GNGGA sentence; returns whether it was taken.'''
        if trace.startswith('$GPGGA'):
            if self.prefer_gngga:
                return False
        elif trace.startswith('$GNGGA'):
            self.prefer_gngga = True
        else:
            return False
        match = self.GGA.search(trace)
        if match:
            self.utc_time = match.group(1)
            self.latitude = nmea_coordinate(match.group(2))
            if self.latitude is not None and match.group(3).startswith('S'):
                self.latitude = -self.latitude
            self.longitude = nmea_coordinate(match.group(4))
            if self.longitude is not None and match.group(5).startswith('W'):
                self.longitude = -self.longitude
            self.altitude = nmea_number(match.group(9))
        return True

    def value(self):
        '''{utc-time, longitude, latitude[, altitude]}, or None without a time and a position.'''
        if self.utc_time is None or self.latitude is None or self.longitude is None:
            return None
        fix = {
            'utc-time': GLib.Variant('s', self.utc_time),
            'longitude': GLib.Variant('d', self.longitude),
            'latitude': GLib.Variant('d', self.latitude),
        }
        if self.altitude is not None:
            fix['altitude'] = GLib.Variant('d', self.altitude)
        return GLib.Variant('a{sv}', fix)


class BaseStation:
    '''The CDMA base station's position (MMLocationCdmaBs).'''

    def __init__(self):
        self.latitude = None
        self.longitude = None

    def set(self, latitude, longitude):
        '''Returns whether the position changed.'''
        if (self.latitude, self.longitude) == (latitude, longitude):
            return False
        self.latitude, self.longitude = latitude, longitude
        return True

    def value(self):
        '''{longitude, latitude}, or None while unknown.'''
        if self.latitude is None or self.longitude is None:
            return None
        return GLib.Variant('a{sv}', {
            'longitude': GLib.Variant('d', self.longitude), 'latitude': GLib.Variant('d', self.latitude)})


class Gathered:
    '''What the Location interface gathered, per enabled source (ModemManager's LocationContext).'''

    def __init__(self):
        self.sources = {}
        self.nmea_last_time = 0
        self.raw_last_time = 0

    def updates(self):
        '''Every enabled source's current value, for building the Location dictionary.'''
        return {source: self.sources[source].value() for source in LOCATION_ORDER if source in self.sources}


def location_dictionary(previous, updates):
    '''Builds Location as ModemManager's build_location_dictionary does: the previous values, each source given in
    `updates` replaced (or dropped when its value is None).'''
    values = dict(previous)
    for source, value in updates.items():
        if value is None:
            values.pop(source, None)
        else:
            values[source] = value
    return {source: values[source] for source in LOCATION_ORDER if source in values}


def nmea_sentence(body):
    '''`body` as a sentence: `$`, the body, `*` and its checksum.'''
    checksum = 0
    for character in body.encode('ascii'):
        checksum ^= character
    return '$%s*%02X' % (body, checksum)


def nmea_angle(value, degree_digits, positive, negative):
    '''An NMEA latitude or longitude: degrees and minutes, and the hemisphere.'''
    hemisphere = positive if value >= 0 else negative
    value = abs(value)
    degrees = int(value)
    return '%0*d%07.4f' % (degree_digits, degrees, (value - degrees) * 60), hemisphere


class Receiver:
    '''The modem's GNSS receiver as SetReceiver models it.'''

    def __init__(self, modem, latitude, longitude, cold_start, assisted_start):
        self.modem = modem
        self.latitude = latitude
        self.longitude = longitude
        self.cold_start = cold_start
        self.assisted_start = assisted_start
        self.turned_on_at = None
        self.timer = None

    def turn_on(self):
        self.turned_on_at = time.monotonic()
        self.timer = GLib.timeout_add(1000, self.epoch)

    def turn_off(self):
        if self.timer is not None:
            GLib.source_remove(self.timer)
        self.timer = None
        self.turned_on_at = None

    def first_fix_due(self):
        '''When the receiver has its first position: a cold start's time after it was turned on, or sooner with
        predicted orbits in the modem.'''
        due = self.turned_on_at + self.cold_start
        injected = self.modem.orbits_injected_at
        if injected is not None:
            due = min(due, max(injected, self.turned_on_at) + self.assisted_start)
        return due

    def epoch(self):
        now = time.time()
        clock = time.strftime('%H%M%S', time.gmtime(now)) + '.00'
        date = time.strftime('%d%m%y', time.gmtime(now))
        if time.monotonic() >= self.first_fix_due():
            latitude = ','.join(nmea_angle(self.latitude, 2, 'N', 'S'))
            longitude = ','.join(nmea_angle(self.longitude, 3, 'E', 'W'))
            bodies = [
                f'GPGGA,{clock},{latitude},{longitude},1,08,0.9,545.4,M,46.9,M,,',
                'GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,1.8,0.9,1.5',
                f'GPRMC,{clock},A,{latitude},{longitude},0.0,0.0,{date},,,A',
            ]
        else:
            bodies = [
                f'GPGGA,{clock},,,,,0,00,99.99,,,,,,',
                'GPGSA,A,1,,,,,,,,,,,,,99.99,99.99,99.99',
                f'GPRMC,{clock},V,,,,,,,{date},,,N',
            ]
        for body in bodies:
            self.modem.gps_trace(nmea_sentence(body))
        return True


class Modem:
    '''One modem: its Modem interface, its Location interface while it has one, and the network it sees.'''

    def __init__(self, service, index, settings):
        self.service = service
        self.path = f'{ROOT_PATH}/Modem/{index}'
        self.capabilities = self.setting(settings, 'LocationCapabilities', 'u', 0)
        self.assistance_data = self.setting(settings, 'SupportedAssistanceData', 'u', 0)
        self.assistance_servers = self.setting(settings, 'AssistanceDataServers', 'as', [])
        self.network_access = self.setting(settings, 'AccessTechnologies', 'u', 0)
        requested_state = self.setting(settings, 'State', 'i', STATE_DISABLED)
        if requested_state not in STATE_NAMES:
            raise ModemManagerError('InvalidArgs', f'no modem state {requested_state}')
        self.serving_cell = None
        self.base_station = (None, None)
        self.calls = {
            'Setup': [], 'SetGpsRefreshRate': [], 'GetLocation': [], 'SetSuplServer': [], 'InjectAssistanceData': [],
        }
        self.call_order = []
        self.next_failures = {}
        self.receiver = None
        self.orbits_injected_at = None
        self.gathered = Gathered()
        self.location = None
        self.location_values = {}
        initial_state = min(requested_state, STATE_DISABLED)
        properties = self.default_properties(index, initial_state)
        modem_info = interface_info(MODEM_IFACE)
        for name, value in settings.items():
            prop = modem_info.lookup_property(name)
            if prop is None:
                raise ModemManagerError('InvalidArgs', f'unknown setting {name}')
            if value.get_type_string() != prop.signature:
                raise ModemManagerError('InvalidArgs', f'{name} must be of type {prop.signature}')
            properties[name] = value
        self.modem = Exported(service, self.path, MODEM_IFACE, properties, self.handle_modem)
        if self.location_expected(initial_state):
            self.export_location()
        service.emit(ROOT_PATH, OBJECT_MANAGER_IFACE, 'InterfacesAdded', '(oa{sa{sv}})',
                     (self.path, self.managed_interfaces()))
        if requested_state > initial_state:
            self.change_state(requested_state, REASON_USER_REQUESTED)

    @staticmethod
    def setting(settings, name, signature, default):
        '''Takes AddModem's setting `name`, which must have D-Bus type `signature`, or `default`.'''
        value = settings.pop(name, None)
        if value is None:
            return default
        if value.get_type_string() != signature:
            raise ModemManagerError('InvalidArgs', f'{name} must be of type {signature}')
        return value.unpack()

    @staticmethod
    def default_properties(index, state):
        '''A QMI modem's Modem properties, as ModemManager shows a typical LTE one.'''
        variant = GLib.Variant
        return {
            'Sim': variant('o', '/'),
            'SimSlots': variant('ao', []),
            'PrimarySimSlot': variant('u', 0),
            'Bearers': variant('ao', []),
            'SupportedCapabilities': variant('au', [12]),
            'CurrentCapabilities': variant('u', 12),
            'MaxBearers': variant('u', 1),
            'MaxActiveBearers': variant('u', 1),
            'MaxActiveMultiplexedBearers': variant('u', 0),
            'Manufacturer': variant('s', 'QUALCOMM INCORPORATED'),
            'Model': variant('s', 'QUECTEL Mobile Broadband Module'),
            'Revision': variant('s', 'EG25GGBR07A08M2G'),
            'CarrierConfiguration': variant('s', ''),
            'CarrierConfigurationRevision': variant('s', ''),
            'HardwareRevision': variant('s', '10000'),
            'DeviceIdentifier': variant('s', f'{index:040x}'),
            'Device': variant('s', f'/sys/devices/platform/usb/{index}'),
            'Drivers': variant('as', ['qmi_wwan', 'option']),
            'Plugin': variant('s', 'quectel'),
            'PrimaryPort': variant('s', f'cdc-wdm{index}'),
            'Ports': variant('a(su)', [(f'cdc-wdm{index}', 6), (f'wwan{index}', 2)]),
            'EquipmentIdentifier': variant('s', f'{867698040000000 + index:015d}'),
            'UnlockRequired': variant('u', LOCK_SIM_PIN if state == STATE_LOCKED else LOCK_NONE),
            'UnlockRetries': variant('a{uu}', {}),
            'State': variant('i', state),
            'StateFailedReason': variant('u', FAILED_REASON_UNKNOWN if state == STATE_FAILED else FAILED_REASON_NONE),
            'AccessTechnologies': variant('u', 0),
            'SignalQuality': variant('(ub)', (0, False)),
            'OwnNumbers': variant('as', []),
            'PowerState': variant('u', POWER_LOW),
            'SupportedModes': variant('a(uu)', [(14, 8)]),
            'CurrentModes': variant('(uu)', (14, 8)),
            'SupportedBands': variant('au', []),
            'CurrentBands': variant('au', []),
            'SupportedIpFamilies': variant('u', 7),
        }

    @property
    def state(self):
        '''The modem's MMModemState.'''
        return self.modem.get('State')

    def managed_interfaces(self):
        '''The modem's interfaces and their properties, as the object manager lists them.'''
        interfaces = {MODEM_IFACE: self.modem.properties}
        if self.location:
            interfaces[LOCATION_IFACE] = self.location.properties
        return interfaces

    def location_expected(self, state):
        '''ModemManager exports Location only for a modem with location capabilities that is past its lock.'''
        return self.capabilities != 0 and state >= STATE_DISABLED

    def export_location(self):
        '''Exports a fresh Location interface.'''
        variant = GLib.Variant
        self.gathered = Gathered()
        self.location_values = {}
        self.location = Exported(self.service, self.path, LOCATION_IFACE, {
            'Capabilities': variant('u', self.capabilities),
            'SupportedAssistanceData': variant('u', self.assistance_data),
            'Enabled': variant('u', 0),
            'SignalsLocation': variant('b', False),
            'Location': variant('a{uv}', {}),
            'SuplServer': variant('s', ''),
            'AssistanceDataServers': variant('as', self.assistance_servers),
            'GpsRefreshRate': variant('u', GPS_REFRESH_DEFAULT if self.capabilities & GPS_SOURCES else 0),
        }, self.handle_location)

    def unexport(self):
        '''Takes every interface off the bus.'''
        if self.receiver is not None:
            self.receiver.turn_off()
        if self.location:
            self.location.unexport()
            self.location = None
        self.modem.unexport()

    def change_state(self, new, reason, failed_reason=None):
        '''Moves the modem to state `new`, with what ModemManager does on the way.'''
        old = self.state
        if new == old:
            return
        if failed_reason is None:
            failed_reason = FAILED_REASON_UNKNOWN if new == STATE_FAILED else FAILED_REASON_NONE
        registering = old < STATE_REGISTERED <= new
        if registering:
            # The registration report comes first: ModemManager shows the network's technologies, the operator and
            # the serving cell, then the modem's State.
            self.modem.set('AccessTechnologies', self.network_access)
            self.modem.flush()
            self.read_cell(registered=True)
            if self.location:
                self.location.flush()
        self.modem.set('State', new)
        self.modem.set('StateFailedReason', failed_reason)
        self.modem.set('UnlockRequired', LOCK_SIM_PIN if new == STATE_LOCKED else LOCK_NONE)
        self.modem.set('PowerState', POWER_ON if new >= STATE_ENABLING else POWER_LOW)
        # ModemManager flushes the new State before signalling the change.
        self.modem.flush()
        self.service.emit(self.path, MODEM_IFACE, 'StateChanged', '(iiu)', (old, new, reason))
        if old >= STATE_REGISTERED > new:
            self.modem.set('AccessTechnologies', 0)
            self.clear_cell()
        if old >= STATE_ENABLED > new and self.location:
            self.setup_gathering(0)
            self.gathered = Gathered()
        if self.location_expected(new) and not self.location:
            self.export_location()
            self.service.emit(ROOT_PATH, OBJECT_MANAGER_IFACE, 'InterfacesAdded', '(oa{sa{sv}})',
                              (self.path, {LOCATION_IFACE: self.location.properties}))
        elif not self.location_expected(new) and self.location:
            self.location.unexport()
            self.location = None
            self.service.emit(ROOT_PATH, OBJECT_MANAGER_IFACE, 'InterfacesRemoved', '(oas)',
                              (self.path, [LOCATION_IFACE]))
        if old < STATE_ENABLED <= new and self.location:
            self.setup_gathering(self.capabilities & ~NOT_DEFAULT_SOURCES)

    # The Location interface's gathering, as mm-iface-modem-location.c does it.

    def set_source_status(self, source, enabled):
        mask = self.location.get('Enabled')
        gps_was_on = bool(mask & GPS_SOURCES)
        if enabled:
            mask |= source
            if source not in self.gathered.sources:
                factory = {SOURCE_3GPP_LAC_CI: Cell, SOURCE_GPS_NMEA: NmeaTraces, SOURCE_GPS_RAW: RawFix,
                           SOURCE_CDMA_BS: BaseStation}.get(source)
                if factory:
                    self.gathered.sources[source] = factory()
        else:
            mask &= ~source
            self.gathered.sources.pop(source, None)
        self.location.set('Enabled', mask)
        if self.receiver is not None and gps_was_on != bool(mask & GPS_SOURCES):
            if gps_was_on:
                self.receiver.turn_off()
            else:
                self.receiver.turn_on()

    def setup_gathering(self, mask):
        current = self.location.get('Enabled')
        to_enable = to_disable = 0
        for source, _ in SOURCE_NAMES:
            if not self.capabilities & source:
                continue
            if mask & source and not current & source:
                to_enable |= source
            elif not mask & source and current & source:
                to_disable |= source
        if ((to_enable & SOURCE_GPS_UNMANAGED and current & GPS_SOURCES)
                or (to_enable & GPS_SOURCES and current & SOURCE_GPS_UNMANAGED)
                or (to_enable & GPS_SOURCES and to_enable & SOURCE_GPS_UNMANAGED)):
            raise ModemManagerError(
                'Failed', 'Cannot have both unmanaged GPS and raw/nmea GPS enabled at the same time')
        if ((to_enable & SOURCE_AGPS_MSA and current & SOURCE_AGPS_MSB)
                or (to_enable & SOURCE_AGPS_MSB and current & SOURCE_AGPS_MSA)
                or (to_enable & SOURCE_AGPS_MSA and to_enable & SOURCE_AGPS_MSB)):
            raise ModemManagerError('Failed', 'Cannot have both MSA A-GPS and MSB A-GPS enabled at the same time')
        for source, _ in SOURCE_NAMES:
            if to_enable & source:
                self.set_source_status(source, True)
                if source == SOURCE_3GPP_LAC_CI:
                    # Enabling the 3GPP source re-runs the registration checks.
                    self.read_cell()
                elif source == SOURCE_CDMA_BS:
                    self.read_base_station()
            elif to_disable & source:
                self.set_source_status(source, False)

    def publish(self, updates):
        '''The Location property follows the gathered data only while SignalsLocation is on.'''
        if self.location.get('SignalsLocation'):
            self.set_location_values(location_dictionary(self.location_values, updates))

    def set_location_values(self, values):
        self.location_values = values
        self.location.set('Location', GLib.Variant('a{uv}', values))

    def read_cell(self, operator=True, registered=None):
        '''A registration report: the serving cell reaches the 3GPP source while the modem is registered (or
        `registered`); the operator code is read again only with `operator`.'''
        cell = self.gathered.sources.get(SOURCE_3GPP_LAC_CI) if self.location else None
        if cell is None:
            return
        if not (self.state >= STATE_REGISTERED if registered is None else registered):
            self.clear_cell()
            return
        if self.serving_cell is None:
            return
        code, lac, tac, ci = self.serving_cell
        # ModemManager asks for the operator (AT+COPS?) only when the registration changes: a new operator code
        # reaches the location through a registration lost and found again, or enabling the 3GPP source.
        changed = cell.set_operator_code(code) if code and (operator or cell.operator_code is None) else False
        if lac or tac or ci:
            changed = cell.update(lac, tac, ci) or changed
        if changed:
            self.publish({SOURCE_3GPP_LAC_CI: cell.value()})

    def clear_cell(self):
        cell = self.gathered.sources.get(SOURCE_3GPP_LAC_CI) if self.location else None
        if cell is not None and cell.reset():
            self.publish({SOURCE_3GPP_LAC_CI: cell.value()})

    def read_base_station(self):
        station = self.gathered.sources.get(SOURCE_CDMA_BS) if self.location else None
        if station is not None and station.set(*self.base_station):
            self.publish({SOURCE_CDMA_BS: station.value()})

    def gps_trace(self, trace):
        '''One sentence from the GPS port, as location_gps_update_nmea handles it.'''
        if not self.location:
            return
        now = int(time.time())
        rate = self.location.get('GpsRefreshRate')
        updates = {}
        nmea = self.gathered.sources.get(SOURCE_GPS_NMEA)
        if nmea is not None and nmea.add(trace) and (
                self.gathered.nmea_last_time == 0 or now - self.gathered.nmea_last_time >= rate):
            self.gathered.nmea_last_time = now
            updates[SOURCE_GPS_NMEA] = nmea.value()
        raw = self.gathered.sources.get(SOURCE_GPS_RAW)
        if raw is not None and raw.add(trace) and (
                self.gathered.raw_last_time == 0 or now - self.gathered.raw_last_time >= rate):
            self.gathered.raw_last_time = now
            updates[SOURCE_GPS_RAW] = raw.value()
        if updates:
            self.publish(updates)

    # Method calls from clients.

    def handle_modem(self, method, sender, parameters):
        if method == 'Enable':
            return self.enable(sender, parameters.unpack()[0])
        if method == 'ListBearers':
            return GLib.Variant('(ao)', ([],))
        raise ModemManagerError('Unsupported', f'{method} is not implemented by this ModemManager stand-in')

    def enable(self, sender, enable):
        self.service.authorise(self.service.caller_uid(sender), DEVICE_CONTROL)
        state = self.state
        if state < STATE_LOCKED:
            raise ModemManagerError('WrongState', f'modem in {STATE_NAMES[state]} state')
        if enable:
            if state == STATE_FAILED:
                raise ModemManagerError('WrongState', 'Cannot enable modem: initialization failed')
            if state == STATE_LOCKED:
                raise ModemManagerError('WrongState', 'Cannot enable modem: device locked')
            if state <= STATE_DISABLING:
                self.change_state(STATE_ENABLING, REASON_USER_REQUESTED)
                # "Enabled may really be searching or registered."
                registered = self.serving_cell is not None
                self.change_state(STATE_REGISTERED if registered else STATE_ENABLED, REASON_USER_REQUESTED)
        elif state >= STATE_ENABLED:
            self.change_state(STATE_DISABLING, REASON_USER_REQUESTED)
            self.change_state(STATE_DISABLED, REASON_USER_REQUESTED)
        return None

    def handle_location(self, method, sender, parameters):
        handlers = {
            'Setup': self.setup, 'GetLocation': self.get_location, 'SetSuplServer': self.set_supl_server,
            'InjectAssistanceData': self.inject_assistance_data, 'SetGpsRefreshRate': self.set_gps_refresh_rate,
        }
        return handlers[method](self.service.caller_uid(sender), *parameters.unpack())

    def recorded(self, method, uid, arguments, body):
        '''Runs `body`, recording the call (caller uid, arguments, error name) in the method's log; a failure
        FailNextCall asked for is answered instead.'''
        self.call_order.append(method)
        try:
            failure = self.next_failures.pop(method, None)
            if failure is not None:
                raise ModemManagerError(failure, f'{method} failed, as the test asked')
            result = body()
        except ModemManagerError as error:
            self.calls[method].append((uid, *arguments, error.name))
            raise
        self.calls[method].append((uid, *arguments, ''))
        return result

    def require_enabled(self, what):
        if self.state < STATE_ENABLED:
            raise ModemManagerError('WrongState', f'Cannot {what}: device not yet enabled')

    def setup(self, uid, sources, signal_location):
        def body():
            self.service.authorise(uid, DEVICE_CONTROL)
            self.require_enabled('setup location')
            unsupported = (self.capabilities ^ sources) & sources
            if unsupported:
                raise ModemManagerError(
                    'Unsupported', f"Cannot enable unsupported location sources: '{source_names(unsupported)}'")
            if self.location.get('SignalsLocation') != signal_location:
                self.location.set('SignalsLocation', signal_location)
                if signal_location:
                    self.set_location_values(location_dictionary(self.location_values, self.gathered.updates()))
                else:
                    self.set_location_values({})
            self.setup_gathering(sources)
        return self.recorded('Setup', uid, (sources, signal_location), body)

    def get_location(self, uid):
        def body():
            self.service.authorise(uid, LOCATION_ACTION)
            self.require_enabled('get location')
            return GLib.Variant('(a{uv})', (location_dictionary({}, self.gathered.updates()),))
        return self.recorded('GetLocation', uid, (), body)

    def set_gps_refresh_rate(self, uid, rate):
        def body():
            self.service.authorise(uid, DEVICE_CONTROL)
            # ModemManager 1.20 says "SUPL server" here too.
            self.require_enabled('set SUPL server')
            if not self.capabilities & GPS_SOURCES:
                raise ModemManagerError('Unsupported', 'Cannot set GPS refresh rate: GPS not supported')
            self.location.set('GpsRefreshRate', rate)
        return self.recorded('SetGpsRefreshRate', uid, (rate,), body)

    def set_supl_server(self, uid, supl):
        def body():
            self.service.authorise(uid, DEVICE_CONTROL)
            self.require_enabled('set SUPL server')
            if not self.capabilities & (SOURCE_AGPS_MSA | SOURCE_AGPS_MSB):
                raise ModemManagerError('Unsupported', 'Cannot set SUPL server: A-GPS not supported')
            host, _, port = supl.rpartition(':')
            if not host or not port.isdigit():
                raise ModemManagerError('InvalidArgs', f'Invalid SUPL address: {supl}')
            self.location.set('SuplServer', supl)
        return self.recorded('SetSuplServer', uid, (supl,), body)

    def inject_assistance_data(self, uid, data):
        def body():
            self.service.authorise(uid, DEVICE_CONTROL)
            if self.assistance_data == 0:
                raise ModemManagerError('Unsupported', 'Cannot inject assistance data: ununsupported')
            self.orbits_injected_at = time.monotonic()
        return self.recorded('InjectAssistanceData', uid, (bytes(data),), body)


class Service:
    '''The stand-in: the manager object, the modems and the control object on one connection.'''

    def __init__(self, connection):
        self.connection = connection
        self.modems = {}
        self.next_index = 0
        self.authorised = {action: {0} for action in (MANAGER_CONTROL, DEVICE_CONTROL, LOCATION_ACTION)}
        self.dirty = []
        self.flush_scheduled = False
        self.manager = Exported(self, ROOT_PATH, MANAGER_IFACE, {'Version': GLib.Variant('s', VERSION)},
                                self.handle_manager)
        self.object_manager = Exported(self, ROOT_PATH, OBJECT_MANAGER_IFACE, {}, self.handle_object_manager)
        self.control = Exported(self, CONTROL_PATH, CONTROL_IFACE, {}, self.handle_control)

    def answer(self, invocation, body):
        '''Runs a method's `body` and answers the call with its result (a GLib.Variant or None) or its error.'''
        try:
            result = body()
        except ModemManagerError as error:
            invocation.return_dbus_error(error.name, error.message)
            return
        except Exception as error:  # pylint: disable=broad-except
            print(f'modemmanager stand-in: {invocation.get_method_name()} failed: {error!r}', file=sys.stderr)
            invocation.return_dbus_error(CORE_ERROR + 'Failed', str(error))
            return
        invocation.return_value(result)

    def emit(self, path, interface, name, signature, arguments):
        self.connection.emit_signal(None, path, interface, name, GLib.Variant(signature, arguments))

    def schedule_flush(self, exported):
        if exported not in self.dirty:
            self.dirty.append(exported)
        if not self.flush_scheduled:
            self.flush_scheduled = True
            GLib.idle_add(self.flush)

    def flush(self):
        self.flush_scheduled = False
        dirty, self.dirty = self.dirty, []
        for exported in dirty:
            exported.flush()
        return False

    def caller_uid(self, sender):
        '''The Unix user of the connection `sender`, as the bus tells it.'''
        reply = self.connection.call_sync(
            'org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'GetConnectionUnixUser',
            GLib.Variant('(s)', (sender,)), GLib.VariantType('(u)'), Gio.DBusCallFlags.NONE, -1, None)
        return reply.unpack()[0]

    def authorise(self, uid, action):
        '''Refuses a caller of Unix user `uid` as ModemManager does when polkit says no for `action`.'''
        if uid not in self.authorised[action]:
            raise ModemManagerError('Unauthorized', f"PolicyKit authorization failed: not authorized for '{action}'")

    def modem(self, path):
        modem = self.modems.get(path)
        if modem is None:
            raise ModemManagerError('NotFound', f'no modem at {path}')
        return modem

    def handle_manager(self, method, sender, parameters):
        self.authorise(self.caller_uid(sender), MANAGER_CONTROL)
        if method == 'ReportKernelEvent':
            raise ModemManagerError('Unsupported', 'Cannot report kernel event: udev monitoring already in place')
        if method == 'InhibitDevice':
            uid, inhibit = parameters.unpack()
            if inhibit:
                raise ModemManagerError('NotFound', f"No device found with uid '{uid}'")
            raise ModemManagerError('NotFound', f"No inhibition found for uid '{uid}'")
        return None

    def handle_object_manager(self, _method, _sender, _parameters):
        objects = {path: modem.managed_interfaces() for path, modem in self.modems.items()}
        return GLib.Variant('(a{oa{sa{sv}}})', (objects,))

    def handle_control(self, method, _sender, parameters):
        if method == 'AddModem':
            # Unpacking would lose the settings' D-Bus types.
            entries = parameters.get_child_value(0)
            settings = {}
            for index in range(entries.n_children()):
                entry = entries.get_child_value(index)
                settings[entry.get_child_value(0).get_string()] = entry.get_child_value(1).get_variant()
            modem = Modem(self, self.next_index, settings)
            self.next_index += 1
            self.modems[modem.path] = modem
            return GLib.Variant('(o)', (modem.path,))
        args = parameters.unpack()
        if method == 'SetAuthorisedUsers':
            action, uids = args
            if action not in self.authorised:
                raise ModemManagerError('InvalidArgs', f'unknown action {action}')
            self.authorised[action] = set(uids)
            return None
        modem = self.modem(args[0])
        if method == 'RemoveModem':
            interfaces = list(modem.managed_interfaces())
            modem.unexport()
            del self.modems[modem.path]
            self.emit(ROOT_PATH, OBJECT_MANAGER_IFACE, 'InterfacesRemoved', '(oas)', (modem.path, interfaces))
        elif method == 'SetState':
            if args[1] not in STATE_NAMES:
                raise ModemManagerError('InvalidArgs', f'no modem state {args[1]}')
            modem.change_state(args[1], args[2])
        elif method == 'SetFailed':
            modem.change_state(STATE_FAILED, REASON_UNKNOWN, args[1])
        elif method == 'SetServingCell':
            code, lac, tac, ci = args[1:]
            if code and not (5 <= len(code) <= 6 and code.isdigit()):
                raise ModemManagerError('InvalidArgs', f'operator code {code!r} is not 5 or 6 digits')
            modem.serving_cell = (code or None, lac, tac, ci) if code or lac or tac or ci else None
            modem.read_cell(operator=False)
        elif method == 'SetAccessTechnologies':
            modem.network_access = args[1]
            if modem.state >= STATE_REGISTERED:
                modem.modem.set('AccessTechnologies', args[1])
        elif method == 'PushNmea':
            for trace in args[1].replace('\r\n', '\n').split('\n'):
                if trace:
                    modem.gps_trace(trace)
        elif method == 'SetReceiver':
            latitude, longitude, cold_start, assisted_start = args[1:]
            if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
                raise ModemManagerError('InvalidArgs', 'latitude or longitude out of range')
            if not 0 <= assisted_start <= cold_start:
                raise ModemManagerError('InvalidArgs', 'the assisted start must take no longer than the cold start')
            if modem.receiver is not None:
                modem.receiver.turn_off()
            modem.receiver = Receiver(modem, latitude, longitude, cold_start, assisted_start)
            if modem.location and modem.location.get('Enabled') & GPS_SOURCES:
                modem.receiver.turn_on()
        elif method == 'SetCdmaBaseStation':
            latitude, longitude = args[1:]
            if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):
                raise ModemManagerError('InvalidArgs', 'latitude or longitude out of range')
            modem.base_station = (latitude, longitude)
            modem.read_base_station()
        elif method == 'EmitRawPropertiesChanged':
            # The values exactly as sent: unpacking would lose their D-Bus types.
            arguments = GLib.Variant.new_tuple(
                GLib.Variant('s', args[1]), parameters.get_child_value(2), GLib.Variant('as', []))
            self.connection.emit_signal(
                None, modem.path, 'org.freedesktop.DBus.Properties', 'PropertiesChanged', arguments)
        elif method == 'FailNextCall':
            if args[1] not in modem.calls:
                raise ModemManagerError('InvalidArgs', f'no method {args[1]} to fail')
            modem.next_failures[args[1]] = args[2]
        elif method == 'GetSetupCalls':
            return GLib.Variant('(a(uubs))', (modem.calls['Setup'],))
        elif method == 'GetGpsRefreshRateCalls':
            return GLib.Variant('(a(uus))', (modem.calls['SetGpsRefreshRate'],))
        elif method == 'GetLocationCalls':
            return GLib.Variant('(a(us))', (modem.calls['GetLocation'],))
        elif method == 'GetInjectedAssistanceData':
            return GLib.Variant('(a(uays))', (modem.calls['InjectAssistanceData'],))
        elif method == 'GetSuplServerCalls':
            return GLib.Variant('(a(uss))', (modem.calls['SetSuplServer'],))
        elif method == 'GetCallOrder':
            return GLib.Variant('(as)', (modem.call_order,))
        return None


def main():
    connection = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)
    service = Service(connection)
    loop = GLib.MainLoop()
    reply = connection.call_sync(
        'org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'RequestName',
        GLib.Variant('(su)', (BUS_NAME, 4)), GLib.VariantType('(u)'), Gio.DBusCallFlags.NONE, -1, None)
    if reply.unpack()[0] != 1:
        print(f'modemmanager stand-in: cannot own {BUS_NAME}', file=sys.stderr)
        return 1
    connection.connect('closed', lambda *_: loop.quit())
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 15, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 2, loop.quit)
    print(f'modemmanager stand-in: owns {BUS_NAME}', flush=True)
    loop.run()
    return 0


if __name__ == '__main__':
    sys.exit(main())
