/*
 * s3_body.c - the streaming receiver of S3 upload bodies (see s3_int.h).
 *
 * aws-chunked framing (what STREAMING-* payloads use):
 *   <hex size>[;chunk-signature=<64 hex>]\r\n<size bytes>\r\n ... 0[;chunk-signature=..]\r\n
 *   [<trailer name>:<value>\r\n ...]\r\n
 * A chunk's signature is HMAC(signing key, "AWS4-HMAC-SHA256-PAYLOAD\n" date "\n" scope "\n"
 * previous signature "\n" SHA256("") "\n" SHA256(chunk)), starting from the request's signature.
 */
#include "s3_int.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>

#include "objstore.h"
#include "ty_codec.h"
#include "ty_crc32c.h"
#include "ty_fs.h"

#define S3B_LINE_MAX     4096
#define S3B_WBUF         (256 * 1024) /* writes to the temp file go out in blocks this large */
#define S3B_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

enum s3b_state { S3B_RAW, S3B_SIZE, S3B_DATA, S3B_CR, S3B_LF, S3B_TRAILER, S3B_DONE };

struct s3_body {
    int fd;
    char *wbuf; /* S3B_WBUF bytes, NULL when it could not be had (writes go straight out) */
    size_t wlen;
    char path[4096];
    int keep; /* released: do not unlink */
    uint64_t wire_len, len, decoded_expect;
    int have_decoded_expect;
    EVP_MD_CTX *md5, *sha_wire;
    char content_sha[65]; /* expected hex, "" when not a hash */
    char content_md5[64]; /* Content-MD5 as sent (base64), "" when none */
    /* additional checksum */
    enum s3_ck ck;
    uint32_t crc;
    EVP_MD_CTX *ckmd;
    char ck_expect[128]; /* base64 from a header or the trailer */
    char ck_actual[128];
    int ck_in_trailer;
    /* aws-chunked */
    enum s3b_state state;
    char line[S3B_LINE_MAX];
    size_t linelen;
    uint64_t chunk_left;
    int signed_chunks;
    int have_key;
    unsigned char key[32];
    char prev_sig[65], chunk_sig[65], amz_date[17], scope[200];
    EVP_MD_CTX *chunk_sha;
    /* first error */
    const char *err_code;
    char err_msg[256];
    int err_kind;
    char md5_hex[33];
};

enum s3_ck s3_ck_from_name(const char *name)
{
    if (!name)
        return S3_CK_NONE;
    if (strcasecmp(name, "crc32") == 0)
        return S3_CK_CRC32;
    if (strcasecmp(name, "crc32c") == 0)
        return S3_CK_CRC32C;
    if (strcasecmp(name, "sha1") == 0)
        return S3_CK_SHA1;
    if (strcasecmp(name, "sha256") == 0)
        return S3_CK_SHA256;
    return S3_CK_NONE;
}

const char *s3_ck_name(enum s3_ck ck)
{
    switch (ck) {
    case S3_CK_CRC32:
        return "CRC32";
    case S3_CK_CRC32C:
        return "CRC32C";
    case S3_CK_SHA1:
        return "SHA1";
    case S3_CK_SHA256:
        return "SHA256";
    default:
        return "";
    }
}

/* As http_header (kept here so that the receiver links without the HTTP server). */
static const char *s3b_header(const struct http_request *req, const char *name)
{
    for (size_t i = 0; i < req->nheaders; i++) {
        if (strcasecmp(req->headers[i].name, name) == 0)
            return req->headers[i].value;
    }
    return NULL;
}

static int s3b_fail(struct s3_body *b, int kind, const char *code, const char *msg)
{
    if (!b->err_code) {
        b->err_kind = kind;
        b->err_code = code;
        snprintf(b->err_msg, sizeof(b->err_msg), "%s", msg);
    }
    return -1;
}

struct s3_body *s3_body_new(int fd, const char *path, const struct http_request *req,
                            const unsigned char *signing_key, const char *seed_sig,
                            const char *amz_date, const char *scope)
{
    struct s3_body *b = calloc(1, sizeof(*b));
    const char *sha = s3b_header(req, "x-amz-content-sha256");
    const char *dec = s3b_header(req, "x-amz-decoded-content-length");
    const char *trailer = s3b_header(req, "x-amz-trailer");
    const char *algo = s3b_header(req, "x-amz-sdk-checksum-algorithm");
    const char *cmd5 = s3b_header(req, "Content-MD5");

    if (!b) {
        close(fd);
        unlink(path);
        return NULL;
    }
    b->fd = fd;
    b->wbuf = malloc(S3B_WBUF);
    snprintf(b->path, sizeof(b->path), "%s", path);
    b->md5 = EVP_MD_CTX_new();
    if (!b->md5 || EVP_DigestInit_ex(b->md5, EVP_md5(), NULL) != 1)
        s3b_fail(b, TY_EINTERNAL, "InternalError", "out of memory");
    if (sha && strlen(sha) == 64 && strspn(sha, "0123456789abcdefABCDEF") == 64) {
        for (int i = 0; i < 64; i++)
            b->content_sha[i] = (char)((sha[i] >= 'A' && sha[i] <= 'F') ? sha[i] + 32 : sha[i]);
        b->content_sha[64] = '\0';
        b->sha_wire = EVP_MD_CTX_new();
        if (!b->sha_wire || EVP_DigestInit_ex(b->sha_wire, EVP_sha256(), NULL) != 1)
            s3b_fail(b, TY_EINTERNAL, "InternalError", "out of memory");
    }
    if (cmd5)
        snprintf(b->content_md5, sizeof(b->content_md5), "%s", cmd5);
    b->state = S3B_RAW;
    if (sha && strncmp(sha, "STREAMING-", 10) == 0) {
        b->state = S3B_SIZE;
        if (strncmp(sha, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", 34) == 0) {
            b->signed_chunks = 1;
            if (signing_key && seed_sig && amz_date && scope) {
                b->have_key = 1;
                memcpy(b->key, signing_key, 32);
                snprintf(b->prev_sig, sizeof(b->prev_sig), "%s", seed_sig);
                snprintf(b->amz_date, sizeof(b->amz_date), "%s", amz_date);
                snprintf(b->scope, sizeof(b->scope), "%s", scope);
            }
            b->chunk_sha = EVP_MD_CTX_new();
        }
        if (dec) {
            char *end;
            errno = 0;
            b->decoded_expect = strtoull(dec, &end, 10);
            if (errno || *end || end == dec)
                s3b_fail(b, TY_EINVAL, "InvalidArgument",
                         "x-amz-decoded-content-length is not a number");
            b->have_decoded_expect = 1;
        }
    }
    /* the additional checksum: a header value, or a trailer announced by x-amz-trailer */
    for (enum s3_ck c = S3_CK_CRC32; c <= S3_CK_SHA256; c++) {
        char hn[64];
        const char *v;
        snprintf(hn, sizeof(hn), "x-amz-checksum-%s", s3_ck_name(c));
        v = s3b_header(req, hn);
        if (v) {
            b->ck = c;
            snprintf(b->ck_expect, sizeof(b->ck_expect), "%s", v);
        }
        if (trailer && strcasecmp(trailer, hn) == 0) {
            b->ck = c;
            b->ck_in_trailer = 1;
        }
    }
    if (b->ck == S3_CK_NONE && algo)
        b->ck = s3_ck_from_name(algo);
    if (b->ck == S3_CK_SHA1 || b->ck == S3_CK_SHA256) {
        b->ckmd = EVP_MD_CTX_new();
        if (!b->ckmd ||
            EVP_DigestInit_ex(b->ckmd, b->ck == S3_CK_SHA1 ? EVP_sha1() : EVP_sha256(), NULL) != 1)
            s3b_fail(b, TY_EINTERNAL, "InternalError", "out of memory");
    }
    return b;
}

static int s3b_write_all(struct s3_body *b, const char *p, size_t n)
{
    if (ty_write_all(b->fd, p, n) < 0)
        return s3b_fail(b, TY_EIO, "InternalError", "cannot write the upload");
    return 0;
}

static int s3b_flush(struct s3_body *b)
{
    int rc = b->wlen ? s3b_write_all(b, b->wbuf, b->wlen) : 0;
    b->wlen = 0;
    return rc;
}

static int s3b_emit(struct s3_body *b, const char *p, size_t n)
{
    if (b->len + n > OBJSTORE_MAX_OBJECT)
        return s3b_fail(b, TY_EINVAL, "EntityTooLarge",
                        "Your proposed upload exceeds the maximum allowed size");
    if (!b->wbuf) {
        if (s3b_write_all(b, p, n) != 0)
            return -1;
    } else {
        for (size_t off = 0; off < n;) {
            size_t k = n - off < S3B_WBUF - b->wlen ? n - off : S3B_WBUF - b->wlen;
            memcpy(b->wbuf + b->wlen, p + off, k);
            b->wlen += k;
            off += k;
            if (b->wlen == S3B_WBUF && s3b_flush(b) != 0)
                return -1;
        }
    }
    EVP_DigestUpdate(b->md5, p, n);
    switch (b->ck) {
    case S3_CK_CRC32:
        for (size_t off = 0; off < n;) {
            size_t k = n - off > (1u << 30) ? (1u << 30) : n - off;
            b->crc = (uint32_t)crc32(b->crc, (const Bytef *)p + off, (uInt)k);
            off += k;
        }
        break;
    case S3_CK_CRC32C:
        b->crc = ty_crc32c(b->crc, p, n);
        break;
    case S3_CK_SHA1:
    case S3_CK_SHA256:
        EVP_DigestUpdate(b->ckmd, p, n);
        break;
    default:
        break;
    }
    if (b->chunk_sha)
        EVP_DigestUpdate(b->chunk_sha, p, n);
    b->len += n;
    return 0;
}

/* Verifies the signature of the chunk just ended (its SHA-256 is in chunk_sha). */
static int s3b_check_chunk_sig(struct s3_body *b)
{
    unsigned char md[32], mac[32];
    unsigned int mdlen = 0, maclen = 0;
    char hex[65], sts[600], sig[65];
    int n;

    if (!b->signed_chunks)
        return 0;
    if (!b->have_key)
        return s3b_fail(b, TY_EBADSIG, "SignatureDoesNotMatch",
                        "The request signature we calculated does not match the signature you "
                        "provided. Check your key and signing method.");
    if (EVP_DigestFinal_ex(b->chunk_sha, md, &mdlen) != 1)
        return s3b_fail(b, TY_EINTERNAL, "InternalError", "hash failure");
    ty_hex_encode(md, 32, hex);
    n = snprintf(sts, sizeof(sts), "AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s", b->amz_date,
                 b->scope, b->prev_sig, S3B_EMPTY_SHA256, hex);
    if (n < 0 || (size_t)n >= sizeof(sts) ||
        !HMAC(EVP_sha256(), b->key, 32, (const unsigned char *)sts, (size_t)n, mac, &maclen))
        return s3b_fail(b, TY_EINTERNAL, "InternalError", "hmac failure");
    ty_hex_encode(mac, 32, sig);
    if (strlen(b->chunk_sig) != 64 || CRYPTO_memcmp(sig, b->chunk_sig, 64) != 0)
        return s3b_fail(b, TY_EBADSIG, "SignatureDoesNotMatch",
                        "The request signature we calculated does not match the signature you "
                        "provided. Check your key and signing method.");
    memcpy(b->prev_sig, sig, 65);
    return 0;
}

static int s3b_size_line(struct s3_body *b)
{
    char *semi, *end;
    unsigned long long sz;

    b->line[b->linelen] = '\0';
    semi = strchr(b->line, ';');
    if (semi)
        *semi = '\0';
    if (!b->line[0] || strspn(b->line, "0123456789abcdefABCDEF") != strlen(b->line) ||
        strlen(b->line) > 16)
        return s3b_fail(b, TY_EINVAL, "IncompleteBody", "The request body terminated unexpectedly");
    sz = strtoull(b->line, &end, 16);
    b->chunk_sig[0] = '\0';
    if (semi) {
        const char *s = strstr(semi + 1, "chunk-signature=");
        if (s)
            snprintf(b->chunk_sig, sizeof(b->chunk_sig), "%.64s", s + 16);
    }
    if (b->signed_chunks && b->chunk_sha &&
        EVP_DigestInit_ex(b->chunk_sha, EVP_sha256(), NULL) != 1)
        return s3b_fail(b, TY_EINTERNAL, "InternalError", "hash failure");
    b->chunk_left = sz;
    if (sz == 0) {
        if (s3b_check_chunk_sig(b) != 0)
            return -1;
        b->state = S3B_TRAILER;
    } else {
        b->state = S3B_DATA;
    }
    b->linelen = 0;
    return 0;
}

static int s3b_trailer_line(struct s3_body *b)
{
    char *colon;

    b->line[b->linelen] = '\0';
    b->linelen = 0;
    if (!b->line[0]) {
        b->state = S3B_DONE;
        return 0;
    }
    colon = strchr(b->line, ':');
    if (!colon)
        return s3b_fail(b, TY_EINVAL, "MalformedTrailerError",
                        "The request contained trailing data that was not well-formed or did "
                        "not conform to our published schema.");
    *colon = '\0';
    if (strncasecmp(b->line, "x-amz-checksum-", 15) == 0) {
        const char *v = colon + 1;
        enum s3_ck c = s3_ck_from_name(b->line + 15);
        while (*v == ' ')
            v++;
        if (c != S3_CK_NONE && c == b->ck) {
            snprintf(b->ck_expect, sizeof(b->ck_expect), "%s", v);
            b->ck_in_trailer = 2; /* received */
        }
    }
    return 0;
}

int s3_body_write(void *ctx, const char *data, size_t n)
{
    struct s3_body *b = ctx;
    size_t i = 0;

    if (b->err_code)
        return -1;
    b->wire_len += n;
    if (b->sha_wire)
        EVP_DigestUpdate(b->sha_wire, data, n);
    if (b->state == S3B_RAW)
        return s3b_emit(b, data, n);
    while (i < n) {
        switch (b->state) {
        case S3B_DATA: {
            size_t k = n - i;
            if (k > b->chunk_left)
                k = (size_t)b->chunk_left;
            if (s3b_emit(b, data + i, k) != 0)
                return -1;
            i += k;
            b->chunk_left -= k;
            if (b->chunk_left == 0) {
                if (s3b_check_chunk_sig(b) != 0)
                    return -1;
                b->state = S3B_CR;
            }
            break;
        }
        case S3B_CR:
            if (data[i++] != '\r')
                return s3b_fail(b, TY_EINVAL, "IncompleteBody",
                                "The request body terminated unexpectedly");
            b->state = S3B_LF;
            break;
        case S3B_LF:
            if (data[i++] != '\n')
                return s3b_fail(b, TY_EINVAL, "IncompleteBody",
                                "The request body terminated unexpectedly");
            b->state = S3B_SIZE;
            break;
        case S3B_SIZE:
        case S3B_TRAILER: {
            char c = data[i++];
            if (c == '\n' && b->linelen > 0 && b->line[b->linelen - 1] == '\r') {
                b->linelen--;
                if ((b->state == S3B_SIZE ? s3b_size_line(b) : s3b_trailer_line(b)) != 0)
                    return -1;
                break;
            }
            if (b->linelen + 2 >= sizeof(b->line))
                return s3b_fail(b, TY_EINVAL, "IncompleteBody",
                                "The request body terminated unexpectedly");
            b->line[b->linelen++] = c;
            break;
        }
        case S3B_DONE:
            return s3b_fail(b, TY_EINVAL, "IncompleteBody",
                            "The request body has data after its end");
        default:
            return -1;
        }
    }
    return 0;
}

void s3_body_free(void *ctx)
{
    struct s3_body *b = ctx;
    if (!b)
        return;
    if (b->fd >= 0)
        close(b->fd);
    if (!b->keep && b->path[0])
        unlink(b->path);
    EVP_MD_CTX_free(b->md5);
    EVP_MD_CTX_free(b->sha_wire);
    EVP_MD_CTX_free(b->ckmd);
    EVP_MD_CTX_free(b->chunk_sha);
    OPENSSL_cleanse(b->key, sizeof(b->key));
    free(b->wbuf);
    free(b);
}

static void s3b_b64(const unsigned char *p, size_t n, char *out, size_t outn)
{
    if (4 * ((n + 2) / 3) + 1 > outn) {
        out[0] = '\0';
        return;
    }
    EVP_EncodeBlock((unsigned char *)out, p, (int)n);
}

int s3_body_finish(struct s3_body *b, struct ty_err *err)
{
    unsigned char md[32];
    unsigned int mdlen = 0;

    if (!b)
        return ty_err_set(err, TY_EINTERNAL, "InternalError", "no body");
    if (!b->err_code && b->state != S3B_RAW && b->state != S3B_DONE &&
        !(b->state == S3B_TRAILER && b->linelen == 0))
        s3b_fail(b, TY_EINVAL, "IncompleteBody",
                 "You did not provide the number of bytes specified by the Content-Length HTTP "
                 "header");
    if (!b->err_code && b->have_decoded_expect && b->decoded_expect != b->len)
        s3b_fail(b, TY_EINVAL, "IncompleteBody",
                 "You did not provide the number of bytes specified by the Content-Length HTTP "
                 "header");
    if (!b->err_code && EVP_DigestFinal_ex(b->md5, md, &mdlen) == 1) {
        ty_hex_encode(md, 16, b->md5_hex);
        if (b->content_md5[0]) {
            char b64[32];
            s3b_b64(md, 16, b64, sizeof(b64));
            if (strcmp(b64, b->content_md5) != 0)
                s3b_fail(b, TY_EINVAL, strlen(b->content_md5) == 24 ? "BadDigest" : "InvalidDigest",
                         strlen(b->content_md5) == 24
                             ? "The Content-MD5 you specified did not match what we received."
                             : "The Content-MD5 you specified was invalid.");
        }
    }
    if (!b->err_code && b->sha_wire && b->content_sha[0]) {
        char hex[65];
        if (EVP_DigestFinal_ex(b->sha_wire, md, &mdlen) != 1)
            s3b_fail(b, TY_EINTERNAL, "InternalError", "hash failure");
        ty_hex_encode(md, 32, hex);
        if (!b->err_code && strcmp(hex, b->content_sha) != 0)
            s3b_fail(b, TY_EINVAL, "XAmzContentSHA256Mismatch",
                     "The provided 'x-amz-content-sha256' header does not match what was "
                     "computed.");
    }
    if (!b->err_code && b->ck != S3_CK_NONE) {
        unsigned char be[4];
        switch (b->ck) {
        case S3_CK_CRC32:
        case S3_CK_CRC32C:
            be[0] = (unsigned char)(b->crc >> 24);
            be[1] = (unsigned char)(b->crc >> 16);
            be[2] = (unsigned char)(b->crc >> 8);
            be[3] = (unsigned char)b->crc;
            s3b_b64(be, 4, b->ck_actual, sizeof(b->ck_actual));
            break;
        default:
            if (EVP_DigestFinal_ex(b->ckmd, md, &mdlen) == 1)
                s3b_b64(md, mdlen, b->ck_actual, sizeof(b->ck_actual));
            break;
        }
        if (b->ck_in_trailer == 1)
            s3b_fail(b, TY_EINVAL, "MalformedTrailerError",
                     "The request contained trailing data that was not well-formed or did not "
                     "conform to our published schema.");
        else if (b->ck_expect[0] && strcmp(b->ck_expect, b->ck_actual) != 0) {
            char msg[128];
            snprintf(msg, sizeof(msg),
                     "The %s you specified did not match the calculated checksum.",
                     s3_ck_name(b->ck));
            s3b_fail(b, TY_EINVAL, "BadDigest", msg);
        }
    }
    if (!b->err_code && s3b_flush(b) == 0 && (fsync(b->fd) != 0 || close(b->fd) != 0)) {
        b->fd = -1;
        s3b_fail(b, TY_EIO, "InternalError", "cannot write the upload");
    }
    b->fd = b->err_code ? b->fd : -1;
    if (b->err_code)
        return ty_err_set(err, b->err_kind, b->err_code, "%s", b->err_msg);
    return 0;
}

const char *s3_body_path(const struct s3_body *b)
{
    return b->path;
}

const char *s3_body_md5(const struct s3_body *b)
{
    return b->md5_hex;
}

uint64_t s3_body_size(const struct s3_body *b)
{
    return b->len;
}

enum s3_ck s3_body_checksum(const struct s3_body *b, const char **b64)
{
    if (b64)
        *b64 = b->ck_actual;
    return b->ck;
}

void s3_body_release(struct s3_body *b)
{
    b->keep = 1;
}
