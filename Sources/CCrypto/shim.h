#ifndef HAUL_CCRYPTO_SHIM_H
#define HAUL_CCRYPTO_SHIM_H

/* The one-shot-state digest APIs are deprecated in OpenSSL 3 in favour of EVP, but only their
   plain C structs can be saved with a checkpoint and restored later; EVP contexts are opaque. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/crypto.h>
#include <openssl/md5.h>
#include <openssl/sha.h>
#include <stdint.h>
#include <string.h>

enum { HAUL_MD5 = 1, HAUL_SHA1 = 2, HAUL_SHA256 = 3, HAUL_SHA512 = 4, HAUL_CRC32C = 5, HAUL_CRC64NVME = 6 };

/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and CRC-64/NVME (reflected polynomial
   0x9A6C9329AC4BC9B5), the checksums S3 and Google Cloud Storage publish; not in libcrypto. Both
   are table-driven, one byte at a time, and their whole state is the running value. */
static inline const uint32_t *haul_crc32c_table(void) {
    static uint32_t table[256];
    static int ready = 0;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t c = n;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            table[n] = c;
        }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return table;
}

static inline const uint64_t *haul_crc64nvme_table(void) {
    static uint64_t table[256];
    static int ready = 0;
    if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
        for (uint64_t n = 0; n < 256; n++) {
            uint64_t c = n;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x9A6C9329AC4BC9B5ull : c >> 1;
            table[n] = c;
        }
        __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
    }
    return table;
}

/* The running values are kept un-inverted (0 before any byte), so an all-zero state is the
   start and the final value is the state itself. */
static inline uint32_t haul_crc32c_update(uint32_t crc, const unsigned char *p, size_t n) {
    const uint32_t *t = haul_crc32c_table();
    crc = ~crc;
    while (n--) crc = t[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static inline uint64_t haul_crc64nvme_update(uint64_t crc, const unsigned char *p, size_t n) {
    const uint64_t *t = haul_crc64nvme_table();
    crc = ~crc;
    while (n--) crc = t[(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

typedef struct {
    int kind;
    union {
        MD5_CTX md5;
        SHA_CTX sha1;
        SHA256_CTX sha256;
        SHA512_CTX sha512;
        uint32_t crc32c;
        uint64_t crc64nvme;
    } u;
} haul_hash_ctx;

static inline size_t haul_hash_ctx_size(void) { return sizeof(haul_hash_ctx); }

static inline unsigned long haul_openssl_version(void) { return OpenSSL_version_num(); }

static inline int haul_hash_init(haul_hash_ctx *ctx, int kind) {
    memset(ctx, 0, sizeof(*ctx));
    ctx->kind = kind;
    switch (kind) {
    case HAUL_MD5: return MD5_Init(&ctx->u.md5);
    case HAUL_SHA1: return SHA1_Init(&ctx->u.sha1);
    case HAUL_SHA256: return SHA256_Init(&ctx->u.sha256);
    case HAUL_SHA512: return SHA512_Init(&ctx->u.sha512);
    case HAUL_CRC32C: case HAUL_CRC64NVME: return 1;
    default: return 0;
    }
}

static inline int haul_hash_update(haul_hash_ctx *ctx, const void *data, size_t length) {
    switch (ctx->kind) {
    case HAUL_MD5: return MD5_Update(&ctx->u.md5, data, length);
    case HAUL_SHA1: return SHA1_Update(&ctx->u.sha1, data, length);
    case HAUL_SHA256: return SHA256_Update(&ctx->u.sha256, data, length);
    case HAUL_SHA512: return SHA512_Update(&ctx->u.sha512, data, length);
    case HAUL_CRC32C: ctx->u.crc32c = haul_crc32c_update(ctx->u.crc32c, data, length); return 1;
    case HAUL_CRC64NVME: ctx->u.crc64nvme = haul_crc64nvme_update(ctx->u.crc64nvme, data, length); return 1;
    default: return 0;
    }
}

/* Writes the digest (at most 64 bytes) and returns its length, 0 on failure. */
static inline int haul_hash_final(haul_hash_ctx *ctx, unsigned char *out) {
    switch (ctx->kind) {
    case HAUL_MD5: return MD5_Final(out, &ctx->u.md5) ? 16 : 0;
    case HAUL_SHA1: return SHA1_Final(out, &ctx->u.sha1) ? 20 : 0;
    case HAUL_SHA256: return SHA256_Final(out, &ctx->u.sha256) ? 32 : 0;
    case HAUL_SHA512: return SHA512_Final(out, &ctx->u.sha512) ? 64 : 0;
    case HAUL_CRC32C:
        /* Big-endian, as S3 and GCS encode it. */
        for (int i = 0; i < 4; i++) out[i] = (unsigned char)(ctx->u.crc32c >> (24 - 8 * i));
        return 4;
    case HAUL_CRC64NVME:
        for (int i = 0; i < 8; i++) out[i] = (unsigned char)(ctx->u.crc64nvme >> (56 - 8 * i));
        return 8;
    default: return 0;
    }
}

#endif
