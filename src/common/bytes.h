// bytes.h: a growing byte buffer, little-endian values written into it, and a reader that
// checks every length against what is left: what the trial byte format (trial/pack.h), the
// journal's records (store/journal.h) and mid-trial checkpoints (model/checkpoint.h) are
// made of. Little-endian throughout: integers as their bytes, f64/f32 as their IEEE-754
// bit patterns (NaN payloads and −0 survive), text = u32 length then the bytes.
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

void bytes_put_le(Bytes *b, uint64_t v, int n);
void bytes_put_u8(Bytes *b, unsigned v);
void bytes_put_u32(Bytes *b, uint32_t v);
void bytes_put_i32(Bytes *b, int v);
void bytes_put_i64(Bytes *b, long v);
void bytes_put_f64(Bytes *b, double v);
// n elements of `size` bytes (4: int or float, 8: double or long), each little-endian.
void bytes_put_array(Bytes *b, const void *v, size_t n, size_t size);
void bytes_put_text(Bytes *b, const char *s, size_t n);

// The reader fails once and stays failed: every later read yields zeros and empty arrays
// (nothing is allocated), so a decoder reads straight through and checks once. The first
// failure goes to err as "WHAT, byte K of N: why".
typedef struct {
    const unsigned char *p;
    size_t left, len;
    int failed;
    const char *what;  // what is being read ("trial record"), for the message
    char *err;
    size_t errlen;
} ByteReader;

ByteReader byte_reader(const unsigned char *data, size_t len, const char *what, char *err, size_t errlen);
void br_fail(ByteReader *rd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// The next n bytes, or NULL (and failed) if fewer are left.
const unsigned char *br_take(ByteReader *rd, size_t n);
unsigned br_u8(ByteReader *rd);
uint32_t br_u32(ByteReader *rd);
int br_i32(ByteReader *rd);
long br_i64(ByteReader *rd);
double br_f64(ByteReader *rd);
// A count of items of at least item_bytes bytes each (1 for items that may be empty): at
// most INT_MAX and at most what the bytes left can hold.
int br_count(ByteReader *rd, size_t item_bytes, const char *what);
// The bytes of n elements of `size` bytes, or NULL (and failed) if they are not all there:
// checked before anything is allocated for them.
const unsigned char *br_take_array(ByteReader *rd, size_t n, size_t size);
// n elements of `size` bytes (4 or 8) into a fixed array (zeros stay if they are not there).
void br_array(ByteReader *rd, void *out, size_t n, size_t size);
// A new array of them, or NULL when n is 0 or the bytes are not there.
void *br_new_array(ByteReader *rd, size_t n, size_t size);
// A text of fewer than `room` bytes without NUL (not terminated); NULL (and failed)
// otherwise. *n gets its length.
const char *br_text(ByteReader *rd, size_t room, size_t *n, const char *what);
// Bytes written as a text (a u32 length, then them) that may hold anything: NULL (and
// failed) if they are not all there. *n gets their number.
const unsigned char *br_blob(ByteReader *rd, size_t *n, const char *what);

#endif
