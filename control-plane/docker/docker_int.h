/*
 * docker_int.h - internals of docker.c that unit tests reach: the log-stream demultiplexer and
 * the RFC 3339 timestamp parser, the create body. Not for other modules.
 *
 * The demultiplexer turns the body of GET /containers/{id}/logs into lines. It is fed the bytes
 * as libcurl delivers them, so frame headers, frame payloads and lines may be split anywhere.
 * Two stream forms exist: multiplexed (no TTY: frames of an 8-byte header [stream type: 0 stdin,
 * 1 stdout, 2 stderr; 3 zero bytes; 4-byte big-endian payload length] and a payload) and raw
 * (a TTY container, or an engine that says application/vnd.docker.raw-stream and sends no
 * frames). The engine's Content-Type cannot be trusted (Docker API 1.41 calls multiplexed streams
 * raw-stream too), so the form is detected from the first byte: 0, 1 or 2 followed by three zero
 * bytes is a frame header; anything else is raw. Lines are bounded: a line longer than the
 * ceiling is delivered in pieces of at most the ceiling. Not thread-safe.
 */
#ifndef TY_CP_AGENT_DOCKER_INT_H
#define TY_CP_AGENT_DOCKER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "docker.h"
#include "ty_buf.h"

enum docker__demux_mode {
    DOCKER__DEMUX_DETECT = 0, /* not enough bytes seen yet */
    DOCKER__DEMUX_MUX = 1,    /* 8-byte frame headers */
    DOCKER__DEMUX_RAW = 2,    /* plain bytes, all stdout */
    DOCKER__DEMUX_FAILED = 3  /* a JSON error body where a timestamped stream was due */
};

struct docker__demux {
    int mode;                 /* enum docker__demux_mode; set one to force a form */
    int timestamps;           /* nonzero: each line starts with an RFC 3339 time and a space */
    unsigned char hdr[8];     /* frame header being collected */
    size_t hdr_len;           /* bytes of hdr collected */
    uint32_t frame_left;      /* payload bytes left in the current frame */
    int frame_stream;         /* 1 stdout, 2 stderr (0, stdin, is treated as stdout) */
    struct ty_buf partial[2]; /* unfinished line per stream: [0] stdout, [1] stderr */
    docker_line_cb cb;
    void *ud;
    int stopped;     /* the callback asked to stop */
    int frame_start; /* the next payload byte is the first of a frame */
};

/* Initialises dm. max_line: ceiling of one delivered line in bytes (>= 1). */
void docker__demux_init(struct docker__demux *dm, int timestamps, size_t max_line,
                        docker_line_cb cb, void *ud);
/*
 * Feeds n bytes. Returns 0, 1 when the callback asked to stop (no further calls are made), or
 * -TY_EENGINE for a malformed frame header (stream type > 2 or nonzero padding) and -TY_ENOMEM.
 */
int docker__demux_feed(struct docker__demux *dm, const void *p, size_t n);
/*
 * End of stream: delivers the unfinished line of each stream, if any. 0 or 1 as above, or
 * -TY_EENGINE when the engine wrote an error body after its 200 (mode DOCKER__DEMUX_FAILED; the
 * body's first bytes are in partial[0]).
 */
int docker__demux_finish(struct docker__demux *dm);
/* Frees the line buffers. */
void docker__demux_cleanup(struct docker__demux *dm);

/*
 * Parses an RFC 3339 time ("2024-05-01T10:20:30.123456789Z", "...+02:00"). OUT: *epoch_ns.
 * Returns the number of characters consumed, or 0 when s does not start with such a time.
 */
size_t docker__parse_time(const char *s, size_t len, int64_t *epoch_ns);

/* New connections the last request made (libcurl CURLINFO_NUM_CONNECTS): 0 when the engine
   connection was reused. -1 when unknown. */
long docker__last_connects(struct docker *d);

/* new: the JSON body of POST /containers/create for c (what docker_create sends), NULL with
   err. */
json_t *docker__create_body(const struct docker_create *c, struct ty_err *err);

/*
 * new: the body of Podman's libpod create (POST /v4.0.0/libpod/containers/create, a
 * SpecGenerator) for c, the same container create_body describes through the Docker-compatible
 * API, plus c->devices as CDI devices, which only this API attaches (docker_libpod.c). NULL
 * with err for a value that is not UTF-8 or out of memory.
 */
json_t *docker__libpod_body(const struct docker_create *c, struct ty_err *err);

#endif
