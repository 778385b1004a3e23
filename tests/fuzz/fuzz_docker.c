/*
 * fuzz_docker.c - libFuzzer harness for what the agent parses from the container engine without
 * a socket: the log-stream demultiplexer (docker__demux_*, multiplexed and raw streams, split
 * anywhere), the RFC 3339 timestamp parser (docker__parse_time), the image import's answer (a
 * stream of JSON objects kept as a bounded tail: buf_keep_tail, import_result) and an error
 * answer's "message" (engine_error). agent/docker.c is compiled into the harness (#include) so
 * that its static functions are reached.
 *
 * Input layout: byte 0 flags (bit 0 timestamps, bits 1-2 the forced mode: 0 detect, 1 mux,
 * 2 raw; bit 3 the callback stops after the 4th line), byte 1 the line ceiling (1..256), byte 2
 * the feed size (1..256 bytes per call), then the stream. Checks that every delivered line is
 * within the ceiling, comes from stdout or stderr, and that nothing is delivered after a stop;
 * the same stream, fed in the same pieces, is the import answer (tail ceiling: 4 x the line
 * ceiling) and an error body.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../control-plane/docker/docker.c"

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

/* The import answer and an error answer of the same bytes, fed in pieces of step bytes. */
static void fuzz_docker_answers(const uint8_t *data, size_t size, size_t step, size_t tail)
{
    struct ty_buf b;
    struct request req = {0};
    struct ty_err err;
    char id[80] = "";

    ty_buf_init(&b, tail);
    for (size_t off = 0; off < size; off += step)
        buf_keep_tail(&b, (const char *)data + off, size - off < step ? size - off : step);
    if (b.len > tail)
        abort();
    ty_err_clear(&err);
    if (import_result(&b, id, sizeof(id), &err) == 0 && id[0] && strncmp(id, "sha256:", 7) != 0)
        abort();
    req.sink.body = &b;
    req.sink.status = size & 1 ? 404 : 500;
    ty_err_clear(&err);
    if (engine_error(&req, "fuzz", &err) >= 0)
        abort();
    ty_buf_cleanup(&b);
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
    fuzz_docker_answers(data, size, step, 4 * f.max_line);
    return 0;
}
