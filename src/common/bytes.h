// bytes.h: a growing byte buffer and little-endian integers in it: what the trial byte
// format (trial/pack.h) and the journal's record framing (store/journal.h) are made of.
#ifndef ATTN_BYTES_H
#define ATTN_BYTES_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    unsigned char *data;
    size_t len, cap;
} Bytes;

void bytes_free(Bytes *b);
// n more bytes at the end of b (uninitialised): their address.
unsigned char *bytes_extend(Bytes *b, size_t n);

// The n low bytes of v at p, least significant first; and back.
void store_le(unsigned char *p, uint64_t v, int n);
uint64_t load_le(const unsigned char *p, int n);

#endif
