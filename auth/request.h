/*
 * request.h - reading a sub-request (request.c): its action, key and deny
 * status.  Each returns 0, or -1 with a one-line reason in why (the body
 * of the 400 answer).
 */
#ifndef RLSTORE_AUTH_REQUEST_H
#define RLSTORE_AUTH_REQUEST_H

#include <stddef.h>
#include <rlstore.h>

struct MHD_Connection;

/* The action of a request to url ("/check" or "/check/..."). */
int req_action(struct MHD_Connection *c, const char *url, const char *method,
               char action[RLS_NAME_MAX + 1], char *why, size_t wsize);
/* The key: *keyp points to a header's value or to key (the client
 * address as text, ksize bytes). */
int req_key(struct MHD_Connection *c, char *key, size_t ksize, const char **keyp, char *why,
            size_t wsize);
/* The status of a denial: X-Rlstore-Deny-Status (401, 403, 429) or the
 * configured one. */
int req_deny_status(struct MHD_Connection *c, int *status, char *why, size_t wsize);

#endif /* RLSTORE_AUTH_REQUEST_H */
