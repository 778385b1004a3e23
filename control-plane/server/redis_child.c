/*
 * redis_child.c - start, supervise (restart with backoff) and stop the private redis-server.
 *
 * The first redis-server is forked by the caller of redis_child_start; every later one by the
 * supervisor thread, which lives until redis_child_stop, so that PR_SET_PDEATHSIG (tied to the
 * forking thread) only fires when the server goes. The supervisor is the only one to reap.
 */
#include "redis_child.h"

#include "ty_log.h"
#include "ty_time.h"

#include <errno.h>
#include <pthread.h>
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

#define REDIS_CHILD_BACKOFF_MIN 0.5
#define REDIS_CHILD_BACKOFF_MAX 30.0
#define REDIS_CHILD_HEALTHY_S   60.0 /* a run this long resets the backoff */

struct redis_child {
    char dir[4096], sock[4200], logf[4200];
    pthread_mutex_t mu; /* guards pid, stopping, done, restarts */
    pthread_cond_t cv;
    pid_t pid; /* the running redis-server, 0 while none */
    int stopping, done, restarts;
    pthread_t thread;
};

static void redis_child_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

static int redis_child_connectable(const char *path)
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

/* Forks and execs redis-server on rc's files. The child's pid, or -1 (errno). */
static pid_t redis_child_spawn(const struct redis_child *rc)
{
    pid_t child;
    unlink(rc->sock);
    child = fork();
    if (child != 0)
        return child;
    {
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
        execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", rc->sock,
               "--unixsocketperm", "700", "--dir", rc->dir, "--appendonly", "yes", "--appendfsync",
               "everysec", "--save", "", "--daemonize", "no", "--logfile", rc->logf, (char *)NULL);
        _exit(127);
    }
}

/* Waits up to 10 s for pid to answer PING. 0: it answers; 1: it exited (*status, reaped);
   -1: it did not answer in time (still running); -2: stopping was asked for. */
static int redis_child_wait_ready(struct redis_child *rc, pid_t pid, int *status)
{
    for (int i = 0; i < 200; i++) {
        int stopping;
        if (redis_child_connectable(rc->sock))
            return 0;
        if (waitpid(pid, status, WNOHANG) == pid)
            return 1;
        pthread_mutex_lock(&rc->mu);
        stopping = rc->stopping;
        pthread_mutex_unlock(&rc->mu);
        if (stopping)
            return -2;
        redis_child_sleep(0.05);
    }
    return -1;
}

static void redis_child_describe(int status, char *buf, size_t n)
{
    if (WIFSIGNALED(status))
        snprintf(buf, n, "signal=%d", WTERMSIG(status));
    else if (WIFEXITED(status))
        snprintf(buf, n, "exit=%d", WEXITSTATUS(status));
    else
        snprintf(buf, n, "status=%d", status);
}

/* Waits for the backoff or a stop request. 1 when stopping. */
static int redis_child_backoff(struct redis_child *rc, double secs)
{
    struct timespec ts;
    int stopping;
    ty_deadline_ms(&ts, (long)(secs * 1000.0));
    pthread_mutex_lock(&rc->mu);
    while (!rc->stopping && pthread_cond_timedwait(&rc->cv, &rc->mu, &ts) != ETIMEDOUT)
        ;
    stopping = rc->stopping;
    pthread_mutex_unlock(&rc->mu);
    return stopping;
}

static void *redis_child_supervise(void *arg)
{
    struct redis_child *rc = arg;
    double backoff = REDIS_CHILD_BACKOFF_MIN, started = ty_mono_s();
    int attempt = 0;

    for (;;) {
        pid_t pid, w;
        int status = 0, ready;
        char why[64];

        pthread_mutex_lock(&rc->mu);
        pid = rc->pid;
        pthread_mutex_unlock(&rc->mu);
        if (pid > 0) {
            while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
                ;
            pthread_mutex_lock(&rc->mu);
            rc->pid = 0;
            if (rc->stopping) {
                pthread_mutex_unlock(&rc->mu);
                break;
            }
            pthread_mutex_unlock(&rc->mu);
            redis_child_describe(status, why, sizeof(why));
            if (ty_mono_s() - started >= REDIS_CHILD_HEALTHY_S) {
                backoff = REDIS_CHILD_BACKOFF_MIN;
                attempt = 0;
            }
            ty_log(TY_LOG_WARN, "redis.died", "pid=%d %s ran_s=%.1f restart_in_s=%.1f log=%s",
                   (int)pid, why, ty_mono_s() - started, backoff, rc->logf);
        }
        if (redis_child_backoff(rc, backoff))
            break;
        backoff = backoff * 2 > REDIS_CHILD_BACKOFF_MAX ? REDIS_CHILD_BACKOFF_MAX : backoff * 2;
        attempt++;
        pthread_mutex_lock(&rc->mu);
        if (rc->stopping) {
            pthread_mutex_unlock(&rc->mu);
            break;
        }
        pid = redis_child_spawn(rc);
        rc->pid = pid > 0 ? pid : 0;
        pthread_mutex_unlock(&rc->mu);
        if (pid < 0) {
            ty_log(TY_LOG_ERROR, "redis.restart_failed", "attempt=%d error=\"fork: %s\"", attempt,
                   strerror(errno));
            continue;
        }
        started = ty_mono_s();
        ready = redis_child_wait_ready(rc, pid, &status);
        if (ready == 0) {
            pthread_mutex_lock(&rc->mu);
            rc->restarts++;
            pthread_mutex_unlock(&rc->mu);
            ty_log(TY_LOG_INFO, "redis.restarted", "pid=%d attempt=%d socket=%s", (int)pid, attempt,
                   rc->sock);
        } else if (ready == 1) {
            pthread_mutex_lock(&rc->mu);
            rc->pid = 0;
            pthread_mutex_unlock(&rc->mu);
            redis_child_describe(status, why, sizeof(why));
            ty_log(TY_LOG_ERROR, "redis.restart_failed",
                   "attempt=%d %s error=\"redis-server exited at start; see %s\"", attempt, why,
                   rc->logf);
        } else if (ready == -1) {
            ty_log(TY_LOG_ERROR, "redis.restart_failed",
                   "attempt=%d pid=%d error=\"redis-server did not answer in 10 s\"", attempt,
                   (int)pid);
            kill(pid, SIGKILL); /* reaped at the top of the loop */
        }
    }
    pthread_mutex_lock(&rc->mu);
    rc->done = 1;
    pthread_cond_broadcast(&rc->cv);
    pthread_mutex_unlock(&rc->mu);
    return NULL;
}

struct redis_child *redis_child_start(const char *data_dir, char *url, size_t url_n,
                                      struct ty_err *err)
{
    struct redis_child *rc;
    struct sockaddr_un probe;
    pid_t child;
    int status, ready;

    if (strlen(data_dir) > 4000) {
        ty_err_set(err, TY_EREDIS, "data-dir", "the data dir path is too long");
        return NULL;
    }
    rc = calloc(1, sizeof(*rc));
    if (!rc) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&rc->mu, NULL);
    pthread_cond_init(&rc->cv, NULL);
    snprintf(rc->dir, sizeof(rc->dir), "%s/redis", data_dir);
    snprintf(rc->sock, sizeof(rc->sock), "%s/redis.sock", rc->dir);
    snprintf(rc->logf, sizeof(rc->logf), "%s/redis.log", rc->dir);
    if (strlen(rc->sock) >= sizeof(probe.sun_path)) {
        ty_err_set(err, TY_EREDIS, "data-dir",
                   "the data dir path is too long for a unix socket: %s", rc->sock);
        goto fail;
    }
    if (mkdir(rc->dir, 0700) != 0 && errno != EEXIST) {
        ty_err_set(err, TY_EREDIS, "data-dir", "cannot create %s: %s", rc->dir, strerror(errno));
        goto fail;
    }
    /* The AOF holds every access key and secret: its folder is ours alone, or we do not start
       (a folder opened to others by anything, a link in its place). */
    {
        struct stat st = {0};
        if (lstat(rc->dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 077) != 0) {
            ty_err_set(err, TY_EREDIS, "data-dir",
                       "%s holds the credentials' store and must be a folder of uid %d with mode "
                       "0700 (found %s, uid %d, mode %04o): refusing to start; check who opened "
                       "it, then chmod 700 it",
                       rc->dir, (int)geteuid(),
                       lstat(rc->dir, &st) != 0 ? "nothing"
                       : S_ISLNK(st.st_mode)    ? "a symbolic link"
                       : S_ISDIR(st.st_mode)    ? "a folder"
                                                : "a file",
                       (int)st.st_uid, (unsigned)(st.st_mode & 07777));
            goto fail;
        }
    }
    /* a redis-server of a server that was just killed may still be saving its AOF after its
       PDEATHSIG: give it time to go before calling the data dir busy */
    for (int i = 0; i < 100 && redis_child_connectable(rc->sock); i++)
        redis_child_sleep(0.1);
    if (redis_child_connectable(rc->sock)) {
        ty_err_set(err, TY_EREDIS, "data-dir",
                   "a redis-server is already running on %s (another trainyard-server on "
                   "this data dir?)",
                   rc->sock);
        goto fail;
    }
    child = redis_child_spawn(rc);
    if (child < 0) {
        ty_err_set(err, TY_EREDIS, NULL, "fork: %s", strerror(errno));
        goto fail;
    }
    ready = redis_child_wait_ready(rc, child, &status);
    if (ready == 1) {
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
            ty_err_set(err, TY_EREDIS, "redis",
                       "redis-server not found: install it (apt-get install redis-server) or pass "
                       "--redis URL");
        else
            ty_err_set(err, TY_EREDIS, "redis", "the private redis-server exited at start; see %s",
                       rc->logf);
        goto fail;
    }
    if (ready != 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        ty_err_set(err, TY_EREDIS, "redis", "the private redis-server did not answer on %s",
                   rc->sock);
        goto fail;
    }
    rc->pid = child;
    if (pthread_create(&rc->thread, NULL, redis_child_supervise, rc) != 0) {
        kill(child, SIGTERM);
        waitpid(child, &status, 0);
        ty_err_set(err, TY_EREDIS, "redis", "cannot start the redis supervisor thread");
        goto fail;
    }
    snprintf(url, url_n, "unix://%s", rc->sock);
    return rc;
fail:
    pthread_cond_destroy(&rc->cv);
    pthread_mutex_destroy(&rc->mu);
    free(rc);
    return NULL;
}

pid_t redis_child_pid(struct redis_child *rc)
{
    pid_t pid;
    pthread_mutex_lock(&rc->mu);
    pid = rc->pid;
    pthread_mutex_unlock(&rc->mu);
    return pid;
}

int redis_child_restarts(struct redis_child *rc)
{
    int n;
    pthread_mutex_lock(&rc->mu);
    n = rc->restarts;
    pthread_mutex_unlock(&rc->mu);
    return n;
}

void redis_child_stop(struct redis_child *rc)
{
    struct timespec ts;
    pid_t pid;

    if (!rc)
        return;
    pthread_mutex_lock(&rc->mu);
    rc->stopping = 1;
    pthread_cond_broadcast(&rc->cv);
    pid = rc->pid;
    if (pid > 0)
        kill(pid, SIGTERM);
    /* the supervisor reaps it and says done; SIGKILL after 10 s */
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 10;
    while (!rc->done && pthread_cond_timedwait(&rc->cv, &rc->mu, &ts) != ETIMEDOUT)
        ;
    if (!rc->done && rc->pid > 0)
        kill(rc->pid, SIGKILL);
    pthread_mutex_unlock(&rc->mu);
    pthread_join(rc->thread, NULL);
    pthread_cond_destroy(&rc->cv);
    pthread_mutex_destroy(&rc->mu);
    free(rc);
}
