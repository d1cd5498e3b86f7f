/*
 * handler.h - the libmicrohttpd access handler of rlstore-auth (handler.c).
 */
#ifndef RLSTORE_AUTH_HANDLER_H
#define RLSTORE_AUTH_HANDLER_H

#include <microhttpd.h>

/* MHD_AccessHandlerCallback: answers every request at its first call. */
enum MHD_Result auth_access(void *cls, struct MHD_Connection *c, const char *url,
                            const char *method, const char *version, const char *upload_data,
                            size_t *upload_data_size, void **req_cls);

#endif /* RLSTORE_AUTH_HANDLER_H */
