// The part of libcurl that curl_api.c calls, declared here rather than taken from <curl/curl.h>, which is needed
// only by abi-check.c: built with WB_CURL_ABI_CHECK and the real header, it holds every type, function and constant
// below to libcurl's own (the test suite compiles it). The values are those of curl 7.88.
//
// The names are prefixed so that both sets of declarations can be compared in one translation unit.
#ifndef WB_CURL_LIBRARY_H
#define WB_CURL_LIBRARY_H

#include <stddef.h>
#include <stdint.h>

// The enumerations CURLcode, CURLoption and CURLINFO have no negative values, so C compilers give them the type
// unsigned int; curl_off_t is a signed 64-bit integer. A CURL handle is a `void *`; a header list is only ever
// handled through a pointer.
typedef unsigned int wb_curl_code;
typedef unsigned int wb_curl_option;
typedef unsigned int wb_curl_info;
typedef int64_t wb_curl_off_t;
struct curl_slist;

typedef size_t (*wb_curl_write_callback)(char *buffer, size_t size, size_t count, void *context);
typedef int (*wb_curl_xferinfo_callback)(
    void *context, wb_curl_off_t download_total, wb_curl_off_t download_now, wb_curl_off_t upload_total,
    wb_curl_off_t upload_now);

// The functions, each under its own name.
struct wb_curl_library {
    wb_curl_code (*curl_global_init)(long flags);
    void *(*curl_easy_init)(void);
    wb_curl_code (*curl_easy_setopt)(void *curl, wb_curl_option option, ...);
    wb_curl_code (*curl_easy_perform)(void *curl);
    wb_curl_code (*curl_easy_getinfo)(void *curl, wb_curl_info info, ...);
    void (*curl_easy_cleanup)(void *curl);
    const char *(*curl_easy_strerror)(wb_curl_code code);
    struct curl_slist *(*curl_slist_append)(struct curl_slist *list, const char *string);
    void (*curl_slist_free_all)(struct curl_slist *list);
};

#define WB_CURL_GLOBAL_DEFAULT 3L
#define WB_CURL_ERROR_SIZE 256

// Options (CURLOPTTYPE_LONG + n, OBJECTPOINT / STRINGPOINT / SLISTPOINT / CBPOINT 10000 + n, FUNCTIONPOINT
// 20000 + n, OFF_T 30000 + n).
#define WB_CURLOPT_WRITEDATA 10001U
#define WB_CURLOPT_URL 10002U
#define WB_CURLOPT_HEADERDATA 10029U
#define WB_CURLOPT_HEADERFUNCTION 20079U
#define WB_CURLOPT_HTTPGET 80U
#define WB_CURLOPT_ERRORBUFFER 10010U
#define WB_CURLOPT_WRITEFUNCTION 20011U
#define WB_CURLOPT_POSTFIELDS 10015U
#define WB_CURLOPT_USERAGENT 10018U
#define WB_CURLOPT_HTTPHEADER 10023U
#define WB_CURLOPT_SSLVERSION 32U
#define WB_CURLOPT_NOPROGRESS 43U
#define WB_CURLOPT_POST 47U
#define WB_CURLOPT_FOLLOWLOCATION 52U
#define WB_CURLOPT_XFERINFODATA 10057U
#define WB_CURLOPT_SSL_VERIFYPEER 64U
#define WB_CURLOPT_CAINFO 10065U
#define WB_CURLOPT_SSL_VERIFYHOST 81U
#define WB_CURLOPT_CAPATH 10097U
#define WB_CURLOPT_NOSIGNAL 99U
#define WB_CURLOPT_MAXFILESIZE_LARGE 30117U
#define WB_CURLOPT_POSTFIELDSIZE_LARGE 30120U
#define WB_CURLOPT_TIMEOUT_MS 155U
#define WB_CURLOPT_CONNECTTIMEOUT_MS 156U
#define WB_CURLOPT_XFERINFOFUNCTION 20219U
#define WB_CURLOPT_PROTOCOLS_STR 10318U
#define WB_CURLOPT_REDIR_PROTOCOLS_STR 10319U

// CURLOPT_SSLVERSION's value for "TLS 1.2 or later".
#define WB_CURL_SSLVERSION_TLSv1_2 6L

// CURLINFO_LONG + 2.
#define WB_CURLINFO_RESPONSE_CODE 0x200002U

// The results curl_api.c tells apart.
#define WB_CURLE_OK 0U
#define WB_CURLE_UNSUPPORTED_PROTOCOL 1U
#define WB_CURLE_URL_MALFORMAT 3U
#define WB_CURLE_COULDNT_RESOLVE_PROXY 5U
#define WB_CURLE_COULDNT_RESOLVE_HOST 6U
#define WB_CURLE_COULDNT_CONNECT 7U
#define WB_CURLE_WRITE_ERROR 23U
#define WB_CURLE_OUT_OF_MEMORY 27U
#define WB_CURLE_OPERATION_TIMEDOUT 28U
#define WB_CURLE_SSL_CONNECT_ERROR 35U
#define WB_CURLE_ABORTED_BY_CALLBACK 42U
#define WB_CURLE_SSL_ENGINE_NOTFOUND 53U
#define WB_CURLE_SSL_ENGINE_SETFAILED 54U
#define WB_CURLE_SSL_CERTPROBLEM 58U
#define WB_CURLE_SSL_CIPHER 59U
#define WB_CURLE_PEER_FAILED_VERIFICATION 60U
#define WB_CURLE_FILESIZE_EXCEEDED 63U
#define WB_CURLE_SSL_ENGINE_INITFAILED 66U
#define WB_CURLE_SSL_CACERT_BADFILE 77U
#define WB_CURLE_SSL_SHUTDOWN_FAILED 80U
#define WB_CURLE_SSL_CRL_BADFILE 82U
#define WB_CURLE_SSL_ISSUER_ERROR 83U
#define WB_CURLE_SSL_PINNEDPUBKEYNOTMATCH 90U
#define WB_CURLE_SSL_INVALIDCERTSTATUS 91U
#define WB_CURLE_SSL_CLIENTCERT 98U

#endif
