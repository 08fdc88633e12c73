#ifndef JGMIRROR_CCURL_SHIM_H
#define JGMIRROR_CCURL_SHIM_H

#include <curl/curl.h>

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift
 * cannot call. One typed wrapper per argument type keeps the Swift side type-safe. */

static inline CURLcode jg_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode jg_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode jg_easy_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode jg_easy_setopt_write_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb);
}
static inline CURLcode jg_easy_setopt_header_cb(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb);
}
static inline CURLcode jg_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode jg_easy_getinfo_off_t(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode jg_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode jg_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLMcode jg_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }

/* CURLMsg.data is a union Swift imports awkwardly; these read the two fields we use. */
static inline CURLcode jg_msg_result(const CURLMsg *m) { return m->data.result; }
static inline CURL *jg_msg_easy(const CURLMsg *m) { return m->easy_handle; }

/* Macros Swift cannot see. */
static inline curl_version_info_data *jg_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
static inline long jg_global_all(void) { return CURL_GLOBAL_ALL; }
static inline size_t jg_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline int jg_pause_cont(void) { return CURLPAUSE_CONT; }
static inline long jg_http_version_1_1(void) { return CURL_HTTP_VERSION_1_1; }
static inline long jg_http_version_2tls(void) { return CURL_HTTP_VERSION_2TLS; }
static inline long jg_netrc_optional(void) { return CURL_NETRC_OPTIONAL; }

#endif
