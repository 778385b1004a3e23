/*
 * test_relay.c - relay.c against real sockets: bytes both ways (1 MiB each way, half-close
 * passed on), the connection cap, the idle timeout, a bad target, the listener bound inside a
 * network namespace through /proc/<pid>/ns/net (our own; needs root, else the namespace step is
 * skipped), and no fd or thread left after relay_stop. Also stage_env's variables for the
 * relay and the container credentials provider.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "relay.h"
#include "spec.h"
#include "stage.h"

/* ---- an echo server: one detached thread per connection ---- */

static int echo_lfd = -1, echo_port;

static void *echo_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[16384];
    ssize_t n;

    while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) {
        ssize_t off = 0;
        while (off < n) {
            ssize_t w = send(fd, buf + off, (size_t)(n - off), MSG_NOSIGNAL);
            if (w <= 0)
                goto out;
            off += w;
        }
    }
out:
    close(fd);
    return NULL;
}

static atomic_uint echo_peer; /* source address (host order) of the echo's last connection */

static void *echo_accept(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_t t;
        struct sockaddr_in peer;
        socklen_t pl = sizeof(peer);
        int fd = accept(echo_lfd, (struct sockaddr *)&peer, &pl);
        if (fd < 0)
            return NULL;
        atomic_store(&echo_peer, ntohl(peer.sin_addr.s_addr));
        if (pthread_create(&t, NULL, echo_conn, (void *)(intptr_t)fd) == 0)
            pthread_detach(t);
        else
            close(fd);
    }
}

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static int connect_port(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct timeval tv = {.tv_sec = 10};

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Reads exactly n bytes (or up to EOF). Returns the count. */
static size_t read_n(int fd, char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = recv(fd, buf + got, n - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

static void send_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
        assert_true(w > 0);
        buf += w;
        n -= (size_t)w;
    }
}

/* 1 when the peer closed fd (recv 0 or reset) within 5 s. */
static int closed_by_peer(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    if (poll(&p, 1, 5000) != 1)
        return 0;
    return recv(fd, &c, 1, 0) <= 0;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int setup(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t al = sizeof(a);
    pthread_t t;

    (void)state;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    echo_lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (echo_lfd < 0 || bind(echo_lfd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        listen(echo_lfd, 64) != 0 || getsockname(echo_lfd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    echo_port = ntohs(a.sin_port);
    if (pthread_create(&t, NULL, echo_accept, NULL) != 0)
        return -1;
    pthread_detach(t);
    return 0;
}

static struct relay *start(int pid, int max_conns, int idle_s)
{
    char target[64];
    struct relay_opts o = {
        .pid = pid, .port = 0, .target = target, .max_conns = max_conns, .idle_s = idle_s};
    struct ty_err err = {0};
    struct relay *r;

    /* "localhost": resolved to 127.0.0.1 even where it also means ::1 */
    snprintf(target, sizeof(target), "http://localhost:%d/ignored/path", echo_port);
    r = relay_start(&o, &err);
    if (!r)
        print_error("relay_start: %s\n", err.msg);
    return r;
}

static void test_relay_bytes(void **state)
{
    size_t n = 1024 * 1024;
    char *out = malloc(n), *in = malloc(n);
    struct relay *r;
    int fd, pid = getuid() == 0 ? getpid() : 0;
    long accepted;

    (void)state;
    assert_non_null(out);
    assert_non_null(in);
    for (size_t i = 0; i < n; i++)
        out[i] = (char)(i * 7 + i / 1000);
    r = start(pid, 0, 0);
    assert_non_null(r);
    assert_true(relay_port(r) > 0);
    fd = connect_port(relay_port(r));
    send_all(fd, "hello", 5);
    assert_int_equal(read_n(fd, in, 5), 5);
    assert_memory_equal(in, "hello", 5);
    /* 1 MiB: more than the relay buffers, so the echo's writes wait for our reads */
    {
        size_t sent = 0, got = 0;
        while (got < n) {
            struct pollfd p = {.fd = fd, .events = POLLIN | (sent < n ? POLLOUT : 0)};
            assert_true(poll(&p, 1, 10000) > 0);
            if ((p.revents & POLLOUT) && sent < n) {
                ssize_t w = send(fd, out + sent, n - sent > 65536 ? 65536 : n - sent,
                                 MSG_DONTWAIT | MSG_NOSIGNAL);
                if (w > 0)
                    sent += (size_t)w;
            }
            if (p.revents & POLLIN) {
                ssize_t rr = recv(fd, in + got, n - got, MSG_DONTWAIT);
                assert_true(rr > 0 || (rr < 0 && errno == EAGAIN));
                if (rr > 0)
                    got += (size_t)rr;
            }
        }
    }
    assert_memory_equal(in, out, n);
    /* half-close: our FIN reaches the echo server, whose close comes back as EOF */
    shutdown(fd, SHUT_WR);
    assert_true(closed_by_peer(fd));
    close(fd);
    relay_stats(r, NULL, &accepted, NULL, NULL);
    assert_int_equal(accepted, 1);
    relay_stop(r);
    free(in);
    free(out);
}

static void test_relay_cap_and_idle(void **state)
{
    struct relay *r;
    int a, b, c, open = -1;
    long refused = 0, idled = 0;
    char buf[4];

    (void)state;
    r = start(0, 2, 1);
    assert_non_null(r);
    a = connect_port(relay_port(r));
    b = connect_port(relay_port(r));
    send_all(a, "a", 1);
    send_all(b, "b", 1);
    assert_int_equal(read_n(a, buf, 1), 1);
    assert_int_equal(read_n(b, buf, 1), 1);
    c = connect_port(relay_port(r)); /* over the cap: accepted and closed */
    assert_true(closed_by_peer(c));
    close(c);
    relay_stats(r, &open, NULL, &refused, NULL);
    assert_int_equal(open, 2);
    assert_int_equal(refused, 1);
    /* idle for more than a second: both closed by the relay */
    assert_true(closed_by_peer(a));
    assert_true(closed_by_peer(b));
    relay_stats(r, &open, NULL, NULL, &idled);
    assert_int_equal(open, 0);
    assert_int_equal(idled, 2);
    close(a);
    close(b);
    relay_stop(r);
}

static void test_relay_bad_target(void **state)
{
    struct relay_opts o = {.target = "http://"};
    struct ty_err err = {0};

    (void)state;
    assert_null(relay_start(&o, &err));
    assert_int_equal(err.code, TY_EINVAL);
    o.target = "127.0.0.1:notaport";
    assert_null(relay_start(&o, &err));
    o.target = "127.0.0.1:1";
    o.pid = 999999999; /* no such process: no namespace to enter */
    assert_null(relay_start(&o, &err));
    assert_int_equal(err.code, TY_EIO);
    assert_non_null(strstr(err.msg, "/proc/999999999/ns/net"));
}

/* A target that refuses: the client's connection is closed, nothing else happens. */
static void test_relay_target_down(void **state)
{
    struct relay_opts o = {.target = "127.0.0.1:1"};
    struct ty_err err = {0};
    struct relay *r;
    int fd;

    (void)state;
    r = relay_start(&o, &err);
    assert_non_null(r);
    fd = connect_port(relay_port(r));
    assert_true(closed_by_peer(fd));
    close(fd);
    relay_stop(r);
}

/* No fd and no thread outlive relay_stop, even with connections open at the time. */
static void test_relay_no_leak(void **state)
{
    int fds0, thr0, fds1 = -1, thr1 = -1, fd[5];
    char buf[2];

    (void)state;
    sleep_ms(200); /* echo threads of earlier tests end */
    fds0 = count_dir("/proc/self/fd");
    thr0 = count_dir("/proc/self/task");
    for (int round = 0; round < 3; round++) {
        struct relay *r = start(getuid() == 0 ? getpid() : 0, 0, 0);
        assert_non_null(r);
        for (int i = 0; i < 5; i++) {
            fd[i] = connect_port(relay_port(r));
            send_all(fd[i], "x", 1);
            assert_int_equal(read_n(fd[i], buf, 1), 1);
        }
        relay_stop(r); /* with 5 relayed connections open */
        for (int i = 0; i < 5; i++) {
            assert_true(closed_by_peer(fd[i]));
            close(fd[i]);
        }
    }
    for (int i = 0; i < 50; i++) { /* the echo threads see EOF and end */
        fds1 = count_dir("/proc/self/fd");
        thr1 = count_dir("/proc/self/task");
        if (fds1 == fds0 && thr1 == thr0)
            break;
        sleep_ms(100);
    }
    assert_int_equal(fds1, fds0);
    assert_int_equal(thr1, thr0);
}

static const char *env_get(char **env, const char *k)
{
    size_t kl = strlen(k);
    for (char **p = env; *p; p++)
        if (strncmp(*p, k, kl) == 0 && (*p)[kl] == '=')
            return *p + kl + 1;
    return NULL;
}

static void test_stage_env_relay(void **state)
{
    struct spec sp;
    struct stage_env_opts o = {
        .cpus = 1, .region = "eu-west-1", .endpoint_url = "http://127.0.0.1:8080"};
    char **env;

    (void)state;
    memset(&sp, 0, sizeof(sp));
    snprintf(sp.name, sizeof(sp.name), "cred-unit");
    sp.instance_count = 1;
    sp.hyperparameters = json_object();
    sp.environment = json_object();
    sp.channels = json_array();
    /* no relay: the host's URL, no credentials */
    env = stage_env(&sp, &o);
    assert_non_null(env);
    assert_string_equal(env_get(env, "S3_ENDPOINT_URL"), "http://127.0.0.1:8080");
    assert_null(env_get(env, "AWS_ENDPOINT_URL"));
    assert_null(env_get(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI"));
    assert_null(env_get(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN"));
    stage_env_free(env);
    /* relay and token */
    o.relay_port = RELAY_PORT;
    o.creds_path = "/_trainyard/credentials";
    o.creds_token = "abc123";
    env = stage_env(&sp, &o);
    assert_non_null(env);
    assert_string_equal(env_get(env, "AWS_ENDPOINT_URL"), "http://127.0.0.1:9911");
    assert_string_equal(env_get(env, "S3_ENDPOINT_URL"), "http://127.0.0.1:9911");
    assert_string_equal(env_get(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI"),
                        "http://127.0.0.1:9911/_trainyard/credentials");
    assert_string_equal(env_get(env, "AWS_CONTAINER_AUTHORIZATION_TOKEN"), "abc123");
    assert_string_equal(env_get(env, "AWS_REGION"), "eu-west-1");
    assert_string_equal(env_get(env, "AWS_DEFAULT_REGION"), "eu-west-1");
    assert_null(env_get(env, "AWS_ACCESS_KEY_ID"));
    assert_null(env_get(env, "AWS_SECRET_ACCESS_KEY"));
    stage_env_free(env);
    /* relay without a token: the API, no credentials provider */
    o.creds_token = "";
    env = stage_env(&sp, &o);
    assert_string_equal(env_get(env, "AWS_ENDPOINT_URL"), "http://127.0.0.1:9911");
    assert_null(env_get(env, "AWS_CONTAINER_CREDENTIALS_FULL_URI"));
    stage_env_free(env);
    json_decref(sp.hyperparameters);
    json_decref(sp.environment);
    json_decref(sp.channels);
}

/* All relays of one job share one budget, and reach a loopback target
   from the job's own source address (never 127.0.0.0/16). */
static void test_relay_job_budget(void **state)
{
    char target[64];
    struct relay_opts o = {.target = target, .job = "flood-job", .job_max = 3};
    struct relay_opts other = {.target = target, .job = "other-job", .job_max = 3};
    struct ty_err err = {0};
    struct relay *r1, *r2, *r3;
    int fds[4], x, y, open = -1;
    long refused = 0;
    char buf[4];

    (void)state;
    snprintf(target, sizeof(target), "127.0.0.1:%d", echo_port);
    r1 = relay_start(&o, &err);
    r2 = relay_start(&o, &err); /* the job's second host */
    r3 = relay_start(&other, &err);
    assert_non_null(r1);
    assert_non_null(r2);
    assert_non_null(r3);
    fds[0] = connect_port(relay_port(r1));
    fds[1] = connect_port(relay_port(r1));
    fds[2] = connect_port(relay_port(r2));
    for (int i = 0; i < 3; i++) {
        send_all(fds[i], "j", 1);
        assert_int_equal(read_n(fds[i], buf, 1), 1);
    }
    assert_int_equal(atomic_load(&echo_peer), relay_source_addr("flood-job"));
    /* the job's budget is spent: the next one, on either host, is closed at once */
    fds[3] = connect_port(relay_port(r2));
    assert_true(closed_by_peer(fds[3]));
    close(fds[3]);
    x = connect_port(relay_port(r1));
    assert_true(closed_by_peer(x));
    close(x);
    relay_stats(r2, &open, NULL, &refused, NULL);
    assert_int_equal(open, 1);
    assert_int_equal(refused, 1);
    /* another job is not refused, and comes from its own address */
    y = connect_port(relay_port(r3));
    send_all(y, "o", 1);
    assert_int_equal(read_n(y, buf, 1), 1);
    assert_int_equal(atomic_load(&echo_peer), relay_source_addr("other-job"));
    close(y);
    /* a slot freed on one host is usable on the other */
    close(fds[0]);
    sleep_ms(300);
    x = connect_port(relay_port(r2));
    send_all(x, "k", 1);
    assert_int_equal(read_n(x, buf, 1), 1);
    close(x);
    for (int i = 1; i < 3; i++)
        close(fds[i]);
    relay_stop(r1);
    relay_stop(r2);
    relay_stop(r3);
}

/* However the endpoint spells this host (0.0.0.0, [::], [::1], [::ffff:127.0.0.1], an
   address of one of its interfaces), a job's connections reach it from the job's own loopback
   address: before, every spelling but a literal 127.x address arrived as the host's own. */
static void test_relay_local_spellings(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t al = sizeof(a);
    char t[8][96];
    struct ifaddrs *ifs = NULL;
    int lfd, port, n = 0, one = 1;

    (void)state;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(lfd >= 0);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 16), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
    port = ntohs(a.sin_port);
    snprintf(t[n++], sizeof(t[0]), "http://0.0.0.0:%d", port);
    snprintf(t[n++], sizeof(t[0]), "http://[::]:%d", port);
    snprintf(t[n++], sizeof(t[0]), "http://[::1]:%d", port);
    snprintf(t[n++], sizeof(t[0]), "http://[::ffff:127.0.0.1]:%d", port);
    snprintf(t[n++], sizeof(t[0]), "http://127.0.0.1:%d", port);
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
            char ip[INET_ADDRSTRLEN];
            struct sockaddr_in *sa = (struct sockaddr_in *)i->ifa_addr;
            if (!sa || sa->sin_family != AF_INET || ntohl(sa->sin_addr.s_addr) >> 24 == 127 ||
                !inet_ntop(AF_INET, &sa->sin_addr, ip, sizeof(ip)))
                continue;
            snprintf(t[n++], sizeof(t[0]), "http://%s:%d", ip, port); /* this host's own */
            break;
        }
        freeifaddrs(ifs);
    }
    for (int k = 0; k < n; k++) {
        struct relay_opts o = {.target = t[k], .job = "spell-job"};
        struct ty_err err = {0};
        struct relay *r = relay_start(&o, &err);
        struct sockaddr_in peer;
        socklen_t pl = sizeof(peer);
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int c, s;
        assert_non_null(r);
        c = connect_port(relay_port(r));
        send_all(c, "x", 1);
        assert_int_equal(poll(&p, 1, 5000), 1);
        s = accept(lfd, (struct sockaddr *)&peer, &pl);
        assert_true(s >= 0);
        if (ntohl(peer.sin_addr.s_addr) != relay_source_addr("spell-job"))
            fail_msg("%s: the job's connection came from %08x, not its own %08x", t[k],
                     ntohl(peer.sin_addr.s_addr), relay_source_addr("spell-job"));
        close(s);
        close(c);
        relay_stop(r);
    }
    close(lfd);
}

/* With proxy_header (the agent's --relay-proxy), every connection opens with a PROXY v1 header
   naming the job's own address, then the job's bytes, untouched; it comes from the agent's
   address, not the job's (the server's --proxy-listen trusts its --proxy-from peers only). A
   job that sends a header of its own gets it after the relay's: it is never read as one. */
static void test_relay_proxy_header(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET}, peer, jobside;
    socklen_t al = sizeof(a), pl = sizeof(peer), jl = sizeof(jobside);
    char target[64], want[160], got[256], ip[INET_ADDRSTRLEN];
    struct in_addr src = {.s_addr = htonl(relay_source_addr("proxied-job"))};
    struct pollfd p;
    struct relay *r;
    struct ty_err err = {0};
    const char *spoof = "PROXY TCP4 127.0.0.1 127.0.0.1 1 2\r\nGET / HTTP/1.1\r\n";
    size_t n = 0;
    int lfd, c, s, port;

    (void)state;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(lfd, 16), 0);
    assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
    port = ntohs(a.sin_port);
    snprintf(target, sizeof(target), "http://127.0.0.1:%d", port);
    {
        struct relay_opts bad = {.target = target, .proxy_header = 1}; /* no job: refused */
        assert_null(relay_start(&bad, &err));
    }
    {
        struct relay_opts o = {.target = target, .job = "proxied-job", .proxy_header = 1};
        r = relay_start(&o, &err);
    }
    assert_non_null(r);
    c = connect_port(relay_port(r));
    assert_int_equal(getsockname(c, (struct sockaddr *)&jobside, &jl), 0);
    send_all(c, spoof, strlen(spoof));
    p = (struct pollfd){.fd = lfd, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 5000), 1);
    s = accept(lfd, (struct sockaddr *)&peer, &pl);
    assert_true(s >= 0);
    assert_int_equal(ntohl(peer.sin_addr.s_addr), INADDR_LOOPBACK); /* the agent's, not bound */
    assert_non_null(inet_ntop(AF_INET, &src, ip, sizeof(ip)));
    snprintf(want, sizeof(want), "PROXY TCP4 %s 127.0.0.1 %u %d\r\n%s", ip,
             (unsigned)ntohs(jobside.sin_port), port, spoof);
    while (n < strlen(want)) {
        ssize_t k;
        p = (struct pollfd){.fd = s, .events = POLLIN};
        assert_int_equal(poll(&p, 1, 5000), 1);
        k = recv(s, got + n, sizeof(got) - 1 - n, 0);
        assert_true(k > 0);
        n += (size_t)k;
    }
    got[n] = '\0';
    assert_string_equal(got, want);
    close(s);
    close(c);
    relay_stop(r);
    close(lfd);
}

static void test_relay_source_addr(void **state)
{
    char job[32];

    (void)state;
    for (int i = 0; i < 5000; i++) {
        unsigned a;
        snprintf(job, sizeof(job), "job-%d", i);
        a = relay_source_addr(job);
        assert_int_equal(a >> 24, 127);
        assert_true(((a >> 16) & 0xff) != 0); /* never 127.0.0.0/16, so never 127.0.0.1 */
        assert_true((a & 0xff) != 0 && (a & 0xff) != 255);
        assert_int_equal(relay_source_addr(job), a); /* stable */
    }
    assert_true(relay_source_addr("a") != relay_source_addr("b"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relay_bytes),           cmocka_unit_test(test_relay_cap_and_idle),
        cmocka_unit_test(test_relay_bad_target),      cmocka_unit_test(test_relay_target_down),
        cmocka_unit_test(test_relay_no_leak),         cmocka_unit_test(test_stage_env_relay),
        cmocka_unit_test(test_relay_job_budget),      cmocka_unit_test(test_relay_source_addr),
        cmocka_unit_test(test_relay_local_spellings), cmocka_unit_test(test_relay_proxy_header),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
