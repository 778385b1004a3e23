/*
 * ty_proc.c - running a system tool and waiting for it (ty_proc.h).
 */
#define _GNU_SOURCE /* pipe2 */
#include "ty_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *ty_proc_find(const char *tool, char *buf, size_t n)
{
    static const char *const dirs[] = {"/usr/sbin", "/sbin", "/usr/bin", "/bin", NULL};
    for (size_t i = 0; dirs[i]; i++) {
        int w = snprintf(buf, n, "%s/%s", dirs[i], tool);
        if (w > 0 && (size_t)w < n && access(buf, X_OK) == 0)
            return buf;
    }
    return NULL;
}

int ty_proc_run(const char *const *argv, char *out, size_t n)
{
    posix_spawn_file_actions_t fa;
    int p[2], status = 0, rc;
    size_t got = 0;
    pid_t pid;

    if (out && n)
        out[0] = '\0';
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
    rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        if (out && n)
            snprintf(out, n, "%s", strerror(rc));
        return -1;
    }
    for (;;) {
        char buf[256];
        ssize_t r = read(p[0], buf, sizeof(buf));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        for (ssize_t i = 0; out && i < r && got + 1 < n; i++)
            out[got++] = buf[i] == '\n' ? ' ' : buf[i];
    }
    if (out && n)
        out[got < n ? got : n - 1] = '\0';
    close(p[0]);
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
