/*
 * shmfile.c - making, checking and mapping a shared-memory table file
 * (shmtable.h has the design).  A table appears at its path only whole: it
 * is built in a temporary file and link()ed into place, so the first of
 * any number of racing processes publishes it and the others attach it.
 * At the end, finding the tables of one identity and removing those of an
 * earlier boot, for the doctor (shmlist.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include "rlstore.h"
#include "shm_int.h"
#include "shmlist.h"

#define SHM_POPULATE_MAX (256ull << 20)   /* bytes mapped at once on open */

_Static_assert(sizeof(struct shm_head) <= SHM_HEAD_SIZE, "header fits its page");
_Static_assert(sizeof(struct shm_bucket) <= SHM_BUCKET_SIZE, "bucket fits its lines");
_Static_assert(sizeof(struct shm_hot) == SHM_HOT_SIZE, "a hot record is two lines");
/* the format: test_shm_table.c writes these two fields to forge files */
_Static_assert(offsetof(struct shm_head, version) == 8, "version at 8");
_Static_assert(offsetof(struct shm_head, boot) == 72, "boot at 72");

/* Writes a line of detail into why (when given) and returns code. */
static int fail(int code, char *why, size_t whylen, const char *fmt, ...)
{
    if (why && whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whylen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Locks of a table outlive nothing but the host's boot: a lock word held
 * by a thread of an earlier boot would never be released (no kernel marks
 * it owner-dead), so a table is tied to the boot it was made in. */
uint64_t rls__shm_boot(void)
{
    static uint64_t cached;
    uint64_t b = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (b)
        return b;
    char id[64];
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, id, sizeof id) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    b = fnv1a(0xcbf29ce484222325ull, id, (size_t)n) | 1u;
    __atomic_store_n(&cached, b, __ATOMIC_RELAXED);
    return b;
}

int rls__shm_path(char *buf, size_t cap, const char *dir, const char *identity)
{
    if (!buf || cap == 0)
        return RLS_EINVAL;
    buf[0] = '\0';
    if (!dir || !*dir || !identity || !*identity)
        return RLS_EINVAL;
    uint64_t h = fnv1a(0xcbf29ce484222325ull, identity, strlen(identity));
    /* the second part names the boot and the format: a library of another
     * format (an upgrade without a reboot) makes its own table beside the
     * one older processes still use, instead of refusing theirs; the
     * identity's part stays, so the doctor lists the other as a sibling */
    const uint32_t version = SHM_VERSION;
    uint64_t b = fnv1a(rls__shm_boot(), &version, sizeof version);
    int n = snprintf(buf, cap, "%s/rlstore-%016llx-%08x.shm", dir, (unsigned long long)h,
                     (unsigned)(b & 0xffffffffu));
    if (n < 0 || (size_t)n >= cap) {
        buf[0] = '\0';
        return RLS_EINVAL;
    }
    return RLS_OK;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

int rls__shm_sizes(uint32_t slots, uint32_t key_max, uint32_t log_max, struct shm_sizes *out)
{
    memset(out, 0, sizeof *out);
    if (slots < 2 * RLS__SHM_WAYS || slots > RLS__SHM_SLOTS_MAX || key_max < 1 ||
        key_max > RLS_KEY_MAX_LIMIT || log_max > ALGO_SLIDING_LOG_MAX)
        return RLS_EINVAL;
    uint32_t nb = (slots + RLS__SHM_WAYS - 1) / RLS__SHM_WAYS;
    uint64_t n = (uint64_t)nb * RLS__SHM_WAYS;
    uint64_t cold = align_up((uint64_t)key_max + 2ull * log_max * ALGO_LOG_ENTRY, 64);
    uint64_t off = align_up(SHM_HEAD_SIZE + (uint64_t)nb * SHM_BUCKET_SIZE, SHM_HOT_SIZE);
    uint64_t cold_off = off + n * SHM_HOT_SIZE;
    uint64_t size = cold_off + n * cold;
    if (cold > UINT32_MAX || size > SHM_FILE_MAX)
        return RLS_EINVAL;
    out->nbuckets = nb;
    out->slot_size = (uint32_t)cold;
    out->slots_off = off;
    out->cold_off = cold_off;
    out->file_size = size;
    return RLS_OK;
}

/* ---- checking an existing file ------------------------------------------- */

/* The header's own fields, whatever the caller asked for. */
static int head_check(const struct shm_head *h, uint64_t st_size, char *why, size_t whylen)
{
    if (memcmp(h->magic, SHM_MAGIC, sizeof h->magic) != 0)
        return fail(RLS_ENOTDB, why, whylen, "not an rlstore shared-memory table");
    if (h->version != SHM_VERSION)
        return fail(RLS_ENOTDB, why, whylen, "table format version %u, this library reads %u",
                    h->version, SHM_VERSION);
    if (h->head_size != SHM_HEAD_SIZE || h->mutex_size != sizeof(pthread_mutex_t) ||
        h->ways != RLS__SHM_WAYS || h->bucket_size != SHM_BUCKET_SIZE ||
        h->hot_size != SHM_HOT_SIZE)
        return fail(RLS_ENOTDB, why, whylen, "table made for another ABI (mutex %u bytes)",
                    h->mutex_size);
    struct shm_sizes z;
    if (h->nbuckets > RLS__SHM_SLOTS_MAX / RLS__SHM_WAYS ||
        rls__shm_sizes(h->nbuckets * RLS__SHM_WAYS, h->key_max, h->log_max, &z) != RLS_OK ||
        z.nbuckets != h->nbuckets || z.slot_size != h->slot_size ||
        z.slots_off != h->slots_off || z.cold_off != h->cold_off ||
        z.file_size != h->file_size)
        return fail(RLS_ECORRUPT, why, whylen, "table header is inconsistent");
    uint64_t boot = rls__shm_boot();
    if (h->boot && boot && h->boot != boot)
        return fail(RLS_ECORRUPT, why, whylen,
                    "table was made before the host restarted: remove it");
    if (st_size != h->file_size)
        return fail(RLS_ECORRUPT, why, whylen, "table file is %llu bytes, its header says %llu",
                    (unsigned long long)st_size, (unsigned long long)h->file_size);
    return RLS_OK;
}

static int geom_check(const struct shm_head *h, const rls__shm_geom *g, char *why, size_t whylen)
{
    uint32_t want = (g->slots + RLS__SHM_WAYS - 1) / RLS__SHM_WAYS;
    if (want == h->nbuckets && g->key_max == h->key_max && g->log_max == h->log_max)
        return RLS_OK;
    return fail(RLS_ECONFIG, why, whylen,
                "table has %u slots, keys of %u, logs of %u; asked for %u, %u, %u",
                h->nbuckets * RLS__SHM_WAYS, h->key_max, h->log_max,
                want * RLS__SHM_WAYS, g->key_max, g->log_max);
}

static int open_errno(int e, const char *path, char *why, size_t whylen)
{
    if (e == ENOENT)
        return fail(RLS_ENOTFOUND, why, whylen, "no table at '%s'", path);
    if (e == EISDIR)
        return fail(RLS_EISDIR, why, whylen, "'%s' is a directory", path);
    return fail(RLS_ECANTOPEN, why, whylen, "cannot open '%s': %s", path, strerror(e));
}

/* Opens, checks and maps the table at path into *out. */
static int attach(rls__shm **out, const char *path, const rls__shm_geom *g, char *why,
                  size_t whylen)
{
    struct shm_head h;
    struct stat st;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return open_errno(errno, path, why, whylen);
    int rc = RLS_OK;
    if (fstat(fd, &st) != 0) {
        rc = fail(RLS_EIO, why, whylen, "cannot stat '%s': %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof h ||
        pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        rc = fail(RLS_ENOTDB, why, whylen, "not an rlstore shared-memory table");
        goto out;
    }
    rc = head_check(&h, (uint64_t)st.st_size, why, whylen);
    if (rc == RLS_OK && g)
        rc = geom_check(&h, g, why, whylen);
    if (rc != RLS_OK)
        goto out;
    rls__shm *t = calloc(1, sizeof *t);
    /* A table of a usual size is mapped whole at once (MAP_POPULATE: a
     * few ms for 64k slots) rather than a page fault at each entry's first
     * touch (about a microsecond each, measured on the memory-class
     * check); a huge one is left to fault in as used. */
    int flags = MAP_SHARED | (h.file_size <= SHM_POPULATE_MAX ? MAP_POPULATE : 0);
    void *p = t ? mmap(NULL, h.file_size, PROT_READ | PROT_WRITE, flags, fd, 0) : MAP_FAILED;
    if (p == MAP_FAILED) {
        free(t);
        rc = fail(RLS_ENOMEM, why, whylen, "cannot map the table");
        goto out;
    }
    t->base = p;
    t->size = h.file_size;
    t->head = p;
    t->nbuckets = h.nbuckets;
    t->slot_size = h.slot_size;
    t->key_max = h.key_max;
    t->log_max = h.log_max;
    t->slots_off = h.slots_off;
    t->cold_off = h.cold_off;
    t->seed = h.seed;
    t->dev = (uint64_t)st.st_dev;
    t->ino = (uint64_t)st.st_ino;
    *out = t;
out:
    close(fd);
    return rc;
}

/* ---- making a new table --------------------------------------------------- */

/* Header and mutexes of a new table mapped at base. */
static int init_table(unsigned char *base, const rls__shm_geom *g, const struct shm_sizes *z)
{
    pthread_mutexattr_t a;
    if (pthread_mutexattr_init(&a) != 0)
        return RLS_ENOMEM;
    int ok = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) == 0 &&
             pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) == 0;
    for (uint32_t b = 0; ok && b < z->nbuckets; b++) {
        struct shm_bucket *bk = (struct shm_bucket *)(base + SHM_HEAD_SIZE +
                                                      (uint64_t)b * SHM_BUCKET_SIZE);
        ok = pthread_mutex_init(&bk->mu, &a) == 0;
    }
    pthread_mutexattr_destroy(&a);
    if (!ok)
        return RLS_EIO;
    struct shm_head *h = (struct shm_head *)base;
    h->version = SHM_VERSION;
    h->head_size = SHM_HEAD_SIZE;
    h->mutex_size = sizeof(pthread_mutex_t);
    h->ways = RLS__SHM_WAYS;
    h->bucket_size = SHM_BUCKET_SIZE;
    h->hot_size = SHM_HOT_SIZE;
    h->slot_size = z->slot_size;
    h->nbuckets = z->nbuckets;
    h->key_max = g->key_max;
    h->log_max = g->log_max;
    h->slots_off = z->slots_off;
    h->cold_off = z->cold_off;
    h->file_size = z->file_size;
    h->boot = rls__shm_boot();
    if (getrandom(&h->seed, sizeof h->seed, GRND_NONBLOCK) != (ssize_t)sizeof h->seed)
        h->seed = fnv1a(h->boot ^ (uint64_t)getpid(), &h, sizeof h);   /* rare */
    memcpy(h->magic, SHM_MAGIC, sizeof h->magic);
    return RLS_OK;
}

/* Fills the new file fd (size, space, header, mutexes). */
static int build(int fd, const rls__shm_geom *g, const struct shm_sizes *z, char *why,
                 size_t whylen)
{
    int e = posix_fallocate(fd, 0, (off_t)z->file_size);
    if (e == ENOSPC || e == EFBIG)
        return fail(RLS_EFULL, why, whylen, "no space for a table of %llu bytes",
                    (unsigned long long)z->file_size);
    if (e != 0)
        return fail(RLS_EIO, why, whylen, "cannot size the table: %s", strerror(e));
    void *p = mmap(NULL, z->file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return fail(RLS_ENOMEM, why, whylen, "cannot map the new table");
    int rc = init_table(p, g, z);
    munmap(p, z->file_size);
    return rc == RLS_OK ? RLS_OK : fail(rc, why, whylen, "cannot initialise the table's locks");
}

/* Builds a table in a temporary file and links it to path.  RLS_OK also
 * when another process linked its own first (EEXIST): attach that one. */
static int create(const char *path, const rls__shm_geom *g, unsigned mode, long gid, char *why,
                  size_t whylen)
{
    static unsigned seq;
    struct shm_sizes z;
    char tmp[4096];
    if (rls__shm_sizes(g->slots, g->key_max, g->log_max, &z) != RLS_OK)
        return fail(RLS_EINVAL, why, whylen, "table geometry out of range");
    unsigned n = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
    int len = snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", path, (long)getpid(), n);
    if (len < 0 || (size_t)len >= sizeof tmp)
        return fail(RLS_EINVAL, why, whylen, "table path too long");
    int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) {   /* left by a dead process of our pid */
        unlink(tmp);
        fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0)
        return fail(RLS_ECANTOPEN, why, whylen, "cannot create '%s': %s", tmp, strerror(errno));
    int rc = build(fd, g, &z, why, whylen);
    if (rc == RLS_OK && fchmod(fd, (mode_t)(mode & 0666)) != 0)
        rc = fail(RLS_ECANTOPEN, why, whylen, "cannot give the table mode %03o: %s",
                  mode & 0666, strerror(errno));
    if (rc == RLS_OK && gid >= 0 && fchown(fd, (uid_t)-1, (gid_t)gid) != 0) {
        /* not a member of the group: as with SQLite's side files, the
         * operator's setgid directory is the way then (docs/SECURITY.md) */
    }
    close(fd);
    if (rc == RLS_OK && link(tmp, path) != 0 && errno != EEXIST)
        rc = fail(RLS_ECANTOPEN, why, whylen, "cannot publish the table at '%s': %s", path,
                  strerror(errno));
    unlink(tmp);
    return rc;
}

int rls__shm_open(rls__shm **out, const char *path, const rls__shm_geom *g, char *why,
                  size_t whylen)
{
    return rls__shm_open_as(out, path, g, 0600, -1, why, whylen);
}

int rls__shm_open_as(rls__shm **out, const char *path, const rls__shm_geom *g, unsigned mode,
                     long gid, char *why, size_t whylen)
{
    if (why && whylen)
        why[0] = '\0';
    if (!out)
        return RLS_EINVAL;
    *out = NULL;
    if (!path || !*path)
        return fail(RLS_EINVAL, why, whylen, "no table path");
    struct shm_sizes z;
    if (g && rls__shm_sizes(g->slots, g->key_max, g->log_max, &z) != RLS_OK)
        return fail(RLS_EINVAL, why, whylen, "table geometry out of range");
    /* a table removed between our link and our open is made again; a few
     * rounds end a removal race that would otherwise never end */
    for (int round = 0;; round++) {
        int rc = attach(out, path, g, why, whylen);
        if (rc != RLS_ENOTFOUND || !g || round == 3)
            return rc;
        rc = create(path, g, mode, gid, why, whylen);
        if (rc != RLS_OK)
            return rc;
    }
}

void rls__shm_close(rls__shm *t)
{
    if (!t)
        return;
    munmap(t->base, t->size);
    free(t);
}

int rls__shm_info_get(const rls__shm *t, rls__shm_info *info)
{
    if (!t || !info)
        return RLS_EINVAL;
    memset(info, 0, sizeof *info);
    info->geom.slots = t->nbuckets * RLS__SHM_WAYS;
    info->geom.key_max = t->key_max;
    info->geom.log_max = t->log_max;
    info->file_size = t->size;
    info->dev = t->dev;
    info->ino = t->ino;
    info->recoveries = __atomic_load_n(&t->head->recoveries, __ATOMIC_RELAXED);
    return RLS_OK;
}

/* ---- tables of one identity, for the doctor (shmlist.h) ------------------- */

#define SHM_NAME_LEN 37   /* "rlstore-" 16 hex "-" 8 hex ".shm" (rls__shm_path) */
#define SHM_ID_LEN 25     /* "rlstore-" 16 hex "-": the identity's part */

/* Opens path for reading its header: never through a final symbolic link,
 * never waiting (a FIFO given that name). */
static int open_table_file(const char *path, int *fdp, char *why, size_t whylen)
{
    *fdp = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (*fdp >= 0)
        return RLS_OK;
    if (errno == ENOENT)
        return fail(RLS_ENOTFOUND, why, whylen, "no table at '%s'", path);
    if (errno == ELOOP)
        return fail(RLS_ENOTDB, why, whylen, "a symbolic link, not a table");
    return fail(RLS_ECANTOPEN, why, whylen, "cannot open '%s': %s", path, strerror(errno));
}

/* The header of the open file fd, if it is a table of this format. */
static int head_read(int fd, struct shm_head *h, struct stat *st, char *why, size_t whylen)
{
    if (fstat(fd, st) != 0)
        return fail(RLS_ECANTOPEN, why, whylen, "cannot stat it: %s", strerror(errno));
    if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size < sizeof *h ||
        pread(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h ||
        memcmp(h->magic, SHM_MAGIC, sizeof h->magic) != 0)
        return fail(RLS_ENOTDB, why, whylen, "not an rlstore shared-memory table");
    if (h->version != SHM_VERSION)
        return fail(RLS_ENOTDB, why, whylen, "table format version %u, this library reads %u",
                    h->version, SHM_VERSION);
    return RLS_OK;
}

int rls__shm_file_read(const char *path, rls__shm_file *out, char *why, size_t whylen)
{
    struct shm_head h;
    struct stat st;
    int fd;
    memset(out, 0, sizeof *out);
    int rc = open_table_file(path, &fd, why, whylen);
    if (rc != RLS_OK)
        return rc;
    rc = head_read(fd, &h, &st, why, whylen);
    close(fd);
    if (rc != RLS_OK)
        return rc;
    out->geom.slots = h.nbuckets * RLS__SHM_WAYS;
    out->geom.key_max = h.key_max;
    out->geom.log_max = h.log_max;
    out->st_size = (uint64_t)st.st_size;
    out->boot = h.boot;
    out->recoveries = h.recoveries;
    return RLS_OK;
}

int rls__shm_boot_stale(uint64_t boot)
{
    uint64_t now = rls__shm_boot();
    return boot != 0 && now != 0 && boot != now;
}

static int hex_run(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* Is name a table name as rls__shm_path writes them? */
static int table_name(const char *name)
{
    return strlen(name) == SHM_NAME_LEN && strncmp(name, "rlstore-", 8) == 0 &&
           hex_run(name + 8, 16) && name[24] == '-' && hex_run(name + 25, 8) &&
           strcmp(name + 33, ".shm") == 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in dir of the identity of base (not base itself), sorted:
 * *names (each and the array malloc'ed), *n of them. */
static int sibling_names(const char *dir, const char *base, char ***names, size_t *n)
{
    size_t cap = 0;
    *names = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? RLS_OK : RLS_ECANTOPEN;
    struct dirent *e;
    int rc = RLS_OK;
    while (rc == RLS_OK && (e = readdir(d)) != NULL) {
        if (!table_name(e->d_name) || strncmp(e->d_name, base, SHM_ID_LEN) != 0 ||
            strcmp(e->d_name, base) == 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            char **nn = realloc(*names, cap * sizeof *nn);
            if (!nn) {
                rc = RLS_ENOMEM;
                break;
            }
            *names = nn;
        }
        if (((*names)[*n] = strdup(e->d_name)) == NULL)
            rc = RLS_ENOMEM;
        else
            (*n)++;
    }
    closedir(d);
    if (*n > 1)
        qsort(*names, *n, sizeof **names, name_cmp);
    return rc;
}

int rls__shm_each_sibling(const char *path, int (*fn)(void *ctx, const char *path),
                          void *ctx)
{
    char dir[4096], full[4096 + SHM_NAME_LEN + 2];
    const char *slash = path ? strrchr(path, '/') : NULL;
    const char *base = slash ? slash + 1 : path;
    if (!path || !fn || !table_name(base))
        return RLS_EINVAL;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if ((size_t)(slash - path) >= sizeof dir)
        return RLS_EINVAL;
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    char **names;
    size_t n;
    int rc = sibling_names(dir, base, &names, &n);
    for (size_t i = 0; i < n; i++) {
        if (rc == RLS_OK) {
            snprintf(full, sizeof full, "%s%s%s", dir,
                     dir[strlen(dir) - 1] == '/' ? "" : "/", names[i]);
            rc = fn(ctx, full);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int rls__shm_remove_stale(const char *path, char *why, size_t whylen)
{
    struct shm_head h;
    struct stat st, now;
    int fd;
    int rc = open_table_file(path, &fd, why, whylen);
    if (rc != RLS_OK)
        return rc;
    rc = head_read(fd, &h, &st, why, whylen);
    if (rc == RLS_OK && !rls__shm_boot_stale(h.boot))
        rc = fail(RLS_EBUSY, why, whylen, h.boot ? "made in this boot of the host"
                                                 : "its boot is unknown: it may be in use");
    /* the name must still be the file judged (not replaced meanwhile) */
    if (rc == RLS_OK && (lstat(path, &now) != 0 || now.st_dev != st.st_dev ||
                         now.st_ino != st.st_ino))
        rc = fail(RLS_EBUSY, why, whylen, "the file changed while it was examined");
    if (rc == RLS_OK && unlink(path) != 0)
        rc = errno == ENOENT ? fail(RLS_ENOTFOUND, why, whylen, "removed meanwhile")
                             : fail(RLS_ECANTOPEN, why, whylen, "cannot remove it: %s",
                                    strerror(errno));
    close(fd);
    return rc;
}
