"""The trial ids a sweep's journal holds, read independently of attnsweep (store/journal.h,
version 6): the magic line "attnsweep-journal 6\\n", then records of a 20-byte header
(u32 magic "JRN6", u32 kind, u32 body length, u32 CRC-32 of the body, u32 CRC-32 of the
first 16 header bytes) and the body as stored, every b"J" followed by a zero byte (so no
body holds the magic). A trial record (kind 1) holds trial_pack's bytes:
u32 magic, u32 version, the configuration (u32 length + bytes), i32 id. Reading stops at
the first damaged record (a journal a kill cut short ends in one)."""
import struct
import zlib

MAGIC_LINE = b"attnsweep-journal 6\n"
RECORD_MAGIC, TRIAL = 0x364E524A, 1


def trial_ids(path):
    data = open(path, "rb").read()
    if not data.startswith(MAGIC_LINE):
        return None
    pos, ids = len(MAGIC_LINE), []
    while pos + 20 <= len(data):
        magic, kind, n, crc, hcrc = struct.unpack_from("<IIIII", data, pos)
        body = data[pos + 20:pos + 20 + n]
        if magic != RECORD_MAGIC or zlib.crc32(data[pos:pos + 16]) != hcrc or len(body) != n or zlib.crc32(body) != crc:
            break
        if kind == TRIAL:
            body = body.replace(b"J\x00", b"J")
            clen = struct.unpack_from("<I", body, 8)[0]
            ids.append(struct.unpack_from("<i", body, 12 + clen)[0])
        pos += 20 + n
    return ids
