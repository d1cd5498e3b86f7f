/*
 * shmtest.h - what the multi-process suites of the shared-memory table
 * (test_shm_procs.c, test_shm_snap.c) share: a scratch folder per suite
 * (SHMTEST_NAME, defined before including), the size knobs read from the
 * environment, and writer processes started together.
 */
#ifndef RLS_SHMTEST_H
#define RLS_SHMTEST_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static char dir[256];

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/" SHMTEST_NAME ".XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The positive integer in $name, else dflt. */
static int knob(const char *name, int dflt)
{
    const char *v = getenv(name);
    return v && atoi(v) > 0 ? atoi(v) : dflt;
}

/* procs children each run writer(p, i, ops, fd): fd a pipe's reading end
 * they wait on, closed by the parent when all have started (here, before
 * returning), so that they start together; writer never returns. */
static void start_writers(pid_t *pid, int procs, void (*writer)(const char *, int, int, int),
                          const char *p, int ops)
{
    int go[2];
    assert_int_equal(pipe(go), 0);
    for (int i = 0; i < procs; i++) {
        pid[i] = fork();
        assert_true(pid[i] >= 0);
        if (pid[i] == 0) {
            close(go[1]);
            writer(p, i, ops, go[0]);
        }
    }
    close(go[0]);
    close(go[1]);
}

#endif
