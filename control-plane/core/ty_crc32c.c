/*
 * ty_crc32c.c - CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8.
 */
#include "ty_crc32c.h"

#include <pthread.h>

static uint32_t ty_crc32c_table[8][256];
static pthread_once_t ty_crc32c_once = PTHREAD_ONCE_INIT;

static void ty_crc32c_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        ty_crc32c_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++)
            ty_crc32c_table[t][i] = (ty_crc32c_table[t - 1][i] >> 8) ^
                                    ty_crc32c_table[0][ty_crc32c_table[t - 1][i] & 0xff];
    }
}

uint32_t ty_crc32c(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;

    pthread_once(&ty_crc32c_once, ty_crc32c_init);
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        crc = ty_crc32c_table[7][lo & 0xff] ^ ty_crc32c_table[6][(lo >> 8) & 0xff] ^
              ty_crc32c_table[5][(lo >> 16) & 0xff] ^ ty_crc32c_table[4][lo >> 24] ^
              ty_crc32c_table[3][p[4]] ^ ty_crc32c_table[2][p[5]] ^ ty_crc32c_table[1][p[6]] ^
              ty_crc32c_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = ty_crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return ~crc;
}
