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

/* Linux's digest seam (Apple platforms: Sources/CHaulSystem/include/haul_digest.h, the same API
   over CommonCrypto). CRC-32C and CRC-64/NVME are not libcrypto: HaulChecksum computes them in
   Swift (CRC.swift) and keeps their running value in this struct, so that every saved state has
   one layout. */
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
    default: return 0;
    }
}

#endif
