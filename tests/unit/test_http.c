/*
 * test_http.c - the PROXY protocol v1 listener of the HTTP front end (http_proxy.c): which
 * header lines parse, that a proxied request is served under the header's source address, and
 * that a peer off the allow list, a connection without a header or with a bad one is closed
 * unanswered, while the main listener never reads a header (a job cannot name itself there).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "http.h"
#include "http_proxy.h"

static void parses(const char *line, const char *want_ip, unsigned want_port)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    char ip[INET6_ADDRSTRLEN];
    unsigned port;
    if (http_proxy_parse(line, strlen(line), &ss, &len) != 0)
        fail_msg("refused: %s", line);
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        assert_int_equal(len, sizeof(*a));
        inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
        port = ntohs(a->sin_port);
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        assert_int_equal(ss.ss_family, AF_INET6);
        assert_int_equal(len, sizeof(*a));
        inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
        port = ntohs(a->sin6_port);
    }
    assert_string_equal(ip, want_ip);
    assert_int_equal(port, want_port);
}

static void test_parse(void **state)
{
    static const char *const bad[] = {
        "",
        "PROXY",
        "PROXY UNKNOWN",
        "PROXY UNKNOWN 1.2.3.4 5.6.7.8 1 2",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1 2 ",
        "PROXY TCP4  1.2.3.4 5.6.7.8 1 2",
        "PROXY TCP4 1.2.3.4 5.6.7.8 01 2",
        "PROXY TCP4 1.2.3.4 5.6.7.8 65536 2",
        "PROXY TCP4 1.2.3.4 5.6.7.8 -1 2",
        "PROXY TCP4 ::1 5.6.7.8 1 2",
        "PROXY TCP6 1.2.3.4 ::1 1 2",
        "PROXY TCP4 1.2.3.4 5.6.7.999 1 2",
        "proxy TCP4 1.2.3.4 5.6.7.8 1 2",
        "PROXY tcp4 1.2.3.4 5.6.7.8 1 2",
        "GET / HTTP/1.1",
    };
    struct sockaddr_storage ss;
    socklen_t len;
    (void)state;
    parses("PROXY TCP4 127.18.3.4 10.0.0.1 40000 8080", "127.18.3.4", 40000);
    parses("PROXY TCP4 1.2.3.4 5.6.7.8 0 65535", "1.2.3.4", 0);
    parses("PROXY TCP6 ::ffff:127.9.8.7 2001:db8::1 51234 443", "::ffff:127.9.8.7", 51234);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (http_proxy_parse(bad[i], strlen(bad[i]), &ss, &len) == 0)
            fail_msg("accepted: '%s'", bad[i]);
    /* a NUL inside the line */
    assert_int_equal(http_proxy_parse("PROXY TCP4 1.2.3.4\0 5.6.7.8 1 2", 31, &ss, &len), -1);
}

/* Answers 200 with the client address the request was served under. */
static void echo_client(struct http_request *req, struct http_response *resp, void *ud)
{
    (void)ud;
    resp->status = 200;
    resp->content_type = "text/plain";
    resp->body = strdup(req->client);
    resp->len = strlen(resp->body);
}

static int dial(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Sends what, reads until the peer closes (at most 5 s). OUT: buf (NUL-terminated). */
static void exchange(int port, const char *what, char *buf, size_t cap)
{
    int fd = dial(port);
    size_t n = 0;
    if (*what)
        assert_int_equal(send(fd, what, strlen(what), MSG_NOSIGNAL), (ssize_t)strlen(what));
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        ssize_t k;
        if (poll(&p, 1, 8000) != 1)
            fail_msg("no answer nor close after: %s", what);
        k = recv(fd, buf + n, cap - 1 - n, 0);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    close(fd);
}

#define GET "GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"

static void test_listener(void **state)
{
    struct http_limits lim = HTTP_LIMITS_DEFAULT;
    struct ty_err err = {0};
    struct http_server *srv;
    char buf[4096];
    int pp;
    (void)state;
    srv = http_start("127.0.0.1:0", 2, &lim, echo_client, NULL, &err);
    assert_non_null(srv);
    assert_int_equal(http_proxy_port(srv), 0);
    assert_int_not_equal(http_proxy_listen(srv, "127.0.0.1:0", "10.0.0.0/8, nonsense", &err), 0);
    assert_non_null(strstr(err.msg, "nonsense"));
    assert_int_equal(http_proxy_listen(srv, "127.0.0.1:0", "10.0.0.0/8, 127.0.0.1", &err), 0);
    pp = http_proxy_port(srv);
    assert_true(pp > 0);
    /* a header from an allowed peer: served as the header's source */
    exchange(pp, "PROXY TCP4 127.77.1.2 127.0.0.1 40000 80\r\n" GET, buf, sizeof(buf));
    assert_non_null(strstr(buf, "200"));
    assert_non_null(strstr(buf, "\r\n\r\n127.77.1.2"));
    /* no header, a bad one, a header that comes too late: closed, nothing answered */
    exchange(pp, GET, buf, sizeof(buf));
    assert_string_equal(buf, "");
    exchange(pp, "PROXY UNKNOWN\r\n" GET, buf, sizeof(buf));
    assert_string_equal(buf, "");
    exchange(pp, "", buf, sizeof(buf)); /* says nothing: closed after the deadline */
    assert_string_equal(buf, "");
    /* the main listener never reads one: the request line is the header, refused as HTTP */
    exchange(http_port(srv), "PROXY TCP4 127.0.0.1 127.0.0.1 1 2\r\n" GET, buf, sizeof(buf));
    assert_null(strstr(buf, "127.0.0.1"));
    assert_null(strstr(buf, "HTTP/1.1 200"));
    http_stop(srv);

    /* a peer off the allow list is closed even with a valid header */
    srv = http_start("127.0.0.1:0", 2, &lim, echo_client, NULL, &err);
    assert_non_null(srv);
    assert_int_equal(http_proxy_listen(srv, "127.0.0.1:0", "10.1.2.3,fd00::/8", &err), 0);
    exchange(http_proxy_port(srv), "PROXY TCP4 127.77.1.2 127.0.0.1 40000 80\r\n" GET, buf,
             sizeof(buf));
    assert_string_equal(buf, "");
    http_stop(srv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_listener),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
