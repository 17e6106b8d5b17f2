"""The bus names, paths and interfaces the test clients use, and their way of printing a line; imported by the
scripts beside this file (each sets sys.dont_write_bytecode first, so that nothing is written into the tree)."""

SERVICE = "org.freedesktop.GeoClue2"
MANAGER_PATH = "/org/freedesktop/GeoClue2/Manager"
MANAGER = "org.freedesktop.GeoClue2.Manager"
CLIENT = "org.freedesktop.GeoClue2.Client"
LOCATION = "org.freedesktop.GeoClue2.Location"
AGENT = "org.freedesktop.GeoClue2.Agent"
WHEREABOUTS_CLIENT = "io.github.whereabouts1.Client"
WHEREABOUTS_MANAGER = "io.github.whereabouts1.Manager"
PROPERTIES = "org.freedesktop.DBus.Properties"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"


def say(text):
    print(text, flush=True)
