/*
 * ty_log.c - structured log lines on stderr, one write(2) per line.
 */
#include "ty_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int ty_log_level = TY_LOG_INFO;

static const char *const ty_log_names[] = {"debug", "info", "warn", "error"};

int ty_log_set_level(const char *name)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, ty_log_names[i]) == 0) {
            ty_log_level = i;
            return 0;
        }
    }
    return -1;
}

void ty_log_write(int level, const char *event, const char *fmt, ...)
{
    char line[2048];
    struct timeval tv;
    struct tm tm;
    size_t n;
    int w;
    va_list ap;

    if (level < 0 || level > 3)
        level = TY_LOG_ERROR;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    n = strftime(line, sizeof(line), "ts=%Y-%m-%dT%H:%M:%S", &tm);
    w = snprintf(line + n, sizeof(line) - n, ".%03dZ level=%s event=%s ", (int)(tv.tv_usec / 1000),
                 ty_log_names[level], event);
    if (w > 0)
        n += (size_t)w < sizeof(line) - n ? (size_t)w : sizeof(line) - n - 1;
    va_start(ap, fmt);
    w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    if (w > 0)
        n += (size_t)w < sizeof(line) - n ? (size_t)w : sizeof(line) - n - 1;
    if (n >= sizeof(line) - 1)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0)
        return;
}
