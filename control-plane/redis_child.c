/*
 * redis_child.c - start and stop the private redis-server child.
 */
#include "redis_child.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int redis_child__connectable(const char *path)
{
    struct sockaddr_un sa;
    int fd, ok;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    if (ok) {
        char buf[16];
        ssize_t n;
        ok = write(fd, "PING\r\n", 6) == 6 && (n = read(fd, buf, sizeof(buf) - 1)) > 0 &&
             strncmp(buf, "+PONG", 5) == 0;
    }
    close(fd);
    return ok;
}

int redis_child_start(const char *data_dir, char *url, size_t url_n, pid_t *pid, struct ty_err *err)
{
    char dir[4096], sock[4200], logf[4200];
    struct sockaddr_un probe;
    pid_t child;
    int status;

    if (strlen(data_dir) > 4000)
        return ty_err_set(err, TY_EREDIS, "data-dir", "the data dir path is too long");
    snprintf(dir, sizeof(dir), "%s/redis", data_dir);
    snprintf(sock, sizeof(sock), "%s/redis.sock", dir);
    snprintf(logf, sizeof(logf), "%s/redis.log", dir);
    if (strlen(sock) >= sizeof(probe.sun_path))
        return ty_err_set(err, TY_EREDIS, "data-dir",
                          "the data dir path is too long for a unix socket: %s", sock);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return ty_err_set(err, TY_EREDIS, "data-dir", "cannot create %s: %s", dir, strerror(errno));
    /* a redis-server of a server that was just killed may still be saving its AOF after its
       PDEATHSIG: give it time to go before calling the data dir busy */
    for (int i = 0; i < 100 && redis_child__connectable(sock); i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (redis_child__connectable(sock))
        return ty_err_set(err, TY_EREDIS, "data-dir",
                          "a redis-server is already running on %s (another trainyard-server on "
                          "this data dir?)",
                          sock);
    unlink(sock);
    child = fork();
    if (child < 0)
        return ty_err_set(err, TY_EREDIS, NULL, "fork: %s", strerror(errno));
    if (child == 0) {
        sigset_t none;
        /* the server blocks SIGTERM/SIGINT for sigwait and ignores SIGPIPE; exec keeps both,
           and redis must see its signals */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() == 1)
            _exit(1);
        setpgid(0, 0);
        execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", sock,
               "--unixsocketperm", "700", "--dir", dir, "--appendonly", "yes", "--appendfsync",
               "everysec", "--save", "", "--daemonize", "no", "--logfile", logf, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        if (redis_child__connectable(sock)) {
            snprintf(url, url_n, "unix://%s", sock);
            *pid = child;
            return 0;
        }
        if (waitpid(child, &status, WNOHANG) == child) {
            if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
                return ty_err_set(err, TY_EREDIS, "redis",
                                  "redis-server not found: install it (apt-get install "
                                  "redis-server) or pass --redis URL");
            return ty_err_set(err, TY_EREDIS, "redis",
                              "the private redis-server exited at start; see %s", logf);
        }
        nanosleep(&ts, NULL);
    }
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    return ty_err_set(err, TY_EREDIS, "redis", "the private redis-server did not answer on %s",
                      sock);
}

void redis_child_stop(pid_t pid)
{
    int status;
    if (pid <= 0)
        return;
    kill(pid, SIGTERM);
    for (int i = 0; i < 200; i++) {
        struct timespec ts = {0, 50 * 1000 * 1000};
        if (waitpid(pid, &status, WNOHANG) == pid)
            return;
        nanosleep(&ts, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
}
