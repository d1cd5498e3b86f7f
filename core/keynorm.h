/*
 * keynorm.h - key normalisation per action key kind.
 *
 *   string  the key as given (any bytes but NUL), unchanged
 *   ip      an IPv4 or IPv6 address in any textual form inet_pton accepts;
 *           IPv4-mapped IPv6 (::ffff:a.b.c.d) is treated as IPv4; IPv6 is
 *           folded to its /ipv6_prefix network and IPv4 to its /ipv4_prefix
 *           network.  Output is canonical text: "203.0.113.7",
 *           "2001:db8:1:2::/64" (a prefix < full length is shown as /N).
 *           IPv6 zone ids ("fe80::1%eth0"), networks ("10.0.0.0/8") and
 *           IPv4 parts with leading zeros ("01.2.3.4") are refused.
 *   email   trimmed of nothing, lower-cased (ASCII), "+tag" removed from the
 *           local part; must contain exactly one '@' with both sides non-empty
 *           (also after removing the tag); spaces and control bytes refused
 * Every kind refuses an empty key and a NUL byte inside keylen.
 */
#ifndef RLS_KEYNORM_H
#define RLS_KEYNORM_H

#include <stddef.h>

enum key_kind { KEY_STRING = 0, KEY_IP = 1, KEY_EMAIL = 2 };

/* "string", "ip", "email"; kind from name, -1 if unknown. */
const char *rls__key_kind_name(int kind);
int rls__key_kind_from_name(const char *name);

/*
 * Normalises key (NUL-terminated, length keylen) into out (size outsize,
 * always NUL-terminated on success).  ipv4_prefix 0..32, ipv6_prefix 0..128.
 * Returns the normalised length, or -1 if the key is not valid for the kind
 * (*why gets a static reason), or -2 if out is too small.
 */
int rls__key_normalize(int kind, int ipv4_prefix, int ipv6_prefix,
                  const char *key, size_t keylen, char *out, size_t outsize,
                  const char **why);

/*
 * Is key (length keylen) its own normal form: would rls__key_normalize
 * accept it and return it unchanged (keylen bytes, the same)?  1 or 0.  A
 * quick test for the common spellings: every string key; an IPv4 address
 * in dotted-quad form with ipv4_prefix 32 (an IPv6 key, a folded one:
 * 0); an email address already lower-case, without a +tag.  0 never means
 * invalid, only "normalise it" (tests/core/test_keynorm_fast.c compares
 * the two over random and edge keys).
 */
int rls__key_is_normal(int kind, int ipv4_prefix, int ipv6_prefix, const char *key,
                       size_t keylen);

/*
 * The canonical form of a key given for every action (a block or a tier
 * assignment without an action): an IP address as its full-length
 * canonical text (IPv4-mapped IPv6 as IPv4, IPv6 lower-case and
 * compressed: "2001:db8:5::1"), else an email address as an email action
 * normalises it (lower-cased, "+tag" removed), else the key as written.
 * So every respelling of one address or mailbox names one row.  Returns the
 * length, or -2 if out is too small.
 */
int rls__key_canonical(const char *key, size_t keylen, char *out, size_t outsize);

/*
 * An IP key ("203.0.113.7", a folded network "2001:db8::/64", or any
 * spelling of an address inet_pton accepts) as its 128-bit form (IPv4 as
 * ::ffff:a.b.c.d) and prefix length on that form.  Returns 0 or -1.
 */
int rls__key_ip_net(const char *key, size_t keylen, unsigned char a[16], int *bits);

/* Does the network net/bits (128-bit form) contain address a?  1/0. */
int rls__key_net_contains(const unsigned char net[16], int bits, const unsigned char a[16]);

/*
 * Patterns for tier assignments:
 *   "10.0.0.0/8", "2001:db8::/32"  CIDR: matches IP keys in the network
 *   "user:*"                        prefix glob: a trailing '*' only
 *   anything else                   exact key
 */
enum key_pattern_kind { PAT_EXACT = 0, PAT_CIDR = 1, PAT_PREFIX = 2 };

typedef struct key_pattern {
    int kind;
    unsigned char addr[16];  /* CIDR network (IPv4 as IPv4-mapped IPv6) */
    int bits;                /* CIDR prefix length on the 128-bit form   */
    size_t len;              /* PREFIX: prefix length in bytes           */
} key_pattern;

/* Classifies text as a pattern (a string that looks like CIDR but is invalid,
 * e.g. "10.0.0.0/33", is an error: returns -1 with *why).  Text ending in
 * '*' is a prefix ("*" alone matches every key); "addr/bits" with an address
 * made of hex digits, '.' and ':' is CIDR and must be valid, without host
 * bits set ("10.0.0.1/8" is an error); anything else, including a bare
 * address, is exact (normalise it like the keys it should match). */
int rls__key_pattern_parse(const char *text, key_pattern *out, const char **why);

/*
 * Does normalised `key` (length keylen) match the pattern whose text is
 * `text`?  Returns 1/0.  Specificity for choosing among several matches:
 * exact beats CIDR beats prefix; among CIDRs the longer prefix, among
 * prefixes the longer one.  rls__key_pattern_rank gives a number that orders that
 * way (larger = more specific).  A CIDR pattern matches an IP key (an
 * address or a folded network such as "2001:db8:1:2::/64") inside its
 * network; an IPv4 key matches IPv4 patterns (and IPv6 ones within
 * ::ffff:0:0/96), never wider IPv6 patterns such as "::/0".
 */
int rls__key_pattern_match(const key_pattern *p, const char *text,
                      const char *key, size_t keylen);
int rls__key_pattern_rank(const key_pattern *p);

/*
 * Writes key escaped for display: printable ASCII as is, backslash as "\\",
 * control characters and bytes >= 0x7f as \xHH, except valid UTF-8 sequences
 * which are copied (the C1 controls U+0080..U+009F, and the format
 * characters and separators of unicode.h such as U+202E, are escaped byte
 * by byte too).
 * Returns snprintf-style length; a too-small out receives only whole units
 * (never half an escape or half a character), always NUL-terminated.
 */
int rls__key_escape(const char *key, size_t keylen, char *out, size_t outsize);

#endif
