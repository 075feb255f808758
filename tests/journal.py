"""The trial ids a sweep's journal holds, read independently of attnsweep (store/journal.h,
version 6): the magic line "attnsweep-journal 6\\n", then records of a 20-byte header
(u32 magic "JRN6", u32 kind, u32 body length, u32 CRC-32 of the body, u32 CRC-32 of the
first 16 header bytes) and the body as stored, every b"J" followed by a zero byte (so no
body holds the magic). A trial record (kind 1) holds trial_pack's bytes:
u32 magic, u32 version, the configuration (u32 length + bytes), i32 id. A start (2):
i64 pid, f64 time, text host; a hand-out (3): i32 id, i32 rank, f64 time, text
configuration (u32 length + bytes), then a shared sweep's i64 job; a release (4): i32 id;
a lease (5): i64 job, f64 time, f64 seconds, u32 crc32 of the YAML; a snapshot (6):
u32 n, n × (i32 trial id, i64 offset), then the coordinator's state. Reading stops at the
first damaged record (a journal a kill cut short ends in one)."""
import struct
import zlib

MAGIC_LINE = b"attnsweep-journal 6\n"
RECORD_MAGIC, TRIAL, START, HANDOUT, RELEASE, LEASE, SNAPSHOT = 0x364E524A, 1, 2, 3, 4, 5, 6


def records(path):
    """Every intact record up to the first damage: dicts with kind, at (its offset), end
    and its fields (trial records: id; snapshots: trials, the ids it holds)."""
    data = open(path, "rb").read()
    if not data.startswith(MAGIC_LINE):
        return None
    pos, out = len(MAGIC_LINE), []
    while pos + 20 <= len(data):
        magic, kind, n, crc, hcrc = struct.unpack_from("<IIIII", data, pos)
        body = data[pos + 20:pos + 20 + n]
        if magic != RECORD_MAGIC or zlib.crc32(data[pos:pos + 16]) != hcrc or len(body) != n or zlib.crc32(body) != crc:
            break
        body = body.replace(b"J\x00", b"J")
        rec = {"kind": kind, "at": pos, "end": pos + 20 + n}
        if kind == TRIAL:
            clen = struct.unpack_from("<I", body, 8)[0]
            rec["id"] = struct.unpack_from("<i", body, 12 + clen)[0]
        elif kind == START:
            rec["pid"], rec["time"] = struct.unpack_from("<qd", body, 0)
        elif kind == HANDOUT:
            rec["id"], rec["rank"], rec["time"], clen = struct.unpack_from("<iidI", body, 0)
            rest = body[20 + clen:]
            rec["job"] = struct.unpack("<q", rest)[0] if rest else -1
        elif kind == RELEASE:
            rec["id"] = struct.unpack_from("<i", body, 0)[0]
        elif kind == LEASE:
            rec["job"], rec["time"], rec["seconds"], rec["yaml_crc"] = struct.unpack_from("<qddI", body, 0)
        elif kind == SNAPSHOT:
            count = struct.unpack_from("<I", body, 0)[0]
            rec["trials"] = [struct.unpack_from("<i", body, 4 + 12 * i)[0] for i in range(count)]
        out.append(rec)
        pos += 20 + n
    return out


def trial_ids(path):
    recs = records(path)
    return None if recs is None else [r["id"] for r in recs if r["kind"] == TRIAL]
