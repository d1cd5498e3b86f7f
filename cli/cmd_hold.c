/*
 * cmd_hold.c - `rlctl hold [--for DUR]`: keeps the database open until
 * interrupted (SIGINT, SIGTERM) or for DUR.
 *
 * Why: in a split deployment (docs/SECURITY.md) applications read the
 * rules database with a -shm file they may not write.  While no process
 * that may write the rules has it open, SQLite cannot trust that file and
 * rebuilds the WAL index in each reader's memory at every transaction, which
 * makes a check slower (about 18 instead of 12 us here).  One admin process
 * holding it open, such as this command run as a service, lets them share
 * the index again.  It holds no lock and no transaction.
 */
#include <errno.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include "rlctl.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

int cmd_hold(rlctl_ctx *ctx)
{
    struct sigaction sa;
    int64_t ms = 0;
    int set = 0, rc = opt_duration(ctx, "for", &ms, &set);
    if (rc || (rc = db_open(ctx, 0)))
        return rc;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    char *pe = db_name(ctx->db_path);
    if (ctx->json) {
        json_obj_begin();
        json_key("holding");
        json_str(pe);
        json_obj_end();
        json_end_line();
    } else if (!ctx->quiet) {
        printf("holding '%s' open%s\n", pe ? pe : "?", set ? "" : " until interrupted");
    }
    free(pe);
    fflush(stdout);
    struct timespec end, now;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)(ms / 1000);
    end.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    struct follow_state fs;
    memset(&fs, 0, sizeof fs);
    while (!stop) {
        struct timespec nap = {0, 100000000L};   /* a signal ends it early */
        if (opt_flag(ctx, "syslog")) {
            struct timespec wall;
            clock_gettime(CLOCK_REALTIME, &wall);
            follow_events(ctx, &fs, (int64_t)wall.tv_sec * 1000 + wall.tv_nsec / 1000000);
        }
        if (set) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec > end.tv_sec ||
                (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
                break;
        }
        if (nanosleep(&nap, NULL) != 0 && errno != EINTR)
            break;
    }
    return 0;
}
