#!/usr/bin/python3
"""An emulated Quectel EG25 (USB 2c7c:0125) for the real ModemManager, through umockdev.

Usage: emulated_modem.py CONTROL_SOCKET
       emulated_modem.py --send CONTROL_SOCKET COMMAND...

Creates a umockdev testbed with the USB device (ID_MM_DEVICE_PROCESS=1), ttyUSB1 as its GPS port
(ID_MM_PORT_TYPE_GPS=1) and ttyUSB2 as its primary AT port (ID_MM_PORT_TYPE_AT_PRIMARY=1), both ID_MM_CANDIDATE=1
and backed by ptys (ttyUSB3 and ttyUSB4 once plugged in again, and so on), and answers on the pty masters: AT
commands on the AT port (registration, operator, signal, GPS on and off) and, while `AT+QGPS=1` is on, NMEA at 1 Hz
(or the `rate` command's) on the GPS port. It starts nothing else: ModemManager runs under
`LD_PRELOAD=libumockdev-preload.so.0` with `UMOCKDEV_DIR` set to the testbed's folder (the `dir` command).

What ModemManager 1.20 needs from it: every ioctl on the emulated ttys runs on the real pty (umockdev's default
answer is ENOTTY), except TIOCEXCL and TIOCNXCL, which succeed without effect; the pty slaves stay open here, or
the masters hang up whenever ModemManager closes a port; LTE cells are reported by +CEREG only, 2G and 3G cells by
+CREG and +CGREG; an operator or radio change is reported as "searching" first and the new cell a second later,
since ModemManager reads the operator again only when the registration state changes; and answering continues
until this program is stopped, so that ModemManager's shutdown (which disables the modem over AT) is quick.

The control channel is a Unix stream socket at CONTROL_SOCKET: one connection per command, a line of words sent,
a line answered (`ok ...` or `error MESSAGE`). `--send` sends one and prints the answer. Commands:
  dir                              the testbed's root folder (for UMOCKDEV_DIR)
  cell RAT MCC MNC AREA CI         the serving cell: RAT gsm, umts or lte; MCC and MNC decimal digits; AREA the
                                   LAC (gsm, umts) or TAC (lte) and CI, both hexadecimal
  operator NAME                    the operator's long name (one word)
  unregister | register            lose the network (searching) or find it again
  move LAT LON                     the receiver's position, decimal degrees
  nmea on|off [GP|GN]              stream NMEA while the GPS is on, with that talker; off stops the stream
  sky on|off [glonass]              add to each epoch a GSA (3D fix, PDOP 1.8, HDOP 0.9, VDOP 1.5) and three
                                   GPGSV with six satellites in view, or leave them out (the start); with
                                   glonass, also a GLGSV with two GLONASS satellites (slots 6 and 7, unused)
  remove                           the device leaves (udev remove), as when unplugged
  add                              the device comes back (udev add) with new ttys, after remove
  reset                            the device plugged in, with the first cell, operator, registration, position
                                   and NMEA (on, GN talker, no sky); answers `plugged` when the device was plugged in
                                   again, `searching` when the network is lost for a second to get there
  gps                              `on N` or `off N`: whether the GPS is on, and how often it was turned on
  refused                          the AT commands answered ERROR so far, comma-separated
  rate MS                          stream an epoch every MS milliseconds instead of every second (the start; reset
                                   leaves it), timed to the hundredth of a second when faster
"""

import fcntl
import os
import shutil
import signal
import socket
import struct
import sys
import termios
import time
import tty

import gi

gi.require_version("UMockdev", "1.0")
from gi.repository import GLib, UMockdev  # noqa: E402

TIOCGPTN = 0x80045430
DEFAULT_CELL = {"rat": "lte", "mcc": "262", "mnc": "01", "area": 0x3C4D, "ci": 0x1A2B3C4}
DEFAULT_OPERATOR = "Whereabouts"
DEFAULT_POSITION = (48.1371, 11.5754)
TIOCEXCL = 0x540C
TIOCNXCL = 0x540D


def send(path, words):
    """Sends one command and prints the answer; exits 1 on an error answer."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall((" ".join(words) + "\n").encode())
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    text = answer.decode().strip()
    print(text)
    sys.exit(0 if text.startswith("ok") else 1)


def checksum(body):
    value = 0
    for char in body:
        value ^= ord(char)
    return "$%s*%02X" % (body, value)


def degrees(value, width, positive, negative):
    hemisphere = positive if value >= 0 else negative
    value = abs(value)
    whole = int(value)
    minutes = (value - whole) * 60
    return "%0*d%07.4f" % (width, whole, minutes), hemisphere


class Ioctls(UMockdev.IoctlBase):
    """Runs every ioctl on the real pty; exclusive mode is answered as set without setting it."""

    def do_handle_ioctl(self, client):
        if client.get_request() in (TIOCEXCL, TIOCNXCL):
            client.complete(0, 0)
            return True
        result, error = client.execute()
        client.complete(result, error)
        return True


class Modem:
    def __init__(self, control_path):
        self.testbed = UMockdev.Testbed.new()
        self.cell = dict(DEFAULT_CELL)
        self.operator = DEFAULT_OPERATOR
        self.registered = True
        self.latitude, self.longitude = DEFAULT_POSITION
        self.nmea = True
        self.talker = "GN"
        self.sky = False
        self.sky_glonass = False
        self.gps_on = False
        self.numeric_operator = False
        self.refused = []
        self.buffers = {}
        self.gps_starts = 0
        self.plugs = 0
        self.masters = {}
        self.slaves = []
        self.watches = []
        self.handler = Ioctls()
        self.plug()
        if os.path.exists(control_path):
            os.unlink(control_path)
        self.control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.control.bind(control_path)
        os.chmod(control_path, 0o666)
        self.control.listen(8)
        GLib.io_add_watch(self.control.fileno(), GLib.PRIORITY_DEFAULT, GLib.IO_IN, self.accept)
        self.interval = 1000
        self.stream_timer = GLib.timeout_add(self.interval, self.stream)
        print("testbed at", self.testbed.get_root_dir(), flush=True)

    # The device.

    def plug(self):
        """Adds the USB device and its two ttys, each backed by a new pty, and announces them. Each time it is
        plugged in the device has a new USB address and new tty names, as after a real replug (umockdev keeps a
        removed node's name taken)."""
        self.plugs += 1
        devnum, first = 2 + self.plugs, 2 * self.plugs - 1
        usb = "/sys/devices/pci0000:00/0000:00:14.0/usb2/2-%d" % devnum
        self.syspaths = [usb]
        description = [
            "P: %s" % usb[4:], "E: SUBSYSTEM=usb", "E: DEVTYPE=usb_device", "E: DRIVER=usb",
            "E: PRODUCT=2c7c/125/318", "E: ID_VENDOR_ID=2c7c", "E: ID_MODEL_ID=0125", "E: ID_MM_DEVICE_PROCESS=1",
            "A: idVendor=2c7c", "A: idProduct=0125", "A: manufacturer=Quectel", "A: product=EG25-G",
            "A: bcdDevice=0318", "A: busnum=2", "A: devnum=%d" % devnum, "",
        ]
        ports = (("1", "gps", "ID_MM_PORT_TYPE_GPS", first), ("2", "at", "ID_MM_PORT_TYPE_AT_PRIMARY", first + 1))
        for number, _, kind, minor in ports:
            interface = "%s/2-%d:1.%s" % (usb, devnum, number)
            name = "ttyUSB%d" % minor
            port = "%s/%s/tty/%s" % (interface, name, name)
            self.syspaths += [interface, port]
            description += [
                "P: %s" % interface[4:], "E: SUBSYSTEM=usb", "E: DEVTYPE=usb_interface", "E: DRIVER=option",
                "E: PRODUCT=2c7c/125/318", "E: INTERFACE=255/255/255", "A: bInterfaceNumber=0" + number,
                "A: bInterfaceClass=ff", "A: bInterfaceSubClass=ff", "A: bInterfaceProtocol=ff", "",
                "P: %s" % port[4:], "N: " + name, "E: DEVNAME=/dev/" + name, "E: SUBSYSTEM=tty",
                "E: %s=1" % kind, "E: ID_MM_CANDIDATE=1", "E: ID_MM_DEVICE_PROCESS=1", "E: ID_VENDOR_ID=2c7c",
                "E: ID_MODEL_ID=0125", "E: ID_USB_INTERFACE_NUM=0" + number, "A: dev=188:%d" % minor, "",
            ]
        self.testbed.add_from_string("\n".join(description))
        for _, role, _, minor in ports:
            name = "ttyUSB%d" % minor
            master = self.testbed.get_dev_fd("/dev/" + name)
            number_bytes = fcntl.ioctl(master, TIOCGPTN, struct.pack("I", 0))
            slave = os.open("/dev/pts/%d" % struct.unpack("I", number_bytes)[0], os.O_RDWR | os.O_NOCTTY)
            tty.setraw(slave)
            self.slaves.append(slave)
            self.masters[role] = master
            self.buffers[master] = b""
            self.testbed.attach_ioctl("/dev/" + name, self.handler)
            self.watches.append(GLib.io_add_watch(master, GLib.PRIORITY_DEFAULT, GLib.IO_IN, self.readable))

    def unplug(self):
        """Removes the device, as when it is pulled out, and closes its ptys."""
        for path in reversed(self.syspaths):
            self.testbed.uevent(path, "remove")
        for path in reversed(self.syspaths):
            self.testbed.remove_device(path)
        for watch in self.watches:
            GLib.source_remove(watch)
        for slave in self.slaves:
            os.close(slave)
        self.syspaths, self.watches, self.slaves, self.masters, self.buffers = [], [], [], {}, {}
        self.gps_on = False

    # The AT port.

    def write(self, role, text):
        if role not in self.masters:
            return
        try:
            os.write(self.masters[role], text.encode())
        except OSError as error:
            print("write to the", role, "port failed:", error, flush=True)

    def urc(self, *lines):
        self.write("at", "".join("\r\n%s\r\n" % line for line in lines))

    def readable(self, fd, _condition):
        try:
            data = os.read(fd, 4096)
        except OSError:
            return True
        if fd != self.masters.get("at"):
            return True
        self.buffers[fd] += data
        while b"\r" in self.buffers[fd]:
            line, self.buffers[fd] = self.buffers[fd].split(b"\r", 1)
            command = line.decode(errors="replace").strip()
            if command:
                self.answer(command)
        return True

    def answer(self, command):
        print("<", command, flush=True)
        lines = []
        upper = command.upper()
        if not upper.startswith("AT"):
            self.write("at", "\r\nERROR\r\n")
            return
        parts = command[2:].split(";")
        for index, part in enumerate(parts):
            result = self.one(part, command)
            if result is None:
                self.refused.append(command)
                print("> ERROR", flush=True)
                self.write("at", "\r\nERROR\r\n")
                return
            lines += result
        reply = "".join("\r\n%s\r\n" % line for line in lines) + "\r\nOK\r\n"
        print(">", lines, "OK", flush=True)
        self.write("at", reply)

    def registration(self, prefix, rats):
        """The answer to AT+CREG?, AT+CGREG? or AT+CEREG? (mode 2)."""
        cell = self.cell
        if not self.registered:
            return ["%s: 2,2" % prefix]
        if cell["rat"] not in rats:
            return ["%s: 2,0" % prefix]
        return ['%s: 2,1,"%X","%X",%d' % (prefix, cell["area"], cell["ci"], self.act())]

    def act(self):
        return {"gsm": 0, "umts": 2, "lte": 7}[self.cell["rat"]]

    def one(self, part, whole):
        """The information lines for one command of a chain (its `AT` or `+` prefix included), None for ERROR."""
        upper = part.upper()
        cell = self.cell
        simple = {
            "": [], "E0": [], "V1": [], "+CMEE=1": [], "X4": [], "&C1": [], "+CTZU=3": [], "+CREG=2": [],
            "+CGREG=2": [], "+CEREG=2": [], "+CREG=0": [], "+CGREG=0": [],
            "+CEREG=0": [], "+QGPSXTRA=1": [], "+CFUN=1": [], "Z": [], "E1": [],
            "+GCAP": ["+GCAP: +CGSM"], "+CGMI": ["Quectel"], "+CGMM": ["EG25"], "+CGMR": ["EG25GGBR07A08M2G"],
            "+CGSN": ["867698040000001"], "I": ["Quectel", "EG25", "Revision: EG25GGBR07A08M2G"],
            "+WS46=?": ["+WS46: (12,22,25,28,29,30,31)"],
            "+CGDCONT=?": ['+CGDCONT: (1-15),"IP",,,(0-2),(0-4),(0-1),(0-1)',
                           '+CGDCONT: (1-15),"IPV6",,,(0-2),(0-4),(0-1),(0-1)'],
            "+CFUN?": ["+CFUN: 1"], "+CPIN?": ["+CPIN: READY"], "+CIMI": ["262011234567890"],
            '+CSCS=?': ['+CSCS: ("GSM","IRA","UCS2")'], "+CSCS?": ['+CSCS: "IRA"'],
            "+QGPS=?": ["+QGPS: (1-4),(1-255),(1-1000),(1-1000),(1-65535)"],
            "+QGPS?": ["+QGPS: %d" % int(self.gps_on)], "+CSQ": ["+CSQ: 20,99"],
            # The SIM's ICCID (EF_ICCID, nibbles swapped) and MNC length (EF_AD): ModemManager retries the ICCID
            # for seconds when refused.
            "+CRSM=176,12258,0,0,10": ['+CRSM: 144,0,"98942000002143658709"'],
            "+CRSM=176,28589,0,0,4": ['+CRSM: 144,0,"00000002"'],
        }
        key = upper[2:] if upper.startswith("AT") else upper
        if key in simple:
            return simple[key]
        if key in ("+COPS=3,0", "+COPS=3,2"):
            # ModemManager sends the format and the query apart or chained.
            self.numeric_operator = key.endswith("2")
            return []
        if key.startswith("+CSCS="):
            return []
        if key.startswith('+QGPSCFG="OUTPORT"'):
            return []
        if key == "+QGPS=1":
            self.gps_on = True
            self.gps_starts += 1
            return []
        if key == "+QGPSEND":
            self.gps_on = False
            return []
        if key == "+CREG?":
            return self.registration("+CREG", ("gsm", "umts"))
        if key == "+CGREG?":
            return self.registration("+CGREG", ("gsm", "umts"))
        if key == "+CEREG?":
            return self.registration("+CEREG", ("lte",))
        if key == "+COPS?":
            if not self.registered:
                return ["+COPS: 0"]
            if self.numeric_operator:
                return ['+COPS: 0,2,"%s%s",%d' % (cell["mcc"], cell["mnc"], self.act())]
            return ['+COPS: 0,0,"%s",%d' % (self.operator, self.act())]
        return None

    def announce(self):
        """The registration URCs for the present cell, the serving radio's last."""
        cell = self.cell
        if not self.registered:
            self.urc("+CREG: 2", "+CGREG: 2", "+CEREG: 2")
            return
        area, ci, act = cell["area"], cell["ci"], self.act()
        if cell["rat"] == "lte":
            self.urc("+CREG: 0", "+CGREG: 0", '+CEREG: 1,"%X","%X",%d' % (area, ci, act))
        else:
            self.urc("+CEREG: 0", '+CREG: 1,"%X","%X",%d' % (area, ci, act),
                     '+CGREG: 1,"%X","%X",%d' % (area, ci, act))

    # The GPS port.

    def stream(self):
        if self.gps_on and self.nmea:
            seconds = time.time()
            now = time.gmtime(seconds)
            # Whole seconds at 1 Hz, as receivers give them; faster epochs need the hundredths to tell them apart.
            hundredths = int(seconds * 100) % 100 if self.interval < 1000 else 0
            clock = time.strftime("%H%M%S", now) + ".%02d" % hundredths
            latitude, ns = degrees(self.latitude, 2, "N", "S")
            longitude, ew = degrees(self.longitude, 3, "E", "W")
            talker = self.talker
            sentences = [
                checksum("%sGGA,%s,%s,%s,%s,%s,1,08,0.9,545.4,M,46.9,M,," % (
                    talker, clock, latitude, ns, longitude, ew)),
                checksum("%sRMC,%s,A,%s,%s,%s,%s,0.0,0.0,%s,,,A" % (
                    talker, clock, latitude, ns, longitude, ew, time.strftime("%d%m%y", now))),
            ]
            if self.sky:
                # A 3D fix from GPS (system id 1) and the six satellites in view, in a sequence of three GSV.
                sentences.append(checksum("%sGSA,A,3,02,05,12,15,24,29,,,,,,,1.8,0.9,1.5,1" % talker))
                satellites = [(2, 62, 48, 44), (5, 41, 117, 40), (12, 33, 205, 38), (15, 18, 301, 31),
                              (24, 55, 260, 42), (29, 12, 84, 27)]
                for part in range(3):
                    fields = ",".join("%02d,%02d,%03d,%02d" % satellite
                                      for satellite in satellites[2 * part:2 * part + 2])
                    sentences.append(checksum("GPGSV,3,%d,06,%s" % (part + 1, fields)))
                if self.sky_glonass:
                    sentences.append(checksum("GLGSV,1,1,02,70,45,060,33,71,12,250,29"))
            self.write("gps", "".join(s + "\r\n" for s in sentences))
        return True

    # The control channel.

    def accept(self, _fd, _condition):
        connection, _ = self.control.accept()
        with connection:
            data = b""
            while not data.endswith(b"\n"):
                chunk = connection.recv(4096)
                if not chunk:
                    break
                data += chunk
            try:
                answer = "ok " + self.command(data.decode().split())
            except Exception as error:  # noqa: BLE001 - every failure goes back to the caller
                answer = "error %s" % error
            print("control:", data.decode().strip(), "->", answer, flush=True)
            connection.sendall((answer.strip() + "\n").encode())
        return True

    def command(self, words):
        name, arguments = words[0], words[1:]
        if name == "dir":
            return self.testbed.get_root_dir()
        if name == "cell":
            rat, mcc, mnc, area, ci = arguments
            if rat not in ("gsm", "umts", "lte"):
                raise ValueError("unknown radio " + rat)
            new = {"rat": rat, "mcc": mcc, "mnc": mnc, "area": int(area, 16), "ci": int(ci, 16)}
            old = self.cell
            self.cell = new
            if not self.registered:
                return ""
            if (old["rat"], old["mcc"], old["mnc"]) == (rat, mcc, mnc):
                self.announce()
            else:
                self.urc("+CREG: 2", "+CGREG: 2", "+CEREG: 2")
                GLib.timeout_add(1000, lambda: self.announce() and False)
            return ""
        if name == "operator":
            self.operator = arguments[0]
            if self.registered:
                self.urc("+CREG: 2", "+CGREG: 2", "+CEREG: 2")
                GLib.timeout_add(1000, lambda: self.announce() and False)
            return ""
        if name in ("register", "unregister"):
            self.registered = name == "register"
            self.announce()
            return ""
        if name == "move":
            self.latitude, self.longitude = float(arguments[0]), float(arguments[1])
            return ""
        if name == "nmea":
            self.nmea = arguments[0] == "on"
            if len(arguments) > 1:
                if arguments[1] not in ("GP", "GN"):
                    raise ValueError("unknown talker " + arguments[1])
                self.talker = arguments[1]
            return ""
        if name == "sky":
            self.sky = arguments[0] == "on"
            self.sky_glonass = self.sky and arguments[1:] == ["glonass"]
            return ""
        if name == "remove":
            if not self.syspaths:
                raise ValueError("the device is not plugged in")
            self.unplug()
            return ""
        if name == "add":
            if self.syspaths:
                raise ValueError("the device is plugged in already")
            self.plug()
            return ""
        if name == "reset":
            replugged = not self.syspaths
            if replugged:
                self.plug()
            self.latitude, self.longitude = DEFAULT_POSITION
            self.nmea, self.talker, self.sky = True, "GN", False
            self.sky_glonass = False
            changed = (self.cell, self.operator) != (DEFAULT_CELL, DEFAULT_OPERATOR)
            self.cell, self.operator = dict(DEFAULT_CELL), DEFAULT_OPERATOR
            if not self.registered:
                self.registered = True
                self.announce()
            elif changed and not replugged:
                self.urc("+CREG: 2", "+CGREG: 2", "+CEREG: 2")
                GLib.timeout_add(1000, lambda: self.announce() and False)
                return "searching"
            return "plugged" if replugged else ""
        if name == "gps":
            return "%s %d" % ("on" if self.gps_on else "off", self.gps_starts)
        if name == "refused":
            return ",".join(self.refused)
        if name == "rate":
            interval = int(arguments[0])
            if interval <= 0:
                raise ValueError("the interval must be positive")
            self.interval = interval
            GLib.source_remove(self.stream_timer)
            self.stream_timer = GLib.timeout_add(interval, self.stream)
            return ""
        raise ValueError("unknown command " + name)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--send":
        send(sys.argv[2], sys.argv[3:])
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if "libumockdev-preload" not in os.environ.get("LD_PRELOAD", ""):
        # umockdev's testbed needs its own preload, as umockdev-wrapper gives it.
        os.environ["LD_PRELOAD"] = "libumockdev-preload.so.0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    loop = GLib.MainLoop()
    modem = Modem(sys.argv[1])
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, loop.quit)
    loop.run()
    # The testbed's folder is not removed when the process ends.
    shutil.rmtree(modem.testbed.get_root_dir(), ignore_errors=True)
    os.unlink(sys.argv[1])


if __name__ == "__main__":
    main()
