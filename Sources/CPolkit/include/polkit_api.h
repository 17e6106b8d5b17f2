// The part of libpolkit-gobject-1 and GLib that the Polkit module calls, loaded with dlopen on the first check, so
// that a daemon that never asks polkit never loads GLib, GIO, GObject and their dependencies (about 2 ms of every
// start and over a megabyte of memory).
//
// The declarations are written here rather than taken from the libraries' headers, which are needed only by
// abi-check.c: built with WB_POLKIT_ABI_CHECK and the real headers, it holds every declaration below to the real
// one (the test suite compiles it).
#ifndef WB_POLKIT_API_H
#define WB_POLKIT_API_H

#include <stddef.h>
#include <stdint.h>

// Nullability is clang's (it lets Swift call the functions without unwrapping); only the table's members are
// marked, the pointers GLib's own declarations leave unmarked stay so here. Other compilers ignore it.
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnullability-completeness"
#else
#define _Nonnull
#endif

// GError's public fields, in GLib's order.
#define WB_GERROR_FIELDS \
    uint32_t domain;     \
    int code;            \
    char *message;

#ifdef WB_POLKIT_ABI_CHECK
#define POLKIT_I_KNOW_API_IS_SUBJECT_TO_CHANGE 1
#include <polkit/polkit.h>
#else
typedef int gboolean;
typedef int gint;
typedef unsigned int guint;
typedef char gchar;
typedef void *gpointer;
typedef uint32_t GQuark;
typedef struct _GMainContext GMainContext;
typedef struct _GMainLoop GMainLoop;
typedef struct _GSource GSource;
typedef struct _GCancellable GCancellable;
typedef struct _GObject GObject;
typedef struct _GAsyncResult GAsyncResult;
typedef struct _GError {
    WB_GERROR_FIELDS
} GError;
typedef gboolean (*GSourceFunc)(gpointer user_data);
typedef void (*GDestroyNotify)(gpointer data);
typedef void (*GAsyncReadyCallback)(GObject *source_object, GAsyncResult *res, gpointer user_data);
typedef struct _PolkitAuthority PolkitAuthority;
typedef struct _PolkitSubject PolkitSubject;
typedef struct _PolkitDetails PolkitDetails;
typedef struct _PolkitAuthorizationResult PolkitAuthorizationResult;
typedef enum {
    POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE = 0,
    POLKIT_CHECK_AUTHORIZATION_FLAGS_ALLOW_USER_INTERACTION = (1 << 0),
} PolkitCheckAuthorizationFlags;
#endif

// GLib's G_PRIORITY_DEFAULT and G_IO_ERROR_CANCELLED.
#define WB_G_PRIORITY_DEFAULT 0
#define WB_G_IO_ERROR_CANCELLED 19

// The functions, each under its own name.
struct wb_polkit_api {
    GMainContext *(*_Nonnull g_main_context_new)(void);
    void (*_Nonnull g_main_context_push_thread_default)(GMainContext *context);
    void (*_Nonnull g_main_context_invoke_full)(
        GMainContext *context, gint priority, GSourceFunc function, gpointer data, GDestroyNotify notify);
    GMainLoop *(*_Nonnull g_main_loop_new)(GMainContext *context, gboolean is_running);
    void (*_Nonnull g_main_loop_run)(GMainLoop *loop);
    GSource *(*_Nonnull g_timeout_source_new)(guint interval);
    void (*_Nonnull g_source_set_callback)(GSource *source, GSourceFunc func, gpointer data, GDestroyNotify notify);
    guint (*_Nonnull g_source_attach)(GSource *source, GMainContext *context);
    void (*_Nonnull g_source_destroy)(GSource *source);
    void (*_Nonnull g_source_unref)(GSource *source);
    GCancellable *(*_Nonnull g_cancellable_new)(void);
    void (*_Nonnull g_cancellable_cancel)(GCancellable *cancellable);
    gpointer (*_Nonnull g_object_ref)(gpointer object);
    void (*_Nonnull g_object_unref)(gpointer object);
    gboolean (*_Nonnull g_error_matches)(const GError *error, GQuark domain, gint code);
    void (*_Nonnull g_error_free)(GError *error);
    GQuark (*_Nonnull g_io_error_quark)(void);
    PolkitAuthority *(*_Nonnull polkit_authority_get_sync)(GCancellable *cancellable, GError **error);
    PolkitSubject *(*_Nonnull polkit_system_bus_name_new)(const gchar *name);
    PolkitDetails *(*_Nonnull polkit_details_new)(void);
    void (*_Nonnull polkit_details_insert)(PolkitDetails *details, const gchar *key, const gchar *value);
    void (*_Nonnull polkit_authority_check_authorization)(
        PolkitAuthority *authority, PolkitSubject *subject, const gchar *action_id, PolkitDetails *details,
        PolkitCheckAuthorizationFlags flags, GCancellable *cancellable, GAsyncReadyCallback callback,
        gpointer user_data);
    PolkitAuthorizationResult *(*_Nonnull polkit_authority_check_authorization_finish)(
        PolkitAuthority *authority, GAsyncResult *res, GError **error);
    gboolean (*_Nonnull polkit_authorization_result_get_is_authorized)(PolkitAuthorizationResult *result);
    gboolean (*_Nonnull polkit_authorization_result_get_is_challenge)(PolkitAuthorizationResult *result);
};

// The library's file name, as its package installs it.
#define WB_POLKIT_LIBRARY "libpolkit-gobject-1.so.0"

// Loads the library and every function above, once per process; the library is never unloaded. Returns the
// table, or NULL after writing why into `error` (the loader's message, or the function that is missing).
const struct wb_polkit_api *wb_polkit_load(char *error, size_t error_size);

#ifdef __clang__
#pragma clang diagnostic pop
#endif

#endif
