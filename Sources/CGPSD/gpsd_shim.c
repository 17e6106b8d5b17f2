#include "gpsd_shim.h"

#include "gps_library.h"

#include <dlfcn.h>
#include <errno.h>
#include <gps.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

struct wb_gps {
    const struct gps_library *library;
    struct gps_data_t data;
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

int wb_gps_socket(const wb_gps *gps) {
    return gps->data.gps_fd;
}

void wb_gps_close(wb_gps *gps) {
    if (gps == NULL) return;
    (void)gps->library->stream(&gps->data, WATCH_DISABLE, NULL);
    (void)gps->library->close(&gps->data);
    free(gps);
}
