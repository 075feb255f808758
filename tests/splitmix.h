// splitmix.h: the tests' deterministic 64-bit generator (splitmix64), for those that need
// reproducible random bytes and positions (the mutation fuzz runs).
#ifndef ATTN_SPLITMIX_H
#define ATTN_SPLITMIX_H

#include <stdint.h>

// The next number of the sequence that *state seeds (and advances).
static inline uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#endif
