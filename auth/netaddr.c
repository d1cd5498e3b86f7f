/*
 * netaddr.c - client addresses: parsing, CIDR lists, and who the client is
 * behind trusted proxies.
 *
 * Every address is held as an IPv6 address, IPv4 as its mapped form
 * ::ffff:a.b.c.d, so an IPv4 CIDR /n is the mapped /96+n and one
 * comparison covers both families.  A proxy that talks IPv6 on a dual
 * stack socket shows IPv4 clients as mapped addresses too.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "auth.h"

static void map_v4(const struct in_addr *v4, struct in6_addr *out)
{
    memset(out, 0, sizeof *out);
    out->s6_addr[10] = 0xff;
    out->s6_addr[11] = 0xff;
    memcpy(&out->s6_addr[12], v4, 4);
}

static int is_mapped(const struct in6_addr *a)
{
    static const unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(a->s6_addr, prefix, 12) == 0;
}

/* len bytes of text, without surrounding blanks, "[v6]" unwrapped. */
int addr_parse(const char *text, size_t len, struct in6_addr *out)
{
    char buf[INET6_ADDRSTRLEN + 2];
    while (len > 0 && (*text == ' ' || *text == '\t')) {
        text++;
        len--;
    }
    while (len > 0 && (text[len - 1] == ' ' || text[len - 1] == '\t'))
        len--;
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        text++;
        len -= 2;
    }
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, text, len);
    buf[len] = '\0';
    struct in_addr v4;
    if (inet_pton(AF_INET, buf, &v4) == 1) {
        map_v4(&v4, out);
        return 0;
    }
    return inet_pton(AF_INET6, buf, out) == 1 ? 0 : -1;
}

int addr_parse_cidr(const char *text, auth_cidr *out)
{
    const char *slash = strchr(text, '/');
    size_t alen = slash ? (size_t)(slash - text) : strlen(text);
    if (addr_parse(text, alen, &out->addr) != 0)
        return -1;
    int v4 = is_mapped(&out->addr) && memchr(text, ':', alen) == NULL;
    int max = v4 ? 32 : 128;
    long bits = max;
    if (slash) {
        char *end;
        if (slash[1] < '0' || slash[1] > '9')
            return -1;
        bits = strtol(slash + 1, &end, 10);
        if (*end != '\0' || bits > max)
            return -1;
    }
    out->bits = (int)bits + (v4 ? 96 : 0);
    /* the host bits are cleared, so "10.1.2.3/8" means 10.0.0.0/8 */
    for (int i = 0; i < 16; i++) {
        int keep = out->bits - 8 * i;
        if (keep <= 0)
            out->addr.s6_addr[i] = 0;
        else if (keep < 8)
            out->addr.s6_addr[i] &= (unsigned char)(0xff << (8 - keep));
    }
    return 0;
}

static int in_cidr(const struct in6_addr *a, const auth_cidr *c)
{
    int full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(a->s6_addr, c->addr.s6_addr, (size_t)full) != 0)
        return 0;
    if (rest == 0)
        return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a->s6_addr[full] & mask) == c->addr.s6_addr[full];
}

int addr_in_list(const struct in6_addr *a, const auth_cidr *list, int n)
{
    for (int i = 0; i < n; i++)
        if (in_cidr(a, &list[i]))
            return 1;
    return 0;
}

void addr_format(const struct in6_addr *a, char *buf, size_t size)
{
    if (is_mapped(a)) {
        struct in_addr v4;
        memcpy(&v4, &a->s6_addr[12], 4);
        inet_ntop(AF_INET, &v4, buf, (socklen_t)size);
    } else {
        inet_ntop(AF_INET6, a, buf, (socklen_t)size);
    }
}

/*
 * Every element is parsed, also those left of the client: a list with a
 * piece that is not an address was not written by a proxy we trust, and
 * answering it (400) is better than guessing which part to believe.
 */
int addr_forwarded_client(const char *xff, const auth_cidr *trusted, int n,
                          struct in6_addr *out)
{
    const char *end = xff + strlen(xff);
    int found = 0;
    while (end > xff) {
        const char *start = end;
        while (start > xff && start[-1] != ',')
            start--;
        struct in6_addr a;
        if (addr_parse(start, (size_t)(end - start), &a) != 0)
            return -1;
        if (!found) {
            *out = a;   /* the leftmost so far, or the client */
            if (!addr_in_list(&a, trusted, n))
                found = 1;
        }
        end = start > xff ? start - 1 : xff;
        if (start > xff && end == xff)   /* a leading comma */
            return -1;
    }
    return found || *xff ? 0 : -1;
}
