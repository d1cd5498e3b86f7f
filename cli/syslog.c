/*
 * syslog.c - `--syslog` of the commands that run checks (check, reserve)
 * and of `rlctl hold`: one line per penalty event, like fail2ban's log
 * ("rlstore: BAN key=203.0.113.7 action=login until=... level=0 rule=..."),
 * sent to the local syslog daemon.
 *
 * The line goes as one RFC 3164 datagram to /dev/log (or the socket named
 * by $RLSTORE_SYSLOG: containers and tests), facility daemon, tag
 * "rlstore": what syslog(3) sends, without its fixed path.  A daemon that
 * is not there loses the line; the event stays in the database.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "rlctl.h"

#define FACILITY_DAEMON (3 << 3)

void rlctl_syslog_line(void *ctx, int level, const char *line)
{
    struct sockaddr_un sa;
    const char *path = getenv("RLSTORE_SYSLOG");
    char msg[2048], stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    (void)ctx;
    if (!path || !*path)
        path = "/dev/log";
    if (strlen(path) >= sizeof sa.sun_path)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path));
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%b %e %H:%M:%S", &tm);
    /* the library's line starts with "rlstore: ": the tag and pid take its place */
    const char *body = strncmp(line, "rlstore: ", 9) == 0 ? line + 9 : line;
    int n = snprintf(msg, sizeof msg, "<%d>%s rlstore[%ld]: %s", FACILITY_DAEMON | (level & 7),
                     stamp, (long)getpid(), body);
    if (n < 0)
        return;
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    sendto(fd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1, MSG_NOSIGNAL,
           (struct sockaddr *)&sa, sizeof sa);
    close(fd);
}
