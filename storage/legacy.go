package storage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// This file exists only to upgrade a store written by a Hookscope that
// acknowledged deliveries from an inbox folder beside the store
// (<store>-inbox) and kept an id counter (<store>-ids) and forward marks
// (<store>-forward): Open moves what that inbox still holds into SQLite
// once, then removes the three.

// moveLegacyInbox moves the records of an older version's inbox above its
// moved watermark into the store (keeping their ids, leaving out ids the
// store has), then removes the inbox, the id counter and the forward
// marks. An inbox holding bytes it cannot read is renamed aside
// (<store>-inbox.unreadable) and reported, never deleted.
func (db *DB) moveLegacyInbox(ctx context.Context) error {
	dir := db.path + "-inbox"
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return removeLegacyFiles(db.path)
	}
	if legacyInboxInUse(dir) {
		db.logf("an older Hookscope still receives into this store through %s: its deliveries are moved into the store when it has stopped and this store is opened again", dir)
		return nil
	}
	recs, damage, err := readLegacyInbox(dir)
	if err != nil {
		return fmt.Errorf("read the older version's inbox %s: %w", dir, err)
	}
	moved := 0
	err = db.write(ctx, func(tx *sql.Tx) error {
		var watermark int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce((SELECT value FROM kv WHERE key = 'inbox_moved'), 0)`).Scan(&watermark); err != nil {
			return err
		}
		for _, r := range recs {
			var n int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM deliveries WHERE id = ?`, r.ID).Scan(&n); err != nil {
				return err
			}
			if r.ID <= watermark || n > 0 {
				continue
			}
			p, err := newPendingInsert(r)
			if err == nil {
				_, err = insertRow(tx, db.stmts, p, r.ID)
			}
			if err != nil {
				return fmt.Errorf("delivery %d: %w", r.ID, err)
			}
			moved++
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM kv WHERE key = 'inbox_moved'`)
		return err
	})
	if err != nil {
		return fmt.Errorf("move the older version's inbox %s into the store: %w", dir, err)
	}
	if moved > 0 {
		db.logf("moved %d deliveries from the older version's inbox %s into the store", moved, dir)
	}
	if len(damage) > 0 {
		aside := dir + ".unreadable"
		if err := os.Rename(dir, aside); err != nil {
			return fmt.Errorf("keep the older version's inbox aside: %w", err)
		}
		for _, d := range damage {
			db.logf("the older version's inbox: %s", d)
		}
		db.logf("the older version's inbox holds bytes that could not be read as deliveries; it is kept as %s", aside)
	} else if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the older version's inbox: %w", err)
	}
	return removeLegacyFiles(db.path)
}

// removeLegacyFiles removes the older version's id counter and forward
// marks (nothing reads them any more).
func removeLegacyFiles(path string) error {
	if err := os.Remove(path + "-ids"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the older version's id counter: %w", err)
	}
	if err := os.RemoveAll(path + "-forward"); err != nil {
		return fmt.Errorf("remove the older version's forward marks: %w", err)
	}
	return nil
}

// The older inbox's layout (little-endian): each file seg-NNNNNN starts
// with "HSINBOX1", a generation u64 (0: emptied) and the CRC-32C of those
// 16 bytes, 32 bytes in all; records follow, each
//
//	length u32 | CRC-32C u32 | generation u64 | id u64 | payload
//
// (length counts id and payload; the CRC covers length, generation, id
// and payload). The payload is one delivery:
//
//	received_at i64 (Unix ns) | status i32 | flags u8 (4 reconstructed,
//	8 rejected, 16 truncated) | body_length uvarint | method, path, query,
//	remote_addr, source, read_error, answer (uvarint length + bytes each) |
//	header count uvarint | name, value (each uvarint length + bytes)... |
//	body (the rest)
//
// After the last record of a file's generation come zeros, an earlier
// use's records or a write a crash cut short before it was acknowledged.
var legacyCRC = crc32.MakeTable(crc32.Castagnoli)

// readLegacyInbox returns the deliveries of every file of the inbox in dir
// (ids set, ascending) and what it found damaged: bytes that are not a
// record before a valid record of the file's generation, or a record
// whose delivery cannot be read.
func readLegacyInbox(dir string) ([]*inspector.Delivery, []string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "seg-*"))
	if err != nil {
		return nil, nil, err
	}
	var out []*inspector.Delivery
	var damage []string
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			return nil, nil, err
		}
		if len(b) < 32 || string(b[:8]) != "HSINBOX1" || crc32.Checksum(b[:16], legacyCRC) != binary.LittleEndian.Uint32(b[16:]) {
			continue
		}
		gen := b[8:16]
		if binary.LittleEndian.Uint64(gen) == 0 {
			continue
		}
		// A record that is not valid costs itself only: reading goes on at
		// the next valid record of the generation, and the bytes skipped
		// are damage. Past the last one come zeros, an earlier use's
		// records, or a write cut short before it was acknowledged.
		for pos := 32; pos+16 <= len(b); {
			if n := legacyRecordAt(b[pos:], gen); n > 0 {
				body := b[pos+16 : pos+n]
				d, err := legacyDelivery(body[8:])
				if err != nil {
					damage = append(damage, fmt.Sprintf("%s: the record at offset %d: %v", filepath.Base(name), pos, err))
				} else {
					d.ID = int64(binary.LittleEndian.Uint64(body))
					out = append(out, d)
				}
				pos += n
				continue
			}
			next := nextLegacyRecord(b, pos+1, gen)
			if next < 0 {
				break
			}
			damage = append(damage, fmt.Sprintf("%s: %d unreadable bytes at offset %d", filepath.Base(name), next-pos, pos))
			pos = next
		}
	}
	slices.SortFunc(out, func(a, b *inspector.Delivery) int { return int(a.ID - b.ID) })
	return out, damage, nil
}

// nextLegacyRecord returns the offset of the first valid record of gen at
// or after from, or -1.
func nextLegacyRecord(b []byte, from int, gen []byte) int {
	for from+16 <= len(b) {
		i := bytes.Index(b[from+8:], gen)
		if i < 0 {
			return -1
		}
		at := from + i
		if legacyRecordAt(b[at:], gen) > 0 {
			return at
		}
		from = at + 1
	}
	return -1
}

// legacyRecordAt returns the length of the valid record of generation gen
// at the start of b (header included), or 0.
func legacyRecordAt(b, gen []byte) int {
	if len(b) < 16 || !bytes.Equal(b[8:16], gen) {
		return 0
	}
	n := int(binary.LittleEndian.Uint32(b))
	if n < 8 || n > len(b)-16 {
		return 0
	}
	c := crc32.Update(0, legacyCRC, b[0:4])
	c = crc32.Update(c, legacyCRC, b[8:16])
	if crc32.Update(c, legacyCRC, b[16:16+n]) != binary.LittleEndian.Uint32(b[4:]) {
		return 0
	}
	return 16 + n
}

// legacyDelivery decodes one record's payload.
func legacyDelivery(p []byte) (*inspector.Delivery, error) {
	if len(p) < 13 {
		return nil, errors.New("too short")
	}
	d := &inspector.Delivery{
		ReceivedAt: time.Unix(0, int64(binary.LittleEndian.Uint64(p))).UTC(),
		Status:     int(int32(binary.LittleEndian.Uint32(p[8:]))),
	}
	flags := p[12]
	d.HeadersReconstructed, d.Rejected, d.Truncated = flags&4 != 0, flags&8 != 0, flags&16 != 0
	p = p[13:]
	var bad bool
	uvarint := func() uint64 {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			bad = true
			return 0
		}
		p = p[n:]
		return v
	}
	str := func() string {
		n := uvarint()
		if bad || n > uint64(len(p)) {
			bad = true
			return ""
		}
		s := string(p[:n])
		p = p[n:]
		return s
	}
	d.BodyLength = int64(uvarint())
	for _, s := range []*string{&d.Method, &d.Path, &d.Query, &d.RemoteAddr, &d.Source, &d.ReadError, &d.Answer} {
		*s = str()
	}
	n := uvarint()
	if n > uint64(len(p)) {
		bad = true
	}
	for i := uint64(0); !bad && i < n; i++ {
		d.Headers = append(d.Headers, inspector.Header{Name: str(), Value: str()})
	}
	if bad {
		return nil, errors.New("malformed delivery")
	}
	d.Body = slices.Clone(p)
	return d, nil
}
