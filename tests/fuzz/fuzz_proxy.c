/*
 * fuzz_proxy.c - libFuzzer harness for the PROXY protocol v1 header parser of the agents'
 * listener (http_proxy_parse, control-plane/http/http_proxy.c). The input is one header line
 * without its CRLF, as the listener hands it over (at most HTTP_PROXY_LINE_MAX bytes). Checks:
 * the parser returns; an accepted line names an IPv4 or IPv6 source of the right length, and
 * says TCP4 or TCP6 as its family.
 */
#include "../../control-plane/http/http_proxy.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    if (size > HTTP_PROXY_LINE_MAX)
        return 0;
    if (http_proxy_parse((const char *)data, size, &ss, &len) != 0)
        return 0;
    if (size < 10 || memcmp(data, "PROXY TCP", 9) != 0)
        abort();
    if (ss.ss_family == AF_INET
            ? (data[9] != '4' || len != sizeof(struct sockaddr_in))
            : (ss.ss_family != AF_INET6 || data[9] != '6' || len != sizeof(struct sockaddr_in6)))
        abort();
    return 0;
}
