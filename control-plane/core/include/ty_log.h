/*
 * ty_log.h - the one logger: structured `ts= level= event= k=v ...` lines on stderr.
 *
 * Owns: the global level and the line format. Thread-safe: each line is written with one
 * write(2). Libraries (libtyc, libtyprof) do not use it; they take a log callback.
 */
#ifndef TY_CORE_TY_LOG_H
#define TY_CORE_TY_LOG_H

enum ty_log_level { TY_LOG_DEBUG = 0, TY_LOG_INFO = 1, TY_LOG_WARN = 2, TY_LOG_ERROR = 3 };

extern int ty_log_level;

/* Parses "debug|info|warn|error"; returns 0, or -1 for an unknown name (level unchanged). */
int ty_log_set_level(const char *name);

/* Writes one line: ts=... level=... event=<event> <formatted key=value pairs>. */
void ty_log_write(int level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Checks the level before the arguments are evaluated. */
#define ty_log(lvl, event, ...)                                                                    \
    do {                                                                                           \
        if ((lvl) >= ty_log_level)                                                                 \
            ty_log_write((lvl), (event), __VA_ARGS__);                                             \
    } while (0)

#endif
