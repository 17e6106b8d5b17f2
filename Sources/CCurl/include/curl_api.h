// HTTP POST and GET through libcurl, which is loaded with dlopen at the first request, so that a daemon that never
// asks a network positioning service never loads libcurl, OpenSSL and their dependencies.
//
// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call, so the whole exchange is done here
// in C: Swift fills a wb_http_request, calls wb_http_post on a thread of its own (the call blocks) and reads the
// wb_http_result. libcurl's own declarations are in curl_library.h, next to curl_api.c, and stay out of the Swift
// module.
#ifndef WB_CURL_API_H
#define WB_CURL_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnullability-completeness"
#else
#define _Nonnull
#define _Nullable
#endif

// The library's file name, as Debian's libcurl4 package installs it.
#define WB_CURL_LIBRARY "libcurl.so.4"

// One POST (or, with wb_http_get, one GET, whose body and headers are not sent). Every string is NUL-terminated and
// must hold no CR or LF (the caller checks); every pointer stays valid until the call returns.
struct wb_http_request {
    // An http:// or https:// URL; any other scheme fails (libcurl is told to allow these two only).
    const char *_Nonnull url;
    // The body, `body_length` bytes; NULL when empty.
    const uint8_t *_Nullable body;
    size_t body_length;
    // Complete header lines ("Name: value"), `header_count` of them, sent in order after libcurl's own.
    const char *_Nonnull const *_Nullable headers;
    size_t header_count;
    // The User-Agent header's value.
    const char *_Nonnull user_agent;
    // A PEM file of the certificate authorities to trust instead of the system's; NULL: the system's.
    const char *_Nullable ca_file;
    // How long the whole exchange (resolving, connecting, TLS, sending, receiving) may take, in milliseconds;
    // at least 1.
    long timeout_ms;
    // The largest response body accepted, in bytes.
    size_t maximum_response_bytes;
    // Set to non-zero (with wb_http_abort, from any thread) to abandon the exchange; read while it runs. NULL: the
    // exchange cannot be abandoned.
    const int *_Nullable abort_flag;
};

// How an exchange ended: WB_HTTP_RESPONSE with any HTTP status, or why there is no response.
enum wb_http_outcome {
    WB_HTTP_RESPONSE = 0,
    // The host name did not resolve.
    WB_HTTP_UNRESOLVABLE = 1,
    // Nothing accepted the connection, or the network is unreachable.
    WB_HTTP_UNREACHABLE = 2,
    // The exchange took longer than timeout_ms.
    WB_HTTP_TIMED_OUT = 3,
    // TLS failed: the peer's certificate or name did not verify, or the handshake broke.
    WB_HTTP_TLS = 4,
    // The response body is longer than maximum_response_bytes.
    WB_HTTP_TOO_LARGE = 5,
    // libcurl cannot be loaded or initialised.
    WB_HTTP_UNAVAILABLE = 6,
    // abort_flag was set.
    WB_HTTP_ABORTED = 7,
    // Anything else: a malformed URL or a scheme other than http and https, a connection dropped without an
    // answer, a malformed answer, no memory.
    WB_HTTP_OTHER = 8,
};

// What an exchange produced.
struct wb_http_result {
    // With WB_HTTP_RESPONSE: the HTTP status and the body, which wb_http_result_free releases (NULL when empty).
    long status;
    uint8_t *_Nullable body;
    size_t body_length;
    // With WB_HTTP_RESPONSE to wb_http_get: the response's header lines as received (CR LF after each, the status
    // line first, at most 16 KiB), which wb_http_result_free releases (NULL when none).
    char *_Nullable headers;
    size_t headers_length;
};

// Performs `request`, blocking until it ends; loads libcurl first if no request has (every thread may call it,
// concurrently). Returns a wb_http_outcome and fills `result`; for any outcome but WB_HTTP_RESPONSE, writes why
// into `message` (libcurl's or the loader's words).
int wb_http_post(
    const struct wb_http_request *_Nonnull request, struct wb_http_result *_Nonnull result, char *_Nonnull message,
    size_t message_size);

// Performs `request` as a GET, without its body or header lines, as wb_http_post performs a POST.
int wb_http_get(
    const struct wb_http_request *_Nonnull request, struct wb_http_result *_Nonnull result, char *_Nonnull message,
    size_t message_size);

// Releases the body and headers of `result`.
void wb_http_result_free(struct wb_http_result *_Nonnull result);

// Sets `*flag`, so that the exchange given it as abort_flag stops at its next progress check (about once a
// second, and whenever data arrives) and returns WB_HTTP_ABORTED.
void wb_http_abort(int *_Nonnull flag);

// Makes the next load try `file_name` (a name dlopen searches for, or a path) instead of WB_CURL_LIBRARY, for tests
// of a missing library. Returns 0, or -1 once libcurl is loaded or when the name is empty or longer than 255 bytes.
int wb_curl_use_library(const char *_Nonnull file_name);

// Non-zero once a request has loaded libcurl into the process (it is never unloaded).
int wb_curl_is_loaded(void);

#ifdef __clang__
#pragma clang diagnostic pop
#endif

#endif
