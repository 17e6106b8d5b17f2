#include "curl_api.h"

#include "curl_library.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct wb_curl_library table;
static int loaded;
static char library_name[256] = WB_CURL_LIBRARY;

// Resolves `name` into `slot`; a missing symbol is reported by name.
static int resolve(void *library, const char *name, void *slot, char *error, size_t error_size) {
    dlerror();
    void *symbol = dlsym(library, name);
    if (symbol == NULL) {
        const char *why = dlerror();
        snprintf(error, error_size, "%s: %s", library_name, why != NULL ? why : name);
        return -1;
    }
    memcpy(slot, &symbol, sizeof symbol);
    return 0;
}

#define RESOLVE(name) \
    if (resolve(library, #name, &loading.name, error, error_size) != 0) goto failed;

// Loads the library and every function in curl_library.h, and initialises libcurl, once per process; the library
// is never unloaded. Returns the table, or NULL after writing why into `error`. A failure is not remembered: the
// next request tries again.
static const struct wb_curl_library *load(char *error, size_t error_size) {
    pthread_mutex_lock(&lock);
    if (loaded) {
        pthread_mutex_unlock(&lock);
        return &table;
    }
    void *library = dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(error, error_size, "%s%s", why != NULL ? why : library_name, why != NULL ? "" : ": cannot be loaded");
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    struct wb_curl_library loading;
    RESOLVE(curl_global_init)
    RESOLVE(curl_easy_init)
    RESOLVE(curl_easy_setopt)
    RESOLVE(curl_easy_perform)
    RESOLVE(curl_easy_getinfo)
    RESOLVE(curl_easy_cleanup)
    RESOLVE(curl_easy_strerror)
    RESOLVE(curl_slist_append)
    RESOLVE(curl_slist_free_all)
    // Not thread-safe in libcurl itself, hence under the lock; every later curl_easy_init finds it done.
    wb_curl_code code = loading.curl_global_init(WB_CURL_GLOBAL_DEFAULT);
    if (code != WB_CURLE_OK) {
        snprintf(error, error_size, "curl_global_init failed: %s", loading.curl_easy_strerror(code));
        goto failed;
    }
    table = loading;
    loaded = 1;
    pthread_mutex_unlock(&lock);
    return &table;
failed:
    dlclose(library);
    pthread_mutex_unlock(&lock);
    return NULL;
}

int wb_curl_use_library(const char *file_name) {
    pthread_mutex_lock(&lock);
    int used = -1;
    size_t length = strlen(file_name);
    if (!loaded && length > 0 && length < sizeof library_name) {
        memcpy(library_name, file_name, length + 1);
        used = 0;
    }
    pthread_mutex_unlock(&lock);
    return used;
}

int wb_curl_is_loaded(void) {
    pthread_mutex_lock(&lock);
    int answer = loaded;
    pthread_mutex_unlock(&lock);
    return answer;
}

void wb_http_abort(int *flag) { __atomic_store_n(flag, 1, __ATOMIC_RELEASE); }

void wb_http_result_free(struct wb_http_result *result) {
    free(result->body);
    result->body = NULL;
    result->body_length = 0;
    free(result->headers);
    result->headers = NULL;
    result->headers_length = 0;
}

// The most header bytes kept of a response.
#define WB_HEADER_LIMIT 16384

// The response body as it arrives, up to `limit` bytes.
struct sink {
    uint8_t *data;
    size_t length;
    size_t capacity;
    size_t limit;
    // Set when the body went past `limit`, or the memory for it could not be had; either stops the transfer.
    int exceeded;
    int out_of_memory;
};

// CURLOPT_WRITEFUNCTION: appends to the sink; returning less than was given stops the transfer with
// CURLE_WRITE_ERROR.
static size_t receive(char *buffer, size_t size, size_t count, void *context) {
    struct sink *sink = context;
    if (count != 0 && size > SIZE_MAX / count) {
        sink->exceeded = 1;
        return 0;
    }
    size_t length = size * count;
    if (length == 0) return 0;
    if (length > sink->limit - sink->length) {
        sink->exceeded = 1;
        return 0;
    }
    size_t needed = sink->length + length;
    if (needed > sink->capacity) {
        size_t capacity = sink->capacity != 0 ? sink->capacity : 16384;
        while (capacity < needed) capacity = capacity > SIZE_MAX / 2 ? needed : capacity * 2;
        if (capacity > sink->limit) capacity = sink->limit;
        uint8_t *grown = realloc(sink->data, capacity);
        if (grown == NULL) {
            sink->out_of_memory = 1;
            return 0;
        }
        sink->data = grown;
        sink->capacity = capacity;
    }
    memcpy(sink->data + sink->length, buffer, length);
    sink->length = needed;
    return length;
}

// CURLOPT_HEADERFUNCTION: keeps the header lines of the last response (a new status line starts again), up to
// WB_HEADER_LIMIT bytes; further lines are dropped, never failing the transfer.
static size_t receive_header(char *buffer, size_t size, size_t count, void *context) {
    struct sink *sink = context;
    size_t length = size * count;
    if (length >= 5 && memcmp(buffer, "HTTP/", 5) == 0) sink->length = 0;
    if (length == 0 || length > sink->limit - sink->length) return length;
    if (sink->data == NULL) {
        sink->data = malloc(sink->limit);
        if (sink->data == NULL) return length;
        sink->capacity = sink->limit;
    }
    memcpy(sink->data + sink->length, buffer, length);
    sink->length += length;
    return length;
}

// CURLOPT_XFERINFOFUNCTION: a non-zero answer stops the transfer with CURLE_ABORTED_BY_CALLBACK.
static int check_abort(
    void *context, wb_curl_off_t download_total, wb_curl_off_t download_now, wb_curl_off_t upload_total,
    wb_curl_off_t upload_now) {
    (void)download_total;
    (void)download_now;
    (void)upload_total;
    (void)upload_now;
    const int *flag = context;
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
}

static int classify(wb_curl_code code, const struct sink *sink) {
    switch (code) {
    case WB_CURLE_COULDNT_RESOLVE_HOST:
    case WB_CURLE_COULDNT_RESOLVE_PROXY:
        return WB_HTTP_UNRESOLVABLE;
    case WB_CURLE_COULDNT_CONNECT:
        return WB_HTTP_UNREACHABLE;
    case WB_CURLE_OPERATION_TIMEDOUT:
        return WB_HTTP_TIMED_OUT;
    case WB_CURLE_SSL_CONNECT_ERROR:
    case WB_CURLE_SSL_ENGINE_NOTFOUND:
    case WB_CURLE_SSL_ENGINE_SETFAILED:
    case WB_CURLE_SSL_CERTPROBLEM:
    case WB_CURLE_SSL_CIPHER:
    case WB_CURLE_PEER_FAILED_VERIFICATION:
    case WB_CURLE_SSL_ENGINE_INITFAILED:
    case WB_CURLE_SSL_CACERT_BADFILE:
    case WB_CURLE_SSL_SHUTDOWN_FAILED:
    case WB_CURLE_SSL_CRL_BADFILE:
    case WB_CURLE_SSL_ISSUER_ERROR:
    case WB_CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case WB_CURLE_SSL_INVALIDCERTSTATUS:
    case WB_CURLE_SSL_CLIENTCERT:
        return WB_HTTP_TLS;
    // Past CURLOPT_MAXFILESIZE_LARGE by the announced Content-Length, or past the sink's limit as it arrived.
    case WB_CURLE_FILESIZE_EXCEEDED:
        return WB_HTTP_TOO_LARGE;
    case WB_CURLE_WRITE_ERROR:
        return sink->exceeded ? WB_HTTP_TOO_LARGE : WB_HTTP_OTHER;
    // check_abort is the only callback that aborts.
    case WB_CURLE_ABORTED_BY_CALLBACK:
        return WB_HTTP_ABORTED;
    default:
        return WB_HTTP_OTHER;
    }
}

// Sets one option, unless an earlier one failed; a failure names the option (without the WB_ prefix).
#define SET(option, value)                                        \
    if (code == WB_CURLE_OK) {                                    \
        code = curl->curl_easy_setopt(handle, option, value);     \
        if (code != WB_CURLE_OK) rejected = &(#option)[3];        \
    }

// Performs `request` as a GET when `get` is non-zero, else as a POST.
static int exchange(
    const struct wb_http_request *request, int get, struct wb_http_result *result, char *message,
    size_t message_size) {
    result->status = 0;
    result->body = NULL;
    result->body_length = 0;
    result->headers = NULL;
    result->headers_length = 0;
    if (message_size > 0) message[0] = 0;
    const struct wb_curl_library *curl = load(message, message_size);
    if (curl == NULL) return WB_HTTP_UNAVAILABLE;
    void *handle = curl->curl_easy_init();
    if (handle == NULL) {
        snprintf(message, message_size, "curl_easy_init failed");
        return WB_HTTP_OTHER;
    }
    // libcurl's "Expect: 100-continue" for larger bodies costs a round trip (or a second's wait for a server that
    // does not answer it); an empty "Expect:" removes it.
    struct curl_slist *headers = curl->curl_slist_append(NULL, "Expect:");
    for (size_t index = 0; !get && headers != NULL && index < request->header_count; index++) {
        struct curl_slist *longer = curl->curl_slist_append(headers, request->headers[index]);
        if (longer == NULL) {
            curl->curl_slist_free_all(headers);
            headers = NULL;
        } else {
            headers = longer;
        }
    }
    if (headers == NULL) {
        curl->curl_easy_cleanup(handle);
        snprintf(message, message_size, "out of memory for the request headers");
        return WB_HTTP_OTHER;
    }
    struct sink sink = {.data = NULL, .length = 0, .capacity = 0, .limit = request->maximum_response_bytes};
    struct sink header_sink = {.data = NULL, .length = 0, .capacity = 0, .limit = WB_HEADER_LIMIT};
    char details[WB_CURL_ERROR_SIZE];
    details[0] = 0;
    const void *body = request->body != NULL ? (const void *)request->body : (const void *)"";
    long timeout = request->timeout_ms < 1 ? 1L : request->timeout_ms;
    size_t limit = request->maximum_response_bytes;
    wb_curl_off_t largest = limit > (size_t)INT64_MAX ? INT64_MAX : (wb_curl_off_t)limit;
    wb_curl_code code = WB_CURLE_OK;
    const char *rejected = NULL;
    SET(WB_CURLOPT_ERRORBUFFER, details)
    SET(WB_CURLOPT_NOSIGNAL, 1L)
    SET(WB_CURLOPT_URL, request->url)
    SET(WB_CURLOPT_PROTOCOLS_STR, "http,https")
    SET(WB_CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
    SET(WB_CURLOPT_FOLLOWLOCATION, 0L)
    if (get) {
        SET(WB_CURLOPT_HTTPGET, 1L)
    } else {
        SET(WB_CURLOPT_POST, 1L)
        SET(WB_CURLOPT_POSTFIELDS, body)
        SET(WB_CURLOPT_POSTFIELDSIZE_LARGE, (wb_curl_off_t)request->body_length)
    }
    SET(WB_CURLOPT_HTTPHEADER, headers)
    SET(WB_CURLOPT_USERAGENT, request->user_agent)
    SET(WB_CURLOPT_TIMEOUT_MS, timeout)
    SET(WB_CURLOPT_CONNECTTIMEOUT_MS, timeout)
    SET(WB_CURLOPT_SSL_VERIFYPEER, 1L)
    SET(WB_CURLOPT_SSL_VERIFYHOST, 2L)
    SET(WB_CURLOPT_SSLVERSION, WB_CURL_SSLVERSION_TLSv1_2)
    if (request->ca_file != NULL) {
        // Only the given authorities: neither the system's bundle nor its certificate folder.
        SET(WB_CURLOPT_CAINFO, request->ca_file)
        SET(WB_CURLOPT_CAPATH, (const char *)NULL)
    }
    SET(WB_CURLOPT_WRITEFUNCTION, (wb_curl_write_callback)receive)
    SET(WB_CURLOPT_WRITEDATA, (void *)&sink)
    SET(WB_CURLOPT_MAXFILESIZE_LARGE, largest)
    if (get) {
        SET(WB_CURLOPT_HEADERFUNCTION, (wb_curl_write_callback)receive_header)
        SET(WB_CURLOPT_HEADERDATA, (void *)&header_sink)
    }
    if (request->abort_flag != NULL) {
        SET(WB_CURLOPT_NOPROGRESS, 0L)
        SET(WB_CURLOPT_XFERINFOFUNCTION, (wb_curl_xferinfo_callback)check_abort)
        SET(WB_CURLOPT_XFERINFODATA, (const void *)request->abort_flag)
    }
    int outcome;
    if (code != WB_CURLE_OK) {
        snprintf(message, message_size, "libcurl rejected %s: %s", rejected != NULL ? rejected : "an option",
                 curl->curl_easy_strerror(code));
        outcome = WB_HTTP_OTHER;
    } else if ((code = curl->curl_easy_perform(handle)) != WB_CURLE_OK) {
        outcome = classify(code, &sink);
        if (outcome == WB_HTTP_TOO_LARGE) {
            snprintf(message, message_size, "the response body is longer than %zu bytes", sink.limit);
        } else if (outcome == WB_HTTP_ABORTED) {
            snprintf(message, message_size, "abandoned");
        } else if (sink.out_of_memory) {
            snprintf(message, message_size, "out of memory for the response body");
        } else {
            snprintf(message, message_size, "%s", details[0] != 0 ? details : curl->curl_easy_strerror(code));
        }
    } else {
        long status = 0;
        code = curl->curl_easy_getinfo(handle, WB_CURLINFO_RESPONSE_CODE, &status);
        if (code != WB_CURLE_OK) {
            snprintf(message, message_size, "no HTTP status: %s", curl->curl_easy_strerror(code));
            outcome = WB_HTTP_OTHER;
        } else {
            result->status = status;
            result->body = sink.data;
            result->body_length = sink.length;
            sink.data = NULL;
            result->headers = (char *)header_sink.data;
            result->headers_length = header_sink.length;
            header_sink.data = NULL;
            outcome = WB_HTTP_RESPONSE;
        }
    }
    free(sink.data);
    free(header_sink.data);
    curl->curl_easy_cleanup(handle);
    curl->curl_slist_free_all(headers);
    return outcome;
}

int wb_http_post(
    const struct wb_http_request *request, struct wb_http_result *result, char *message, size_t message_size) {
    return exchange(request, 0, result, message, message_size);
}

int wb_http_get(
    const struct wb_http_request *request, struct wb_http_result *result, char *message, size_t message_size) {
    return exchange(request, 1, result, message, message_size);
}
