/*
 * fuzz_req.h - builds a struct http_request from a fuzz input for the harnesses that drive the
 * S3 front end (fuzz_route.c, fuzz_multipart.c). Not a module: static functions, one include per
 * harness.
 *
 * Input layout (every part optional): line 1 the method, line 2 the path, line 3 the query, then
 * "name: value" header lines up to an empty line, then the body. The request's strings point
 * into one copy of the input, owned by struct fuzz_req (fuzz_req_free); the body is a malloc'd
 * buffer of exactly its length (no terminator is read by the code under test unless it is a bug:
 * ty_buf bodies are NUL-terminated, so one is appended after the length).
 */
#ifndef TY_TESTS_FUZZ_REQ_H
#define TY_TESTS_FUZZ_REQ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

struct fuzz_req {
    struct http_request req;
    char *copy; /* new: the input, NUL-terminated, lines cut */
};

static char *fuzz_req_line(char **p, char *end)
{
    char *s = *p, *nl;
    if (s >= end)
        return NULL;
    nl = memchr(s, '\n', (size_t)(end - s));
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = end;
    }
    return s;
}

/* 0, or -1 when out of memory. The method defaults to GET and the path to "/". */
static int fuzz_req_build(struct fuzz_req *f, const uint8_t *data, size_t size)
{
    char *p, *end, *line;
    struct http_request *r = &f->req;

    memset(f, 0, sizeof(*f));
    f->copy = malloc(size + 1);
    if (!f->copy)
        return -1;
    memcpy(f->copy, data, size);
    f->copy[size] = '\0';
    p = f->copy;
    end = f->copy + size;
    line = fuzz_req_line(&p, end);
    r->method = line && *line ? line : "GET";
    line = fuzz_req_line(&p, end);
    r->path = line && *line == '/' ? line : "/";
    line = fuzz_req_line(&p, end);
    r->query = line ? line : "";
    while ((line = fuzz_req_line(&p, end)) != NULL && *line) {
        char *colon = strchr(line, ':');
        if (!colon || r->nheaders == HTTP_MAX_HEADERS)
            continue;
        *colon = '\0';
        colon++;
        while (*colon == ' ')
            colon++;
        r->headers[r->nheaders].name = line;
        r->headers[r->nheaders].value = colon;
        r->nheaders++;
    }
    ty_buf_init(&r->body, HTTP_MAX_BODY);
    if (p < end && ty_buf_append(&r->body, p, (size_t)(end - p)) != 0)
        return -1;
    snprintf(r->request_id, sizeof(r->request_id), "fuzz");
    return 0;
}

static void fuzz_req_free(struct fuzz_req *f)
{
    ty_buf_cleanup(&f->req.body);
    free(f->copy);
}

#endif
