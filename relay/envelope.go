package relay

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// The envelope is one receipt as the relay's receiver took it, in a
// compact binary form of its own: JSON would replace header bytes that
// are not UTF-8 (obs-text) and escape the rest, so the laptop would not
// get the wire bytes back, and a 4 MiB header block could grow past the
// message size limit. Layout (integers big-endian, strings as uvarint
// length then bytes):
//
//	magic "HSR1" | received_at i64 (Unix ns) | status i32 | flags u8 |
//	body_length uvarint | receipt, method, path, query, remote_addr,
//	read_error, answer | header count uvarint | name, value ... |
//	body (the rest)
//
// A new field means a new magic, so an old laptop refuses what it cannot
// read instead of misreading it.
const envelopeMagic = "HSR1"

const (
	flagReconstructed = 1 << iota
	flagRejected
	flagTruncated
)

// fixedLen is the size of the magic and the fixed-width fields.
const fixedLen = len(envelopeMagic) + 8 + 4 + 1

// errEnvelope is wrapped by every decoding failure.
var errEnvelope = errors.New("not a Hookscope relay envelope")

// encodeEnvelope returns d's envelope under the receipt id.
func encodeEnvelope(d *inspector.Delivery, receipt string) []byte {
	n := fixedLen + 9*binary.MaxVarintLen64 + len(receipt) + len(d.Method) + len(d.Path) +
		len(d.Query) + len(d.RemoteAddr) + len(d.ReadError) + len(d.Answer) + len(d.Body)
	for _, h := range d.Headers {
		n += 2*binary.MaxVarintLen64 + len(h.Name) + len(h.Value)
	}
	b := make([]byte, 0, n)
	b = append(b, envelopeMagic...)
	b = binary.BigEndian.AppendUint64(b, uint64(d.ReceivedAt.UnixNano()))
	b = binary.BigEndian.AppendUint32(b, uint32(int32(d.Status)))
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
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(max(d.BodyLength, 0)))
	for _, s := range [...]string{receipt, d.Method, d.Path, d.Query, d.RemoteAddr, d.ReadError, d.Answer} {
		b = appendString(b, s)
	}
	b = binary.AppendUvarint(b, uint64(len(d.Headers)))
	for _, h := range d.Headers {
		b = appendString(b, h.Name)
		b = appendString(b, h.Value)
	}
	return append(b, d.Body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeEnvelope reads an envelope back as a delivery with source
// "relay" and returns its receipt id. The body aliases data.
func decodeEnvelope(data []byte) (*inspector.Delivery, string, error) {
	if len(data) < fixedLen || string(data[:len(envelopeMagic)]) != envelopeMagic {
		return nil, "", fmt.Errorf("%w (it does not start with %q; a newer Hookscope may have written it)", errEnvelope, envelopeMagic)
	}
	p := data[len(envelopeMagic):]
	d := &inspector.Delivery{
		ReceivedAt: time.Unix(0, int64(binary.BigEndian.Uint64(p))).UTC(),
		Status:     int(int32(binary.BigEndian.Uint32(p[8:]))),
		Source:     DeliverySource,
	}
	flags := p[12]
	d.HeadersReconstructed = flags&flagReconstructed != 0
	d.Rejected = flags&flagRejected != 0
	d.Truncated = flags&flagTruncated != 0
	r := reader{b: p[13:]}
	d.BodyLength = int64(r.uvarint())
	var receipt string
	for _, s := range [...]*string{&receipt, &d.Method, &d.Path, &d.Query, &d.RemoteAddr, &d.ReadError, &d.Answer} {
		*s = r.string()
	}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/2) {
		r.err = fmt.Errorf("%w: %d headers in %d bytes", errEnvelope, n, len(r.b))
	}
	if r.err == nil && n > 0 {
		d.Headers = make([]inspector.Header, n)
		for i := range d.Headers {
			d.Headers[i] = inspector.Header{Name: r.string(), Value: r.string()}
		}
	}
	if r.err != nil {
		return nil, "", r.err
	}
	d.Body = r.b
	if d.Body == nil {
		d.Body = []byte{}
	}
	return d, receipt, nil
}

// reader reads the envelope's variable part, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("%w: a length is cut short", errEnvelope)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.err = fmt.Errorf("%w: a field of %d bytes with %d left", errEnvelope, n, len(r.b))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// DeliverySource is the Delivery.Source of a delivery that came through a relay.
const DeliverySource = "relay"
