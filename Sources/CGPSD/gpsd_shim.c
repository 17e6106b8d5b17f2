#include "gpsd_shim.h"

#include <errno.h>
#include <gps.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if GPSD_API_MAJOR_VERSION < 9
#error "gpsd API 9 or newer is needed (fix.altHAE, timespec times, buffered gps_read)"
#endif

/* The longest report line kept: libgps's own line buffer (twice gpsd's longest JSON response). */
enum { REPORT_LINE_MAX = 8192 };

struct wb_gps {
    struct gps_data_t data;
    char line[REPORT_LINE_MAX + 1]; /* the report gps_read last returned, for what libgps does not unpack */
};

wb_gps *wb_gps_open(const char *host, const char *port, const char **error) {
    wb_gps *gps = calloc(1, sizeof *gps);
    if (gps == NULL) {
        *error = "out of memory";
        return NULL;
    }
    if (gps_open(host, port, &gps->data) != 0) {
        *error = gps_errstr(errno);
        free(gps);
        return NULL;
    }
    return gps;
}

int wb_gps_watch(wb_gps *gps, int enable) {
    unsigned int flags = enable ? (WATCH_ENABLE | WATCH_JSON) : WATCH_DISABLE;
    return gps_stream(&gps->data, flags, NULL) == 0 ? 0 : -1;
}

int wb_gps_poll(wb_gps *gps) {
    return gps_send(&gps->data, "?POLL;") == 0 ? 0 : -1;
}

int wb_gps_wait(wb_gps *gps, int timeout_us) {
    errno = 0;
    if (gps_waiting(&gps->data, timeout_us)) return 1;
    return errno == 0 ? 0 : -1;
}

/* The fix of the TPV libgps has just unpacked, if it has a usable position and a time. */
static int fix_from_report(const struct gps_data_t *d, wb_gps_fix *fix) {
    if ((d->set & MODE_SET) == 0 || (d->set & LATLON_SET) == 0) return 0;
    if (d->fix.mode < MODE_2D || !isfinite(d->fix.latitude) || !isfinite(d->fix.longitude)) return 0;
    /* A report without the fix's own time cannot be ordered against the others; gpsd sends one only while
     * it is still assembling its first fix. */
    if ((d->set & TIME_SET) == 0) return 0;
    fix->mode = d->fix.mode;
    fix->latitude = d->fix.latitude;
    fix->longitude = d->fix.longitude;
    fix->altitude_msl = d->fix.mode >= MODE_3D ? d->fix.altMSL : NAN;
    fix->altitude_hae = d->fix.mode >= MODE_3D ? d->fix.altHAE : NAN;
    fix->eph = d->fix.eph;
    fix->epx = d->fix.epx;
    fix->epy = d->fix.epy;
    fix->epv = d->fix.epv;
    fix->speed = d->fix.speed;
    fix->eps = d->fix.eps;
    fix->track = d->fix.track;
    fix->epd = d->fix.epd;
    fix->climb = d->fix.climb;
    fix->epc = d->fix.epc;
    fix->hdop = d->dop.hdop;
    fix->vdop = d->dop.vdop;
    fix->time_seconds = (int64_t)d->fix.time.tv_sec;
    fix->time_nanoseconds = (int64_t)d->fix.time.tv_nsec;
    return 1;
}

int wb_gps_read(wb_gps *gps, wb_gps_fix *fix) {
    gps->data.set = 0; /* libgps leaves the previous TPV's flags set across GST, SKY, ... reports */
    gps->line[0] = '\0';
    int length = gps_read(&gps->data, gps->line, (int)sizeof gps->line);
    if (length < 0) return -1;
    if (length == 0) return 0;
    if (fix_from_report(&gps->data, fix)) return 1;
    /* libgps 3.22 passes POLL over. gps_read always ends the copy with a NUL; a line longer than the buffer
     * arrives cut short and is refused. */
    return wb_parse_poll(gps->line, strlen(gps->line), fix) == 1 ? 1 : 0;
}

void wb_gps_close(wb_gps *gps) {
    if (gps == NULL) return;
    (void)gps_stream(&gps->data, WATCH_DISABLE, NULL);
    (void)gps_close(&gps->data);
    free(gps);
}
