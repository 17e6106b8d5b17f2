#include "polkit_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct wb_polkit_api table;
static int loaded;

// Resolves `name` into `slot`; a missing symbol is reported by name.
static int resolve(void *library, const char *name, void *slot, char *error, size_t error_size) {
    dlerror();
    void *symbol = dlsym(library, name);
    if (symbol == NULL) {
        const char *why = dlerror();
        snprintf(error, error_size, "%s: %s", WB_POLKIT_LIBRARY, why != NULL ? why : name);
        return -1;
    }
    memcpy(slot, &symbol, sizeof symbol);
    return 0;
}

#define RESOLVE(name) \
    if (resolve(library, #name, &loading.name, error, error_size) != 0) goto failed;

const struct wb_polkit_api *wb_polkit_load(char *error, size_t error_size) {
    pthread_mutex_lock(&lock);
    if (loaded) {
        pthread_mutex_unlock(&lock);
        return &table;
    }
    // The symbols of GLib, GObject and GIO are found through libpolkit-gobject-1, which links them.
    void *library = dlopen(WB_POLKIT_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(error, error_size, "%s", why != NULL ? why : WB_POLKIT_LIBRARY ": cannot be loaded");
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    struct wb_polkit_api loading;
    RESOLVE(g_main_context_new)
    RESOLVE(g_main_context_push_thread_default)
    RESOLVE(g_main_context_invoke_full)
    RESOLVE(g_main_loop_new)
    RESOLVE(g_main_loop_run)
    RESOLVE(g_timeout_source_new)
    RESOLVE(g_source_set_callback)
    RESOLVE(g_source_attach)
    RESOLVE(g_source_destroy)
    RESOLVE(g_source_unref)
    RESOLVE(g_cancellable_new)
    RESOLVE(g_cancellable_cancel)
    RESOLVE(g_object_ref)
    RESOLVE(g_object_unref)
    RESOLVE(g_error_matches)
    RESOLVE(g_error_free)
    RESOLVE(g_io_error_quark)
    RESOLVE(polkit_authority_get_sync)
    RESOLVE(polkit_system_bus_name_new)
    RESOLVE(polkit_details_new)
    RESOLVE(polkit_details_insert)
    RESOLVE(polkit_authority_check_authorization)
    RESOLVE(polkit_authority_check_authorization_finish)
    RESOLVE(polkit_authorization_result_get_is_authorized)
    RESOLVE(polkit_authorization_result_get_is_challenge)
    table = loading;
    loaded = 1;
    pthread_mutex_unlock(&lock);
    return &table;
failed:
    dlclose(library);
    pthread_mutex_unlock(&lock);
    return NULL;
}
