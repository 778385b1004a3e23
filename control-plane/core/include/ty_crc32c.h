/*
 * ty_crc32c.h - CRC-32C (Castagnoli), the checksum S3 calls CRC32C: per object, per part, and
 * over the parts' checksums for a multipart object's composite.
 *
 * Owns: a slicing-by-8 table built once on first use. Thread-safe.
 */
#ifndef TY_CORE_TY_CRC32C_H
#define TY_CORE_TY_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The CRC-32C of p[0..n) continued from crc (0 to start; pass the previous result to go on). */
uint32_t ty_crc32c(uint32_t crc, const void *p, size_t n);

#endif
