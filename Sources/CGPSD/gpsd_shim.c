#include "gpsd_shim.h"

#include "gps_library.h"

#include <dlfcn.h>
#include <errno.h>
#include <gps.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#if GPSD_API_MAJOR_VERSION < 9
#error "gpsd API 9 or newer is needed (fix.altHAE, timespec times, buffered gps_read)"
#endif

/* The libgps functions the shim calls. libgps is loaded with dlopen at the first connection, so that a daemon that
 * never connects to gpsd never maps it; the functions are resolved by name into this table of the types <gps.h>
 * declares them with, so nothing is declared twice. gps_library.h names the file. */
struct gps_library {
    __typeof__(gps_open) *open;
    __typeof__(gps_close) *close;
    __typeof__(gps_stream) *stream;
    __typeof__(gps_send) *send;
    __typeof__(gps_errstr) *errstr;
};

static pthread_mutex_t library_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gps_library library_table;
static int library_loaded;
/* Why the last load failed on this thread; wb_gps_open points its caller here. */
static __thread char load_error[512];

/* Resolves `name` into `slot`; a missing symbol is reported by name. */
static int resolve(void *library, const char *name, void *slot) {
    dlerror();
    void *symbol = dlsym(library, name);
    if (symbol == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%s: %s", WB_GPS_LIBRARY, why != NULL ? why : name);
        return -1;
    }
    memcpy(slot, &symbol, sizeof symbol);
    return 0;
}

#define RESOLVE(member, name) \
    if (resolve(library, #name, &loading.member) != 0) goto failed;

/* Loads libgps and the functions above, once per process; the library is never unloaded. Returns the table, or
 * NULL after writing why into load_error. A failure is not remembered: the next connection tries again. */
static const struct gps_library *load_library(void) {
    pthread_mutex_lock(&library_lock);
    if (library_loaded) {
        pthread_mutex_unlock(&library_lock);
        return &library_table;
    }
    void *library = dlopen(WB_GPS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%s", why != NULL ? why : WB_GPS_LIBRARY ": cannot be loaded");
        pthread_mutex_unlock(&library_lock);
        return NULL;
    }
    struct gps_library loading;
    RESOLVE(open, gps_open)
    RESOLVE(close, gps_close)
    RESOLVE(stream, gps_stream)
    RESOLVE(send, gps_send)
    RESOLVE(errstr, gps_errstr)
    library_table = loading;
    library_loaded = 1;
    pthread_mutex_unlock(&library_lock);
    return &library_table;
failed:
    dlclose(library);
    pthread_mutex_unlock(&library_lock);
    return NULL;
}

/* The longest report line kept: libgps's own line buffer (twice gpsd's longest JSON response). Longer lines are
 * dropped whole. */
enum { REPORT_LINE_MAX = 8192 };

struct wb_gps {
    const struct gps_library *library;
    struct gps_data_t data;
    char buffer[2 * REPORT_LINE_MAX]; /* bytes read from gpsd, not yet taken as lines */
    size_t buffered;
    int discarding;                   /* the buffer filled without a line end: drop bytes up to the next one */
    wb_gps_dop dop;                   /* from the last SKY */
    char line[REPORT_LINE_MAX + 1];   /* the report being unpacked, NUL-terminated */
};

wb_gps *wb_gps_open(const char *host, const char *port, const char **error) {
    const struct gps_library *library = load_library();
    if (library == NULL) {
        *error = load_error;
        return NULL;
    }
    wb_gps *gps = calloc(1, sizeof *gps);
    if (gps == NULL) {
        *error = "out of memory";
        return NULL;
    }
    gps->library = library;
    gps->dop.hdop = NAN;
    gps->dop.vdop = NAN;
    if (library->open(host, port, &gps->data) != 0) {
        *error = library->errstr(errno);
        free(gps);
        return NULL;
    }
    return gps;
}

int wb_gps_watch(wb_gps *gps, int enable) {
    unsigned int flags = enable ? (WATCH_ENABLE | WATCH_JSON) : WATCH_DISABLE;
    return gps->library->stream(&gps->data, flags, NULL) == 0 ? 0 : -1;
}

int wb_gps_poll(wb_gps *gps) {
    return gps->library->send(&gps->data, "?POLL;") == 0 ? 0 : -1;
}

/* Reports are framed and read here rather than by gps_read, which hands every line to libgps's JSON parser:
 * libgps 3.22 loops forever on some reports (a DEVICES object with an unknown member, a SKY cut short), so
 * whatever listens on gpsd's port could freeze the provider. libgps only connects and sends the commands. */

int wb_gps_wait(wb_gps *gps, int timeout_us) {
    if (memchr(gps->buffer, '\n', gps->buffered) != NULL) return 1;
    struct pollfd reader = {gps->data.gps_fd, POLLIN, 0};
    int ready = poll(&reader, 1, timeout_us / 1000);
    if (ready < 0) return errno == EINTR ? 0 : -1;
    return ready > 0 ? 1 : 0;
}

/* Reads what gpsd has sent into the buffer: 1 when bytes came or none were waiting, -1 when the stream ended or
 * failed. */
static int fill(wb_gps *gps) {
    ssize_t count = recv(gps->data.gps_fd, gps->buffer + gps->buffered, sizeof gps->buffer - gps->buffered, MSG_DONTWAIT);
    if (count > 0) {
        gps->buffered += (size_t)count;
        return 1;
    }
    if (count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 1;
    return -1;
}

/* Takes the next whole line out of the buffer into gps->line, without its line end: its length, or -1 when no
 * whole line is buffered yet, or -2 when the line was too long and was dropped. */
static long take_line(wb_gps *gps) {
    char *end = memchr(gps->buffer, '\n', gps->buffered);
    if (end == NULL) {
        if (gps->buffered == sizeof gps->buffer) {
            gps->buffered = 0;
            gps->discarding = 1;
        }
        return -1;
    }
    size_t length = (size_t)(end - gps->buffer);
    int kept = !gps->discarding && length <= REPORT_LINE_MAX;
    if (kept) {
        memcpy(gps->line, gps->buffer, length);
        if (length > 0 && gps->line[length - 1] == '\r') length--;
        gps->line[length] = '\0';
    }
    size_t consumed = (size_t)(end - gps->buffer) + 1;
    memmove(gps->buffer, gps->buffer + consumed, gps->buffered - consumed);
    gps->buffered -= consumed;
    gps->discarding = 0;
    return kept ? (long)length : -2;
}

int wb_gps_read(wb_gps *gps, wb_gps_fix *fix) {
    long length = take_line(gps);
    if (length == -1) {
        if (fill(gps) < 0) return -1;
        length = take_line(gps);
    }
    if (length < 0) return 0;
    return wb_parse_report(gps->line, (size_t)length, &gps->dop, fix) == 1 ? 1 : 0;
}

void wb_gps_close(wb_gps *gps) {
    if (gps == NULL) return;
    (void)gps->library->stream(&gps->data, WATCH_DISABLE, NULL);
    (void)gps->library->close(&gps->data);
    free(gps);
}
