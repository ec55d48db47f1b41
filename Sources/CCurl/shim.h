#ifndef HAUL_CCURL_SHIM_H
#define HAUL_CCURL_SHIM_H

#include <curl/curl.h>

/* curl_easy_setopt is variadic, which Swift cannot call.
   These typed wrappers are the only way Haul reaches it. */

typedef size_t (*haul_curl_data_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*haul_curl_xferinfo_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow,
                                           curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode haul_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode haul_curl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode haul_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode haul_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode haul_curl_setopt_data_callback(CURL *handle, CURLoption option,
                                                      haul_curl_data_callback callback) {
    return curl_easy_setopt(handle, option, callback);
}

static inline CURLcode haul_curl_setopt_xferinfo_callback(CURL *handle, haul_curl_xferinfo_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

/* curl_multi_setopt and curl_share_setopt are variadic too. */
static inline CURLMcode haul_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

static inline CURLSHcode haul_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return curl_share_setopt(share, option, value);
}

static inline CURLSHcode haul_curl_share_setopt_pointer(CURLSH *share, CURLSHoption option, void *value) {
    return curl_share_setopt(share, option, value);
}

typedef void (*haul_curl_lock_callback)(CURL *handle, curl_lock_data data, curl_lock_access access, void *context);
typedef void (*haul_curl_unlock_callback)(CURL *handle, curl_lock_data data, void *context);

static inline CURLSHcode haul_curl_share_set_locks(CURLSH *share, haul_curl_lock_callback lock, haul_curl_unlock_callback unlock) {
    CURLSHcode code = curl_share_setopt(share, CURLSHOPT_LOCKFUNC, lock);
    if (code != CURLSHE_OK) return code;
    return curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, unlock);
}

/* CURLMsg's payload is a union; its result is the transfer's code. */
static inline CURLcode haul_curl_msg_result(const CURLMsg *message) {
    return message->data.result;
}

/* curl_easy_getinfo is variadic too. */
static inline CURLcode haul_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

#endif
