// Holds polkit_api.h's own declarations to libpolkit-gobject-1's and GLib's headers. Not part of the build: the
// test suite compiles it with WB_POLKIT_ABI_CHECK and pkg-config's flags for polkit-gobject-1, and a mismatch
// fails the compilation.
#ifndef WB_POLKIT_ABI_CHECK
#error "compile with -DWB_POLKIT_ABI_CHECK and the cflags of polkit-gobject-1"
#endif
#include "polkit_api.h"

#define SAME_TYPE(member)                                                                                   \
    _Static_assert(                                                                                         \
        __builtin_types_compatible_p(__typeof__(((struct wb_polkit_api *)0)->member), __typeof__(&member)), \
        #member " is declared differently in polkit_api.h");

SAME_TYPE(g_main_context_new)
SAME_TYPE(g_main_context_push_thread_default)
SAME_TYPE(g_main_context_invoke_full)
SAME_TYPE(g_main_loop_new)
SAME_TYPE(g_main_loop_run)
SAME_TYPE(g_timeout_source_new)
SAME_TYPE(g_source_set_callback)
SAME_TYPE(g_source_attach)
SAME_TYPE(g_source_destroy)
SAME_TYPE(g_source_unref)
SAME_TYPE(g_cancellable_new)
SAME_TYPE(g_cancellable_cancel)
SAME_TYPE(g_object_ref)
SAME_TYPE(g_object_unref)
SAME_TYPE(g_error_matches)
SAME_TYPE(g_error_free)
SAME_TYPE(g_io_error_quark)
SAME_TYPE(polkit_authority_get_sync)
SAME_TYPE(polkit_system_bus_name_new)
SAME_TYPE(polkit_details_new)
SAME_TYPE(polkit_details_insert)
SAME_TYPE(polkit_authority_check_authorization)
SAME_TYPE(polkit_authority_check_authorization_finish)
SAME_TYPE(polkit_authorization_result_get_is_authorized)
SAME_TYPE(polkit_authorization_result_get_is_challenge)

// What the header declares itself when built without the real headers.
struct wb_gerror_layout {
    WB_GERROR_FIELDS
};
_Static_assert(sizeof(struct wb_gerror_layout) == sizeof(GError), "GError's size differs");
_Static_assert(offsetof(struct wb_gerror_layout, domain) == offsetof(GError, domain), "GError.domain moved");
_Static_assert(offsetof(struct wb_gerror_layout, code) == offsetof(GError, code), "GError.code moved");
_Static_assert(offsetof(struct wb_gerror_layout, message) == offsetof(GError, message), "GError.message moved");
_Static_assert(sizeof(gboolean) == sizeof(int) && sizeof(guint) == sizeof(unsigned int), "GLib's integers differ");
_Static_assert(sizeof(GQuark) == sizeof(uint32_t), "GQuark's size differs");
_Static_assert(sizeof(PolkitCheckAuthorizationFlags) == sizeof(int), "the flags' size differs");
_Static_assert(POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE == 0, "POLKIT_CHECK_AUTHORIZATION_FLAGS_NONE differs");
_Static_assert(POLKIT_CHECK_AUTHORIZATION_FLAGS_ALLOW_USER_INTERACTION == 1, "ALLOW_USER_INTERACTION differs");
_Static_assert(WB_G_PRIORITY_DEFAULT == G_PRIORITY_DEFAULT, "G_PRIORITY_DEFAULT differs");
_Static_assert(WB_G_IO_ERROR_CANCELLED == G_IO_ERROR_CANCELLED, "G_IO_ERROR_CANCELLED differs");
