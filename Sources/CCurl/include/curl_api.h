// libcurl, loaded with dlopen at the first request.
#ifndef WB_CURL_API_H
#define WB_CURL_API_H
#endif
