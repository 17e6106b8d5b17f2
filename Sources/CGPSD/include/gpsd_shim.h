/* A flat view of libgps, so that gps_data_t's layout and gpsd's API churn stay in this C file. libgps is loaded
 * with dlopen at the first connection: a process that never connects to gpsd never maps it. */
#ifndef WHEREABOUTS_GPSD_SHIM_H
#define WHEREABOUTS_GPSD_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* One position report (a TPV, or the fix inside a POLL answer). Unknown values are NaN. */
typedef struct {
    int mode;                    /* 0/1 no fix, 2 = 2D, 3 = 3D */
    int status;                  /* gpsd's TPV status: 2 DGPS, 3 RTK fixed, 4 RTK float; 0 when not given */
    double latitude, longitude;  /* degrees */
    double altitude_msl;         /* metres above mean sea level */
    double altitude_hae;         /* metres above the WGS84 ellipsoid */
    double eph, epx, epy, epv;   /* 95% horizontal, longitude, latitude and vertical error, metres */
    double speed, eps;           /* ground speed and its 95% error, m/s */
    double track, epd;           /* course over ground and its 95% error, degrees */
    double climb, epc;           /* vertical speed and its 95% error, m/s */
    double hdop, vdop;           /* dilutions of precision from the last SKY */
    int64_t time_seconds;        /* the fix's own time; 0 when gpsd gave none */
    int64_t time_nanoseconds;
} wb_gps_fix;

/* The dilutions of precision of the last SKY report, given to the TPVs that follow. */
typedef struct {
    double hdop, vdop;
} wb_gps_dop;

/* The most satellites one SKY report may list: gpsd's MAXCHANNELS (140 since 3.20). */
#define WB_GPS_MAX_SATELLITES 140

/* One satellite of a SKY report. Unknown values are NaN, and -1 for the ids. */
typedef struct {
    int gnssid;       /* 0 GPS, 1 SBAS, 2 Galileo, 3 BeiDou, 4 IMES, 5 QZSS, 6 GLONASS, 7 NavIC */
    int svid;         /* the id within gnssid, as u-blox numbers them */
    int prn;          /* gpsd's one-range PRN, for a report without gnssid */
    double elevation; /* degrees */
    double azimuth;   /* degrees */
    double signal;    /* C/N0, dB-Hz */
    int used;         /* used in the fix */
} wb_gps_satellite;

/* What a SKY report says besides HDOP and VDOP: its PDOP and, when it has a "satellites" list, the satellites. */
typedef struct {
    double pdop;
    int has_satellites;
    int count;
    wb_gps_satellite satellites[WB_GPS_MAX_SATELLITES];
} wb_gps_sky;

typedef struct wb_gps wb_gps;

/* Connects to gpsd at host:port (blocking), loading libgps first if no connection has (it is never unloaded).
 * Returns NULL and sets *error to a message on failure, the loader's when libgps cannot be loaded; the message
 * stays valid on the calling thread until its next call. */
wb_gps *wb_gps_open(const char *host, const char *port, const char **error);
/* Starts (enable != 0) or stops streaming JSON reports. Returns 0 on success. */
int wb_gps_watch(wb_gps *gps, int enable);
/* Asks gpsd for its latest fix (?POLL;), which then arrives as a report. Returns 0 on success. */
int wb_gps_poll(wb_gps *gps);
/* The connection's socket, to be watched and read by the caller: gpsd's reports, one JSON object a line, read with
 * wb_parse_report, not libgps. The socket stays the connection's: wb_gps_close closes it. */
int wb_gps_socket(const wb_gps *gps);
/* Closes the connection and frees everything. */
void wb_gps_close(wb_gps *gps);

/* Reads gpsd's answer to ?POLL: `len` bytes of one JSON object (a report line without its newline; no NUL needed,
 * none is read past `len`), {"class":"POLL", "tpv":[TPV, ...], "sky":[SKY, ...], ...}.
 *
 * Returns 1 and fills *out with the newest usable fix among the TPV entries (mode 2 or 3, a time, a latitude and a
 * longitude; no altitude unless 3D), with HDOP and VDOP from the SKY entry of the same device, unknown values NaN;
 * 0 for a well-formed POLL without a usable fix; -1, leaving *out alone, for anything else: another class, JSON
 * that is malformed or not well-formed UTF-8, a member gpsd defines given twice or with the wrong type (a string
 * time that is not UTC ISO 8601, a mode outside 0...3, a non-finite number), escapes in member names, nesting
 * deeper than 16, more than 16 entries in a list. A pure function of its input. */
int wb_parse_poll(const char *json, size_t len, wb_gps_fix *out);
/* Reads one of gpsd's JSON reports: a TPV with a usable position and a time (1, into *out, with *dop's
 * dilutions), a SKY (0, its dilutions kept in *dop), the answer to ?POLL (as wb_parse_poll), a TPV without a
 * usable position (0); anything else, malformed or of another class, gives -1. Pure: *out is untouched unless 1. */
int wb_parse_report(const char *json, size_t len, wb_gps_dop *dop, wb_gps_fix *out);
/* As wb_parse_report, a SKY also filling *sky (untouched otherwise): 2 for a SKY, the rest as wb_parse_report. A
 * satellite entry must have a PRN or a gnssid with a svid, ids within 0...1000, elevation within -90...90, azimuth
 * within 0...360, C/N0 within 0...99 and used a boolean; a list longer than WB_GPS_MAX_SATELLITES, or a bad entry,
 * refuses the report. */
int wb_parse_report_sky(const char *json, size_t len, wb_gps_dop *dop, wb_gps_sky *sky, wb_gps_fix *out);

#endif
