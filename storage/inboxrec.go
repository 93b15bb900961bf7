package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// The payload of an inbox record (storage/inbox adds the id in front) is
// one delivery as the receiver stored it, in a compact binary form the
// ack path can write without JSON (the header list is JSON-encoded later,
// by the mover). Layout, little-endian:
//
//	received_at i64 (Unix ns) | status i32 | flags u8 |
//	body_length uvarint | method, path, query, remote_addr, source,
//	read_error, answer (each uvarint length + bytes) |
//	header count uvarint | name, value (each uvarint length + bytes)... |
//	body (the rest)
//
// (The same bytes as before the inbox became a package of its own, so
// segments an older Hookscope left are read as they are.)
const (
	recFixedLen = 8 + 4 + 1

	// The flag bits (the values the first format gave them).
	flagReconstructed = 4
	flagRejected      = 8
	flagTruncated     = 16
)

// appendDelivery appends d's payload to dst. It encodes straight into the
// inbox's batch: no per-delivery buffer to allocate, fill and copy again.
func appendDelivery(dst []byte, d *inspector.Delivery) []byte {
	n := recFixedLen + len(d.Method) + len(d.Path) + len(d.Query) + len(d.RemoteAddr) +
		len(d.Source) + len(d.ReadError) + len(d.Answer) + 9*binary.MaxVarintLen64 + len(d.Body)
	for _, h := range d.Headers {
		n += len(h.Name) + len(h.Value) + 2*binary.MaxVarintLen64
	}
	dst = slices.Grow(dst, n)
	received := d.ReceivedAt
	if received.IsZero() {
		received = time.Now()
	}
	dst = binary.LittleEndian.AppendUint64(dst, uint64(received.UnixNano()))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(d.Status)))
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
	dst = append(dst, flags)
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

// decodeDelivery is the inverse of appendDelivery, for delivery id. The
// body aliases payload (the mover stores it before it reuses its buffer;
// a copy of a 10 MiB body per move showed in the memory profile).
func decodeDelivery(id int64, payload []byte) (*inspector.Delivery, error) {
	if len(payload) < recFixedLen {
		return nil, errBadRecord
	}
	d := &inspector.Delivery{
		ID:         id,
		ReceivedAt: time.Unix(0, int64(binary.LittleEndian.Uint64(payload))).UTC(),
		Status:     int(int32(binary.LittleEndian.Uint32(payload[8:]))),
	}
	flags := payload[12]
	d.HeadersReconstructed = flags&flagReconstructed != 0
	d.Rejected = flags&flagRejected != 0
	d.Truncated = flags&flagTruncated != 0
	r := recReader{b: payload[recFixedLen:]}
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
	d.Body = r.b
	if d.Body == nil {
		d.Body = []byte{}
	}
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
