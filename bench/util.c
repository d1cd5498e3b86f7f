/*
 * util.c - the small helpers of rlbench: clocks, the latency recorder, key
 * names, files, and starting and waiting for other programs.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bench.h"

/* ---- clock -------------------------------------------------------------- */
double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t noon_clock_ms(void)
{
    static int64_t base_ms;
    static double t0;
    if (!base_ms) {
        base_ms = wall_ms() / 86400000 * 86400000 + 43200000;
        t0 = now_us();
    }
    return base_ms + (int64_t)((now_us() - t0) / 1000.0);
}

static double rusage_us(int who)
{
    struct rusage ru;
    if (getrusage(who, &ru) != 0)
        return 0;
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double cpu_self_us(void)
{
    return rusage_us(RUSAGE_SELF);
}

double cpu_children_us(void)
{
    return rusage_us(RUSAGE_CHILDREN);
}

/* ---- latency recorder --------------------------------------------------- */
int lat_init(lat_rec *r, long cap)
{
    r->n = 0;
    r->cap = cap > 16 ? cap : 16;
    r->v = malloc(sizeof *r->v * (size_t)r->cap);
    return r->v ? 0 : -1;
}

int lat_push(lat_rec *r, double us)
{
    if (r->n == r->cap) {
        double *v = realloc(r->v, sizeof *v * (size_t)r->cap * 2);
        if (!v)
            return -1;
        r->v = v;
        r->cap *= 2;
    }
    r->v[r->n++] = us;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void lat_summary(lat_rec *r, double secs, bench_lat *out)
{
    long n = r->n;
    memset(out, 0, sizeof *out);
    out->ops = n;
    out->secs = secs;
    if (n == 0)
        return;
    qsort(r->v, (size_t)n, sizeof *r->v, cmp_double);
    out->p50 = r->v[n / 2];
    out->p99 = r->v[(long)((double)n * 0.99)];
    out->p999 = r->v[(long)((double)n * 0.999)];
    out->max = r->v[n - 1];
}

void lat_free(lat_rec *r)
{
    free(r->v);
    r->v = NULL;
    r->n = r->cap = 0;
}

double lat_rate(const bench_lat *l)
{
    return l->secs > 0 ? (double)l->ops / l->secs : 0;
}

/* ---- keys and files ----------------------------------------------------- */
void key_name(char *buf, size_t size, unsigned long n)
{
    snprintf(buf, size, "10.%lu.%lu.%lu", n / 65536 % 256, n / 256 % 256, n % 256);
}

/* Names of keys 0..n-1 for the two key counts in use (the 10k and the
 * big scenarios), built at first use: formatting a name per operation
 * would cost about as much as a cached denied check. */
static struct key_table {
    long n;
    char (*name)[16];
} tables[2];

static const char *key_table_name(unsigned long k, long keys)
{
    for (int t = 0; t < 2; t++) {
        if (tables[t].n == keys)
            return tables[t].name[k];
        if (tables[t].n == 0) {
            tables[t].name = malloc(sizeof *tables[t].name * (size_t)keys);
            if (!tables[t].name)
                return NULL;
            for (long j = 0; j < keys; j++)
                key_name(tables[t].name[j], sizeof tables[t].name[j], (unsigned long)j);
            tables[t].n = keys;
            return tables[t].name[k];
        }
    }
    return NULL;
}

void key_of(char *buf, size_t size, long i, long keys)
{
    /* 2654435761 is prime, so coprime with any smaller key count: for
     * i < keys, i -> key is a permutation */
    unsigned long k = (unsigned long)i * 2654435761u % (unsigned long)keys;
    const char *name = size >= 16 ? key_table_name(k, keys) : NULL;
    if (name)
        memcpy(buf, name, 16);
    else
        key_name(buf, size, k);
}

void remove_db(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-ckpt", "-journal"};
    char p[4200];
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
}

long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

long vm_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

int rm_rf(const char *path)
{
    char *argv[] = {"rm", "-rf", (char *)path, NULL};
    return run(argv, NULL, -1, 60);
}

void file_tail(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    char data[4096];
    size_t n = 0;
    buf[0] = '\0';
    if (!f)
        return;
    if (fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);
        fseek(f, end > (long)sizeof data - 1 ? end - (long)sizeof data + 1 : 0, SEEK_SET);
    }
    n = fread(data, 1, sizeof data - 1, f);
    fclose(f);
    data[n] = '\0';
    while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == ' '))
        data[--n] = '\0';
    /* keep the last ~size bytes, newlines as " | " */
    const char *s = data;
    if (n > size / 2)
        s = data + n - size / 2;
    size_t o = 0;
    for (; *s && o + 4 < size; s++) {
        if (*s == '\n') {
            memcpy(buf + o, " | ", 3);
            o += 3;
        } else if ((unsigned char)*s >= 32 && *s != '"' && *s != '\\') {
            buf[o++] = *s;
        }
    }
    buf[o] = '\0';
}

/* ---- processes ---------------------------------------------------------- */
static int executable(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0;
}

static int cmp_version(const void *a, const void *b)
{
    return strverscmp(*(char *const *)a, *(char *const *)b);
}

int find_tool(const char *name, const char *const *globs, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (path) {
        const char *s = path;
        while (*s) {
            const char *e = strchr(s, ':');
            size_t len = e ? (size_t)(e - s) : strlen(s);
            if (len > 0) {
                snprintf(out, size, "%.*s/%s", (int)len, s, name);
                if (executable(out))
                    return 0;
            }
            s += len + (e ? 1 : 0);
        }
    }
    for (int i = 0; globs && globs[i]; i++) {
        char pat[512];
        glob_t g;
        snprintf(pat, sizeof pat, "%s/%s", globs[i], name);
        if (glob(pat, 0, NULL, &g) != 0)
            continue;
        /* in version order ("9.6" before "15"), newest last */
        qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, cmp_version);
        for (size_t k = g.gl_pathc; k-- > 0;) {
            if (executable(g.gl_pathv[k])) {
                snprintf(out, size, "%s", g.gl_pathv[k]);
                globfree(&g);
                return 0;
            }
        }
        globfree(&g);
    }
    return -1;
}

pid_t spawn(char *const argv[], const char *logfile, int cpu)
{
    return spawn_in(argv, logfile, cpu, NULL);
}

pid_t spawn_in(char *const argv[], const char *logfile, int cpu, const char *cwd)
{
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* dies with rlbench, however rlbench ends (a crash, SIGKILL: no atexit
     * or signal handler runs), so no peer server outlives the run */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127);
    int fd = open(logfile ? logfile : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0644);
    int in = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    if (in >= 0) {
        dup2(in, 0);
        close(in);
    }
    if (cwd && chdir(cwd) != 0)
        _exit(127);
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        sched_setaffinity(0, sizeof set, &set);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "rlbench: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
}

int wait_pid(pid_t pid, int timeout_s)
{
    double end = now_us() + timeout_s * 1e6;
    long sleep_ns = 1000000;  /* doubling up to 50 ms: few wake-ups during a peer's run */
    int st;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR)
            return -1;
        if (now_us() > end) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -1;
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        sleep_ns = sleep_ns < 25000000 ? sleep_ns * 2 : 50000000;
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
}

int run(char *const argv[], const char *logfile, int cpu, int timeout_s)
{
    return run_in(argv, logfile, cpu, NULL, timeout_s);
}

int run_in(char *const argv[], const char *logfile, int cpu, const char *cwd, int timeout_s)
{
    pid_t pid = spawn_in(argv, logfile, cpu, cwd);
    return pid < 0 ? -1 : wait_pid(pid, timeout_s);
}

int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int port = -1;
    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static cpu_set_t start_mask;
static int start_mask_ok;

void cpus_allowed(int *n, int cpu[2])
{
    cpu_set_t set;
    *n = 0;
    cpu[0] = cpu[1] = -1;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    if (!start_mask_ok) {
        start_mask = set;
        start_mask_ok = 1;
    }
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &set)) {
            if (*n < 2)
                cpu[*n] = c;
            (*n)++;
        }
    }
}

void pin_pid(pid_t pid, int cpu)
{
    int n, c[2];
    cpus_allowed(&n, c); /* records the start mask once */
    if (cpu < 0) {
        if (start_mask_ok)
            sched_setaffinity(pid, sizeof start_mask, &start_mask);
        return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(pid, sizeof set, &set);
}

void pin_self(int cpu)
{
    pin_pid(0, cpu);
}

int placements(placement p[2])
{
    int n, cpu[2];
    cpus_allowed(&n, cpu);
    p[0] = (placement){"unpinned", -1, -1};
    if (n < 2)
        return 1;
    p[1] = (placement){"pinned", cpu[0], cpu[1]};
    return 2;
}

void placement_extras(bench_result *r, const placement *p, const bench_lat *l)
{
    char name[40];
    snprintf(name, sizeof name, "%s_ops_per_s", p->name);
    res_extra(r, name, lat_rate(l), "/s");
    snprintf(name, sizeof name, "%s_p50_us", p->name);
    res_extra(r, name, l->p50, "us");
    snprintf(name, sizeof name, "%s_p999_us", p->name);
    res_extra(r, name, l->p999, "us");
    snprintf(name, sizeof name, "%s_max_us", p->name);
    res_extra(r, name, l->max, "us");
}
