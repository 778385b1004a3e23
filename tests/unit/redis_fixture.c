/*
 * redis_fixture.c - starts and stops a private redis-server for unit tests (see the header).
 */
#include "redis_fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *redis_fixture_bin(void)
{
    const char *b = getenv("TY_REDIS_SERVER");
    return b && *b ? b : "/usr/bin/redis-server";
}

int redis_fixture_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void redis_fixture_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void redis_fixture_kill(struct redis_fixture *f, int sig);

static int redis_fixture_spawn(struct redis_fixture *f)
{
    char port[16], log[300];
    pid_t pid;
    snprintf(port, sizeof(port), "%d", f->port);
    snprintf(log, sizeof(log), "%s/redis.log", f->dir);
    unlink(f->sock);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl(redis_fixture_bin(), "redis-server", "--port", port, "--bind", "127.0.0.1",
              "--unixsocket", f->sock, "--save", "", "--appendonly", "no", "--daemonize", "no",
              "--dir", f->dir, "--logfile", log, (char *)NULL);
        _exit(127);
    }
    f->pid = pid;
    for (int i = 0; i < 500; i++) {
        redisContext *c;
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            f->pid = 0;
            fprintf(stderr, "redis-server exited early, see %s\n", log);
            return -1;
        }
        c = redisConnectUnix(f->sock);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            int ok = r && r->type == REDIS_REPLY_STATUS;
            if (r)
                freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 0;
        } else if (c) {
            redisFree(c);
        }
        redis_fixture_sleep_ms(10);
    }
    redis_fixture_kill(f, SIGKILL);
    return -1;
}

int redis_fixture_start(struct redis_fixture *f)
{
    memset(f, 0, sizeof(*f));
    if (access(redis_fixture_bin(), X_OK) != 0)
        return 77;
    snprintf(f->dir, sizeof(f->dir), "/tmp/ty-redis-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->sock, sizeof(f->sock), "%s/redis.sock", f->dir);
    snprintf(f->url_unix, sizeof(f->url_unix), "unix://%s", f->sock);
    /* another process may take the free port before redis binds it: try a few */
    for (int attempt = 0; attempt < 3; attempt++) {
        f->port = redis_fixture_free_port();
        if (f->port <= 0)
            break;
        snprintf(f->url_tcp, sizeof(f->url_tcp), "redis://127.0.0.1:%d", f->port);
        if (redis_fixture_spawn(f) == 0)
            return 0;
    }
    redis_fixture_stop(f);
    return -1;
}

static void redis_fixture_kill(struct redis_fixture *f, int sig)
{
    if (f->pid > 0) {
        kill(f->pid, sig);
        while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR)
            ;
        f->pid = 0;
    }
}

int redis_fixture_restart(struct redis_fixture *f)
{
    redis_fixture_kill(f, SIGKILL);
    return redis_fixture_spawn(f);
}

void redis_fixture_stop(struct redis_fixture *f)
{
    char path[400];
    redis_fixture_kill(f, SIGTERM);
    if (f->dir[0]) {
        unlink(f->sock);
        snprintf(path, sizeof(path), "%s/redis.log", f->dir);
        unlink(path);
        rmdir(f->dir);
        f->dir[0] = '\0';
    }
}

struct redisContext *redis_fixture_raw(const struct redis_fixture *f)
{
    redisContext *c = redisConnectUnix(f->sock);
    if (c && c->err) {
        redisFree(c);
        return NULL;
    }
    return c;
}
