package inbox

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// Segment files. A segment starts with a header naming the random
// generation of its current use; each record follows the one before it:
//
//	segment: magic "HSINBOX1" | generation u64 | CRC-32C of the 16 bytes before u32 | 12 zero bytes
//	record:  length u32 | CRC-32C u32 | generation u64 | id u64 | payload
//
// length counts id and payload; the CRC covers length, generation, id and
// payload. All integers are little-endian. A record of another generation
// is stale (an earlier use of a recycled file), never taken for a new one.
const (
	segHeaderLen = 32
	recHeaderLen = 16
	// idLen: every record's body starts with its delivery id.
	idLen = 8
)

var (
	segMagic = [8]byte{'H', 'S', 'I', 'N', 'B', 'O', 'X', '1'}
	crcTable = crc32.MakeTable(crc32.Castagnoli)
)

func segHeader(gen uint64) []byte {
	h := make([]byte, segHeaderLen)
	copy(h, segMagic[:])
	binary.LittleEndian.PutUint64(h[8:], gen)
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(h[:16], crcTable))
	return h
}

func parseSegHeader(h []byte) (uint64, bool) {
	if len(h) < segHeaderLen || !bytes.Equal(h[:8], segMagic[:]) {
		return 0, false
	}
	gen := binary.LittleEndian.Uint64(h[8:])
	if gen == 0 || crc32.Checksum(h[:16], crcTable) != binary.LittleEndian.Uint32(h[16:]) {
		return 0, false
	}
	return gen, true
}

func randomGen() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if g := binary.LittleEndian.Uint64(b[:]); g != 0 {
			return g
		}
	}
}

// appendRecordHeader appends the header and id of a record whose payload
// the caller appends next; stampRecord completes it.
func appendRecordHeader(dst []byte, id int64) []byte {
	dst = append(dst, make([]byte, recHeaderLen)...)
	return binary.LittleEndian.AppendUint64(dst, uint64(id))
}

// stampRecord fills in the length, generation and checksum of r, one
// record (header included) whose body is complete.
func stampRecord(r []byte, gen uint64) {
	binary.LittleEndian.PutUint32(r[0:], uint32(len(r)-recHeaderLen))
	binary.LittleEndian.PutUint64(r[8:], gen)
	binary.LittleEndian.PutUint32(r[4:], recordCRC(r[:recHeaderLen], r[recHeaderLen:]))
}

// recordCRC covers the record's length and generation and its body.
func recordCRC(hdr, body []byte) uint32 {
	c := crc32.Update(0, crcTable, hdr[0:4])
	c = crc32.Update(c, crcTable, hdr[8:16])
	return crc32.Update(c, crcTable, body)
}

// validAt returns the length of the valid record of generation gen at the
// start of b (header included), or 0.
func validAt(b []byte, gen uint64) int {
	if len(b) < recHeaderLen {
		return 0
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < idLen || n > len(b)-recHeaderLen || binary.LittleEndian.Uint64(b[8:]) != gen {
		return 0
	}
	if recordCRC(b[:recHeaderLen], b[recHeaderLen:recHeaderLen+n]) != binary.LittleEndian.Uint32(b[4:]) {
		return 0
	}
	return recHeaderLen + n
}

// recordLen is the length (header included) the record at the start of b
// claims, unchecked, or 0.
func recordLen(b []byte) int64 {
	if len(b) < recHeaderLen {
		return 0
	}
	return recHeaderLen + int64(binary.LittleEndian.Uint32(b))
}

// record is one valid record found by scan: its offset in the scanned
// bytes, its id and payload.
type record struct {
	off     int
	id      int64
	payload []byte
}

// gap is a run of bytes scan skipped because they held no valid record,
// with valid records of the same generation after them: damage.
type gap struct {
	off, n int
}

// scanResult is what scan found in a run of bytes.
type scanResult struct {
	recs []record
	gaps []gap
	// end is where the last valid record ends. What follows is not a
	// record of this generation: zeros, an earlier use's records, or a
	// write a crash cut short.
	end int
	// tailRecord says the bytes at end begin like a record of this
	// generation (its generation field) whose checksum fails: a write cut
	// short by a crash before it was acknowledged, or damage; it cannot
	// be told which.
	tailRecord bool
}

// scan reads the records of generation gen in b. A record that fails its
// checksum costs itself only: scan looks for the next valid record of
// the generation (its 8 generation bytes, then length and checksum) and
// reports the bytes in between as a gap.
func scan(b []byte, gen uint64) scanResult {
	var res scanResult
	var genBytes [8]byte
	binary.LittleEndian.PutUint64(genBytes[:], gen)
	pos := 0
	for {
		if n := validAt(b[pos:], gen); n > 0 {
			body := b[pos+recHeaderLen : pos+n]
			res.recs = append(res.recs, record{off: pos, id: int64(binary.LittleEndian.Uint64(body)), payload: body[idLen:]})
			pos += n
			res.end = pos
			continue
		}
		next := nextValid(b, pos+1, gen, genBytes[:])
		if next < 0 {
			res.tailRecord = len(b)-pos >= recHeaderLen && bytes.Equal(b[pos+8:pos+16], genBytes[:])
			return res
		}
		res.gaps = append(res.gaps, gap{off: pos, n: next - pos})
		pos = next
	}
}

// nextValid returns the offset of the first valid record of gen at or
// after from, or -1.
func nextValid(b []byte, from int, gen uint64, genBytes []byte) int {
	for from+recHeaderLen <= len(b) {
		i := bytes.Index(b[from+8:], genBytes)
		if i < 0 {
			return -1
		}
		at := from + i
		if validAt(b[at:], gen) > 0 {
			return at
		}
		from = at + 1
	}
	return -1
}

// readSegment reads one segment file's header and every byte after it.
// A file without a valid header holds no records (unused, or moved).
func readSegment(f io.ReaderAt, size int64) (gen uint64, data []byte, err error) {
	var hdr [segHeaderLen]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, nil, nil
		}
		return 0, nil, err
	}
	gen, ok := parseSegHeader(hdr[:])
	if !ok {
		return 0, nil, nil
	}
	data = make([]byte, size-segHeaderLen)
	if _, err := f.ReadAt(data, segHeaderLen); err != nil && !errors.Is(err, io.EOF) {
		return 0, nil, err
	}
	return gen, data, nil
}

// segment is one inbox file.
type segment struct {
	f    *os.File
	path string
	size int64
	// gen is this use's random generation (0 while unused).
	gen     uint64
	off     int64 // end of the records placed in it
	durable int64 // end of the records made durable
	sealed  bool  // no more records go here
	final   int64 // end of its durable records once sealed
	// oversize segments hold one record too big for a normal one and are
	// deleted, not recycled, once moved.
	oversize bool
	// damaged: the mover skipped bytes in it; it is kept aside, not
	// recycled.
	damaged bool
}

// clearHeader marks a segment's records as moved, durably.
func (s *segment) clearHeader() error {
	if _, err := s.f.WriteAt(make([]byte, segHeaderLen), 0); err != nil {
		return err
	}
	return datasync(s.f)
}

// describeGap says which records a gap lies between, for a report.
func describeGap(name string, g gap, recs []record) string {
	var before, after int64
	for _, r := range recs {
		if r.off < g.off {
			before = r.id
		} else if after == 0 {
			after = r.id
		}
	}
	where := fmt.Sprintf("at offset %d of %s", segHeaderLen+g.off, name)
	switch {
	case before > 0 && after > 0:
		return fmt.Sprintf("%d damaged bytes %s, between deliveries %d and %d", g.n, where, before, after)
	case after > 0:
		return fmt.Sprintf("%d damaged bytes %s, before delivery %d", g.n, where, after)
	default:
		return fmt.Sprintf("%d damaged bytes %s", g.n, where)
	}
}
