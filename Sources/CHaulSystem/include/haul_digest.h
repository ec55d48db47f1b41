#ifndef HAUL_DIGEST_H
#define HAUL_DIGEST_H

/* Apple platforms' digest seam: the haul_hash_* API that Sources/CCrypto/shim.h gives over
   libcrypto on Linux, here over CommonCrypto (CommonCrypto/CommonDigest.h). The contexts are
   plain structs without pointers, so a state is saved as bytes and restored the same way;
   HaulChecksum/PlatformSeams.swift says which build a saved state belongs to and checks the
   fields CommonCrypto relies on. Empty elsewhere. Never compiled on the machines that test Haul. */
#if defined(__APPLE__)

#include <CommonCrypto/CommonDigest.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { HAUL_MD5 = 1, HAUL_SHA1 = 2, HAUL_SHA256 = 3, HAUL_SHA512 = 4, HAUL_CRC32C = 5, HAUL_CRC64NVME = 6 };

/* The CRCs are computed in Swift (HaulChecksum/CRC.swift); their running value is kept here so
   that every saved state has one layout, as on Linux. */
typedef struct {
    int kind;
    union {
        CC_MD5_CTX md5;
        CC_SHA1_CTX sha1;
        CC_SHA256_CTX sha256;
        CC_SHA512_CTX sha512;
        uint32_t crc32c;
        uint64_t crc64nvme;
    } u;
} haul_hash_ctx;

static inline size_t haul_hash_ctx_size(void) { return sizeof(haul_hash_ctx); }

/* CC_MD5_* and CC_SHA1_* are deprecated since macOS 10.15 / iOS 13 (weak for security); here they
   only check a download against the digest its publisher chose, as libcrypto's MD5 does on Linux. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"

static inline int haul_hash_init(haul_hash_ctx *ctx, int kind) {
    memset(ctx, 0, sizeof(*ctx));
    ctx->kind = kind;
    switch (kind) {
    case HAUL_MD5: return CC_MD5_Init(&ctx->u.md5);
    case HAUL_SHA1: return CC_SHA1_Init(&ctx->u.sha1);
    case HAUL_SHA256: return CC_SHA256_Init(&ctx->u.sha256);
    case HAUL_SHA512: return CC_SHA512_Init(&ctx->u.sha512);
    case HAUL_CRC32C: case HAUL_CRC64NVME: return 1;
    default: return 0;
    }
}

/* CommonCrypto takes a 32-bit length (CC_LONG), so longer input goes in pieces of 1 GiB. */
static inline int haul_hash_update(haul_hash_ctx *ctx, const void *data, size_t length) {
    const unsigned char *bytes = (const unsigned char *)data;
    while (length > 0) {
        CC_LONG piece = length > (1u << 30) ? (CC_LONG)(1u << 30) : (CC_LONG)length;
        switch (ctx->kind) {
        case HAUL_MD5: CC_MD5_Update(&ctx->u.md5, bytes, piece); break;
        case HAUL_SHA1: CC_SHA1_Update(&ctx->u.sha1, bytes, piece); break;
        case HAUL_SHA256: CC_SHA256_Update(&ctx->u.sha256, bytes, piece); break;
        case HAUL_SHA512: CC_SHA512_Update(&ctx->u.sha512, bytes, piece); break;
        default: return 0;
        }
        bytes += piece;
        length -= piece;
    }
    return 1;
}

/* Writes the digest (at most 64 bytes) and returns its length, 0 on failure. */
static inline int haul_hash_final(haul_hash_ctx *ctx, unsigned char *out) {
    switch (ctx->kind) {
    case HAUL_MD5: return CC_MD5_Final(out, &ctx->u.md5) ? CC_MD5_DIGEST_LENGTH : 0;
    case HAUL_SHA1: return CC_SHA1_Final(out, &ctx->u.sha1) ? CC_SHA1_DIGEST_LENGTH : 0;
    case HAUL_SHA256: return CC_SHA256_Final(out, &ctx->u.sha256) ? CC_SHA256_DIGEST_LENGTH : 0;
    case HAUL_SHA512: return CC_SHA512_Final(out, &ctx->u.sha512) ? CC_SHA512_DIGEST_LENGTH : 0;
    default: return 0;
    }
}

#pragma clang diagnostic pop

#endif /* __APPLE__ */
#endif /* HAUL_DIGEST_H */
