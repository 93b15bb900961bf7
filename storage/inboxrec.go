package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// An inbox record is one delivery as the receiver stored it, in a compact
// binary form the ack path can write without JSON (the header list is
// JSON-encoded later, by the mover). Layout, little-endian:
//
//	id u64 | received_at i64 (Unix ns) | status i32 | flags u8 |
//	body_length uvarint | method, path, query, remote_addr, source,
//	read_error, answer (each uvarint length + bytes) |
//	header count uvarint | name, value (each uvarint length + bytes)... |
//	body (the rest)
//
// The id is written last, into its fixed place, once the inbox has chosen it.
const (
	recIDOffset = 0
	recFixedLen = 8 + 8 + 4 + 1

	flagReconstructed = 1 << iota
	flagRejected
	flagTruncated
)

// appendRecord appends d's record with id, behind a record header that
// holds its length (the leader adds the generation and checksum), to dst.
// It encodes straight into the batch: no per-delivery buffer to allocate,
// fill and copy again.
func appendRecord(dst []byte, id int64, d *inspector.Delivery) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recHeaderLen)...)
	dst = appendDelivery(dst, d)
	rec := dst[start+recHeaderLen:]
	binary.LittleEndian.PutUint64(rec[recIDOffset:], uint64(id))
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(rec)))
	return dst
}

// appendDelivery appends d's record, with a zero id, to dst.
func appendDelivery(dst []byte, d *inspector.Delivery) []byte {
	n := recFixedLen + 10 + len(d.Method) + len(d.Path) + len(d.Query) + len(d.RemoteAddr) +
		len(d.Source) + len(d.ReadError) + len(d.Answer) + 7*binary.MaxVarintLen32 + binary.MaxVarintLen32 + len(d.Body)
	for _, h := range d.Headers {
		n += len(h.Name) + len(h.Value) + 2*binary.MaxVarintLen32
	}
	dst = slices.Grow(dst, n)
	b := dst[len(dst) : len(dst)+recFixedLen]
	clear(b)
	received := d.ReceivedAt
	if received.IsZero() {
		received = time.Now()
	}
	binary.LittleEndian.PutUint64(b[8:], uint64(received.UnixNano()))
	binary.LittleEndian.PutUint32(b[16:], uint32(int32(d.Status)))
	var flags byte
	if d.HeadersReconstructed {
		flags |= flagReconstructed
	}
	if d.Rejected {
		flags |= flagRejected
	}
	if d.Truncated {
		flags |= flagTruncated
	}
	b[20] = flags
	dst = dst[:len(dst)+recFixedLen]
	dst = binary.AppendUvarint(dst, uint64(d.BodyLength))
	for _, s := range [...]string{d.Method, d.Path, d.Query, d.RemoteAddr, d.Source, d.ReadError, d.Answer} {
		dst = appendString(dst, s)
	}
	dst = binary.AppendUvarint(dst, uint64(len(d.Headers)))
	for _, h := range d.Headers {
		dst = appendString(dst, h.Name)
		dst = appendString(dst, h.Value)
	}
	return append(dst, d.Body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errBadRecord = errors.New("malformed inbox record")

// decodeDelivery is the inverse of appendDelivery. The body is copied, so
// rec may be reused.
func decodeDelivery(rec []byte) (*inspector.Delivery, error) {
	if len(rec) < recFixedLen {
		return nil, errBadRecord
	}
	d := &inspector.Delivery{
		ID:         int64(binary.LittleEndian.Uint64(rec[recIDOffset:])),
		ReceivedAt: time.Unix(0, int64(binary.LittleEndian.Uint64(rec[8:]))).UTC(),
		Status:     int(int32(binary.LittleEndian.Uint32(rec[16:]))),
	}
	flags := rec[20]
	d.HeadersReconstructed = flags&flagReconstructed != 0
	d.Rejected = flags&flagRejected != 0
	d.Truncated = flags&flagTruncated != 0
	r := recReader{b: rec[recFixedLen:]}
	d.BodyLength = int64(r.uvarint())
	for _, s := range []*string{&d.Method, &d.Path, &d.Query, &d.RemoteAddr, &d.Source, &d.ReadError, &d.Answer} {
		*s = r.string()
	}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)) {
		r.err = errBadRecord
	}
	if r.err == nil && n > 0 {
		d.Headers = make([]inspector.Header, n)
		for i := range d.Headers {
			d.Headers[i] = inspector.Header{Name: r.string(), Value: r.string()}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	d.Body = append([]byte{}, r.b...)
	return d, nil
}

type recReader struct {
	b   []byte
	err error
}

func (r *recReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recReader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: string of %d bytes with %d left", errBadRecord, n, len(r.b))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
