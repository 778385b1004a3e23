/*
 * fuzz_docker.c - libFuzzer harness for what the agent parses from the container engine without
 * a socket: the log-stream demultiplexer (docker__demux_*, multiplexed and raw streams, split
 * anywhere) and the RFC 3339 timestamp parser (docker__parse_time).
 *
 * Input layout: byte 0 flags (bit 0 timestamps, bits 1-2 the forced mode: 0 detect, 1 mux,
 * 2 raw; bit 3 the callback stops after the 4th line), byte 1 the line ceiling (1..256), byte 2
 * the feed size (1..256 bytes per call), then the stream. Checks that every delivered line is
 * within the ceiling, comes from stdout or stderr, and that nothing is delivered after a stop.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docker_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_docker {
    size_t max_line;
    int stop_after; /* 0: never */
    int lines;
    int stopped;
};

static int fuzz_docker_line(const char *line, size_t len, int64_t ts_ms, int is_stderr, void *ud)
{
    struct fuzz_docker *f = ud;
    (void)ts_ms;
    if (f->stopped || len > f->max_line || (is_stderr != 0 && is_stderr != 1) || (len && !line))
        abort();
    if (len)
        (void)((volatile const char *)line)[len - 1];
    f->lines++;
    if (f->stop_after && f->lines >= f->stop_after) {
        f->stopped = 1;
        return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct docker__demux dm;
    struct fuzz_docker f = {0};
    size_t step, off;
    int64_t ns;
    int rc = 0;

    /* the timestamp parser on the raw input */
    if (docker__parse_time((const char *)data, size, &ns) > size)
        abort();
    if (size < 3)
        return 0;
    f.max_line = (size_t)data[1] % 256 + 1;
    f.stop_after = (data[0] & 8) ? 4 : 0;
    step = (size_t)data[2] % 256 + 1;
    docker__demux_init(&dm, data[0] & 1, f.max_line, fuzz_docker_line, &f);
    dm.mode = (data[0] >> 1) & 3;
    if (dm.mode == 3)
        dm.mode = DOCKER__DEMUX_DETECT;
    data += 3;
    size -= 3;
    for (off = 0; off < size && rc == 0; off += step) {
        size_t n = size - off < step ? size - off : step;
        /* each piece in its own allocation, so that reads past a piece are caught */
        char *piece = malloc(n);
        if (!piece)
            break;
        memcpy(piece, data + off, n);
        rc = docker__demux_feed(&dm, piece, n);
        free(piece);
    }
    if (rc == 0)
        rc = docker__demux_finish(&dm);
    if (rc != 0 && rc != 1 && rc >= 0)
        abort();
    docker__demux_cleanup(&dm);
    return 0;
}
