package storage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookscope/hookscope/inspector"
)

// The inbox is the receiver's durable ack path. A delivery is appended to
// a preallocated segment file and made durable with one fdatasync shared
// by every request that arrived meanwhile (group commit); only then is the
// sender answered. A mover goroutine copies the records into SQLite in
// large transactions, after which the analysis sees them.
//
// Why not SQLite on the ack path: two INSERTs with their indexes, counter
// triggers and a WAL commit cost ~90 µs of CPU per delivery and put every
// ack behind whatever the single SQLite writer was doing (analysis saves,
// checkpoints): the 1,000 req/s p99 was 15-25 ms and saturation reached
// 0.28 of a bare net/http server (docs/benchmarks.md, finding 3). An
// fdatasync of overwritten, already-allocated blocks takes 90-140 µs on
// this disk against 250-350 µs for an appending write, so segments are
// zero-filled ahead of use by a preparer goroutine and recycled once moved.
//
// Durability is the same as before: an answered delivery is on disk, in the
// inbox until the mover has committed it to SQLite (synchronous=FULL), in
// both for a moment. Open recovers an inbox left by a killed process
// before anything else reads the store; records are applied only above the
// moved watermark kept in SQLite with the moved rows, so a delivery is
// never inserted twice and one deleted after its move never comes back.
//
// Ids are handed out by the inbox at append time (the sender's
// X-Hookscope-Delivery header and the analysis order need them) from
// blocks reserved in the store's kv table, which every other insert path
// also respects, so two processes sharing a store never collide. One
// process owns an inbox at a time (a lock file); another process on the
// same store inserts into SQLite directly.
type inbox struct {
	db   *DB
	dir  string
	lock *os.File

	mu sync.Mutex
	// idle is broadcast when a batch leader finishes with nothing queued
	// behind it (close waits for that).
	idle *sync.Cond
	// movedC is broadcast when moved advances or the mover's state changes.
	movedC *sync.Cond
	// cur is the batch being filled. While syncing, a leader is writing the
	// batch before it; cur's first appender waits to lead cur next.
	cur      *batch
	spareBuf []byte
	syncing  bool
	wrote    bool  // some batch was written
	err      error // sticky write failure: appends fail, InsertDelivery goes direct
	closed   bool
	// appending counts appends in progress (requests waiting for their
	// ack) and lastAck is when the last one returned (Unix ns). Atomics,
	// so a woken batch returns without touching mu.
	appending atomic.Int64
	lastAck   atomic.Int64

	next, end int64 // ids: next to hand out, end of the reserved block (exclusive)
	last      int64 // last id handed out
	moved     int64 // highest id committed to SQLite
	moveErr   error // the mover's last failure, cleared by its next success

	segs   []*segment // in use, oldest first; the last is written
	spares []*segment // prepared, not in use
	seq    int        // last number used in a segment file name

	kick chan struct{} // wakes the mover
	prep chan struct{} // wakes the preparer
	quit chan struct{}
	wg   sync.WaitGroup
}

// segment is one inbox file.
type segment struct {
	f    *os.File
	path string
	size int64
	// gen is this use's random generation (0 while unused): records carry
	// it in their checksum, so stale records of an earlier use that follow
	// the last new one are not taken for new ones.
	gen     uint64
	off     int64 // end of written records
	durable int64 // end of records made durable
	sealed  bool  // full: no more records go here
	final   int64 // end of its records once sealed
	// oversize segments hold one record too big for a normal one and are
	// deleted, not recycled, once moved.
	oversize bool
}

const (
	inboxSegSize = 16 << 20
	segHeaderLen = 32
	recHeaderLen = 16
	// inboxKeepSpares bounds the moved segments kept for reuse.
	inboxKeepSpares = 2
	// idBlock is how many ids one reservation takes.
	idBlock = 4096
	// A move transaction takes at most this many records or bytes.
	moveMaxRecords  = 512
	moveBusyRecords = 64
	moveMaxBytes    = 8 << 20
	moveBusyBytes   = 256 << 10
)

var (
	segMagic  = [8]byte{'H', 'S', 'I', 'N', 'B', 'O', 'X', '1'}
	crcTable  = crc32.MakeTable(crc32.Castagnoli)
	errLocked = errors.New("inbox is in use by another process")
	// errInboxClosed is returned by appends after close began.
	errInboxClosed = errors.New("inbox is closed")
)

// openInbox recovers the inbox in dir, if one was left, into the store.
// With own set it then keeps the inbox for this process's inserts and
// returns it; otherwise it returns nil. errLocked means a live process
// owns the inbox: its records are its own to move.
func openInbox(db *DB, dir string, own bool) (*inbox, error) {
	if !own {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		return nil, err
	}
	ib := &inbox{db: db, dir: dir, lock: lock, cur: newBatch(nil),
		kick: make(chan struct{}, 1), prep: make(chan struct{}, 1), quit: make(chan struct{})}
	ib.idle = sync.NewCond(&ib.mu)
	ib.movedC = sync.NewCond(&ib.mu)
	segs, err := ib.recover()
	if err != nil {
		ib.closeFiles(segs)
		lock.Close()
		return nil, fmt.Errorf("recover inbox %s: %w", dir, err)
	}
	if !own {
		ib.closeFiles(segs)
		lock.Close()
		return nil, nil
	}
	// Everything is moved: the files become spares, written in full, so
	// their fdatasync has no metadata to journal.
	for _, s := range segs {
		if len(ib.spares) < inboxKeepSpares && s.size == inboxSegSize {
			ib.spares = append(ib.spares, s)
			continue
		}
		s.f.Close()
		os.Remove(s.path)
	}
	ib.wg.Add(2)
	go ib.moveLoop()
	go ib.prepLoop()
	ib.wakePrep()
	return ib, nil
}

// recover reads every segment file and applies the records above the
// moved watermark that the store does not have yet. It zeroes the
// segments' headers afterwards, so the next open reads 32 bytes of each.
func (ib *inbox) recover() ([]*segment, error) {
	names, err := filepath.Glob(filepath.Join(ib.dir, "seg-*"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var segs []*segment
	var recs [][]byte
	for _, name := range names {
		var n int
		if _, err := fmt.Sscanf(filepath.Base(name), "seg-%06d", &n); err == nil && n > ib.seq {
			ib.seq = n
		}
		f, err := os.OpenFile(name, os.O_RDWR, 0o600)
		if err != nil {
			return segs, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return segs, err
		}
		s := &segment{f: f, path: name, size: st.Size()}
		segs = append(segs, s)
		got, err := readSegment(f, st.Size())
		if err != nil {
			return segs, fmt.Errorf("read %s: %w", name, err)
		}
		recs = append(recs, got...)
	}
	if len(recs) > 0 {
		watermark, err := ib.db.inboxWatermark(context.Background())
		if err != nil {
			return segs, err
		}
		var ds []*inspector.Delivery
		for _, rec := range recs {
			id := int64(binary.LittleEndian.Uint64(rec[recIDOffset:]))
			if id <= watermark {
				continue
			}
			d, err := decodeDelivery(rec)
			if err != nil {
				// The checksum matched, so this is not a torn write.
				return segs, fmt.Errorf("record of delivery %d: %w", id, err)
			}
			ds = append(ds, d)
		}
		slices.SortFunc(ds, func(a, b *inspector.Delivery) int { return cmp.Compare(a.ID, b.ID) })
		for len(ds) > 0 {
			n := min(len(ds), moveMaxRecords)
			if err := ib.db.moveDeliveries(context.Background(), ds[:n], true); err != nil {
				return segs, err
			}
			ds = ds[n:]
		}
	}
	for _, s := range segs {
		if err := s.clearHeader(); err != nil {
			return segs, err
		}
	}
	return segs, nil
}

// readSegment returns the valid records of one segment file: those of the
// generation its header names, up to the first one that is torn or stale.
func readSegment(r io.ReaderAt, size int64) ([][]byte, error) {
	var hdr [segHeaderLen]byte
	if _, err := r.ReadAt(hdr[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	gen, ok := parseSegHeader(hdr[:])
	if !ok {
		return nil, nil
	}
	data := make([]byte, size-segHeaderLen)
	if _, err := r.ReadAt(data, segHeaderLen); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var recs [][]byte
	for len(data) >= recHeaderLen {
		n := int(binary.LittleEndian.Uint32(data[0:]))
		if n < recFixedLen || n > len(data)-recHeaderLen || binary.LittleEndian.Uint64(data[8:]) != gen {
			break
		}
		rec := data[recHeaderLen : recHeaderLen+n]
		if recordCRC(data[:recHeaderLen], rec) != binary.LittleEndian.Uint32(data[4:]) {
			break
		}
		recs = append(recs, rec)
		data = data[recHeaderLen+n:]
	}
	return recs, nil
}

func parseSegHeader(h []byte) (uint64, bool) {
	if !bytes.Equal(h[:8], segMagic[:]) {
		return 0, false
	}
	gen := binary.LittleEndian.Uint64(h[8:])
	if gen == 0 || crc32.Checksum(h[:16], crcTable) != binary.LittleEndian.Uint32(h[16:]) {
		return 0, false
	}
	return gen, true
}

func segHeader(gen uint64) []byte {
	h := make([]byte, segHeaderLen)
	copy(h, segMagic[:])
	binary.LittleEndian.PutUint64(h[8:], gen)
	binary.LittleEndian.PutUint32(h[16:], crc32.Checksum(h[:16], crcTable))
	return h
}

// stampRecord puts the generation and the checksum into r, a record
// behind its header (see appendRecord).
func stampRecord(r []byte, gen uint64) {
	binary.LittleEndian.PutUint64(r[8:], gen)
	binary.LittleEndian.PutUint32(r[4:], recordCRC(r[:recHeaderLen], r[recHeaderLen:]))
}

// recordCRC covers the record's length and generation and its payload.
func recordCRC(hdr, rec []byte) uint32 {
	c := crc32.Update(0, crcTable, hdr[0:4])
	c = crc32.Update(c, crcTable, hdr[8:16])
	return crc32.Update(c, crcTable, rec)
}

// clearHeader marks a segment's records as moved, durably.
func (s *segment) clearHeader() error {
	if _, err := s.f.WriteAt(make([]byte, segHeaderLen), 0); err != nil {
		return err
	}
	return datasync(s.f)
}

func (ib *inbox) closeFiles(segs []*segment) {
	for _, s := range segs {
		s.f.Close()
	}
}

// batch is a group of records written with one write and one fdatasync.
type batch struct {
	// buf holds the records, each behind a record header whose checksum
	// and generation the leader fills in.
	buf []byte
	// lead is closed to hand the batch to its first appender, who writes
	// it; done is closed once it is written, err set before.
	lead, done chan struct{}
	err        error
}

func newBatch(buf []byte) *batch {
	return &batch{buf: buf[:0], lead: make(chan struct{}), done: make(chan struct{})}
}

// append makes d durable in the inbox and returns the id it was given.
// Concurrent appends share one write and one fdatasync (group commit):
// records queue in the current batch; the first appender of a batch
// writes it as soon as the previous batch is written, and the others wait
// on the batch's done channel alone. (A condition variable woke every
// waiter of every batch, each to take the lock again only to find it
// was not its turn.)
func (ib *inbox) append(d *inspector.Delivery) (int64, error) {
	ib.appending.Add(1)
	defer func() {
		ib.lastAck.Store(time.Now().UnixNano())
		ib.appending.Add(-1)
	}()
	ib.mu.Lock()
	if ib.closed {
		ib.mu.Unlock()
		return 0, errInboxClosed
	}
	if ib.err != nil {
		ib.mu.Unlock()
		return 0, ib.err
	}
	if ib.next >= ib.end {
		if err := ib.reserve(); err != nil {
			ib.mu.Unlock()
			return 0, err
		}
	}
	id := ib.next
	ib.next++
	ib.last = id
	b := ib.cur
	first := len(b.buf) == 0
	b.buf = appendRecord(b.buf, id, d)
	if ib.syncing {
		ib.mu.Unlock()
		if !first {
			<-b.done
			return id, b.err
		}
		select {
		case <-b.done: // the leader before wrote it too
			return id, b.err
		case <-b.lead:
		}
		ib.mu.Lock()
	}
	// This goroutine leads b: syncing was false, or the leader before
	// handed it on and left syncing set.
	ib.syncing = true
	mine := b
	for turn := 0; ; turn++ {
		var err error
		ib.cur = newBatch(ib.spareBuf)
		ib.spareBuf = nil
		if err = ib.err; err == nil {
			ib.mu.Unlock()
			if err = ib.write(b.buf); err != nil {
				err = fmt.Errorf("write delivery inbox: %w", err)
			}
			ib.mu.Lock()
		}
		if cap(b.buf) <= 4<<20 {
			ib.spareBuf = b.buf[:0]
		}
		b.buf = nil
		if err != nil {
			ib.err = err
		} else {
			ib.wrote = true
		}
		b.err = err
		close(b.done)
		select {
		case ib.kick <- struct{}{}:
		default:
		}
		if len(ib.cur.buf) == 0 {
			ib.syncing = false
			ib.idle.Broadcast()
			break
		}
		if turn+1 < leaderTurns && err == nil {
			// Write the next batch at once: handing it to its first
			// appender would leave the disk idle until that goroutine
			// is scheduled, which on a busy machine takes longer than
			// the write.
			b = ib.cur
			continue
		}
		close(ib.cur.lead)
		break
	}
	ib.mu.Unlock()
	// The caller's answer is its own batch's, whatever came of the
	// batches written after it.
	return id, mine.err
}

// leaderTurns bounds how many batches one leader writes in a row before
// it hands on and returns its own answer.
const leaderTurns = 4

// reserve takes the next block of ids from the store; called with mu held.
func (ib *inbox) reserve() error {
	end, err := ib.db.reserveIDs(context.Background(), idBlock)
	if err != nil {
		return fmt.Errorf("reserve delivery ids: %w", err)
	}
	ib.next, ib.end = end-idBlock+1, end+1
	return nil
}

// write places a batch of records in segments, rotating as they fill,
// and makes them durable. Only the leader of a batch calls it.
func (ib *inbox) write(batch []byte) error {
	type run struct {
		s          *segment
		at         int64
		start, end int
	}
	var runs []run
	ib.mu.Lock()
	var cur *segment
	if n := len(ib.segs); n > 0 && !ib.segs[n-1].sealed {
		cur = ib.segs[n-1]
	}
	ib.mu.Unlock()
	for pos := 0; pos < len(batch); {
		n := int(binary.LittleEndian.Uint32(batch[pos:]))
		need := int64(recHeaderLen + n)
		if cur == nil || cur.off+need > cur.size {
			next, err := ib.rotate(cur, need)
			if err != nil {
				return err
			}
			cur = next
			runs = append(runs, run{s: cur, at: cur.off, start: pos, end: pos})
		} else if len(runs) == 0 || runs[len(runs)-1].s != cur {
			runs = append(runs, run{s: cur, at: cur.off, start: pos, end: pos})
		}
		stampRecord(batch[pos:pos+int(need)], cur.gen)
		pos += int(need)
		runs[len(runs)-1].end = pos
		cur.off += need
	}
	for _, r := range runs {
		if _, err := r.s.f.WriteAt(batch[r.start:r.end], r.at); err != nil {
			return err
		}
	}
	for i, r := range runs {
		if i+1 < len(runs) && runs[i+1].s == r.s {
			continue
		}
		if err := datasync(r.s.f); err != nil {
			return err
		}
	}
	ib.mu.Lock()
	for _, r := range runs {
		r.s.durable = max(r.s.durable, r.at+int64(r.end-r.start))
	}
	ib.mu.Unlock()
	return nil
}

// rotate seals cur and returns the next segment to write, with its header
// written: a prepared spare when one is ready, else a new file.
func (ib *inbox) rotate(cur *segment, need int64) (*segment, error) {
	ib.mu.Lock()
	if cur != nil {
		cur.sealed, cur.final = true, cur.off
	}
	var s *segment
	if len(ib.spares) > 0 && need <= inboxSegSize-segHeaderLen {
		s = ib.spares[0]
		ib.spares = ib.spares[1:]
	}
	ib.mu.Unlock()
	ib.wakePrep()
	if s == nil {
		size := max(int64(inboxSegSize), (segHeaderLen+need+4095)&^4095)
		var err error
		if s, err = ib.create(size, nil); err != nil {
			return nil, err
		}
		s.oversize = size > inboxSegSize
	}
	s.gen = randomGen()
	if _, err := s.f.WriteAt(segHeader(s.gen), 0); err != nil {
		return nil, err
	}
	s.off, s.durable, s.sealed = segHeaderLen, segHeaderLen, false
	ib.mu.Lock()
	ib.segs = append(ib.segs, s)
	ib.mu.Unlock()
	return s, nil
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

// create makes a new segment file of size bytes. With zeros (a zeroed
// buffer) it writes every block, so a later fdatasync has no allocation
// to journal; otherwise the file is sparse and its first use is slower.
func (ib *inbox) create(size int64, zeros []byte) (*segment, error) {
	ib.mu.Lock()
	ib.seq++
	path := filepath.Join(ib.dir, fmt.Sprintf("seg-%06d", ib.seq))
	ib.mu.Unlock()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*segment, error) {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	if zeros != nil {
		for off := int64(0); off < size; off += int64(len(zeros)) {
			if _, err := f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off); err != nil {
				return fail(err)
			}
			// A sync per MiB: one flush of all 16 MiB held the
			// receiver's fdatasyncs queued behind it for up to 6.7 ms,
			// one per MiB for up to 2.7 ms (and took 13 ms, not 26).
			if err := datasync(f); err != nil {
				return fail(err)
			}
		}
	} else if err := f.Truncate(size); err != nil {
		return fail(err)
	}
	if err := datasync(f); err != nil {
		return fail(err)
	}
	if err := syncDir(ib.dir); err != nil {
		return fail(err)
	}
	return &segment{f: f, path: path, size: size}, nil
}

func (ib *inbox) wakePrep() {
	select {
	case ib.prep <- struct{}{}:
	default:
	}
}

// prepLoop keeps one zero-filled spare ready, so the writer rarely has to
// start a sparse file on the ack path.
func (ib *inbox) prepLoop() {
	defer ib.wg.Done()
	zeros := make([]byte, 1<<20) // one buffer for every file (a flood needs several a second)
	for {
		select {
		case <-ib.quit:
			return
		case <-ib.prep:
		}
		ib.mu.Lock()
		ready := len(ib.spares)
		ib.mu.Unlock()
		if ready > 0 {
			continue
		}
		s, err := ib.create(inboxSegSize, zeros)
		if err != nil {
			continue // the writer creates its own; the next rotation retries
		}
		ib.mu.Lock()
		if ib.closed {
			ib.mu.Unlock()
			s.f.Close()
			os.Remove(s.path)
			return
		}
		ib.spares = append(ib.spares, s)
		ib.mu.Unlock()
	}
}

// moveLoop copies durable records into SQLite in order and advances the
// watermark, then recycles each segment it has finished.
func (ib *inbox) moveLoop() {
	defer ib.wg.Done()
	var cur *segment
	var off int64
	buf := make([]byte, 0, moveMaxBytes)
	backoff := 10 * time.Millisecond
	quitting := false
	for {
		ib.mu.Lock()
		if cur == nil && len(ib.segs) > 0 {
			cur, off = ib.segs[0], segHeaderLen
		}
		var end int64
		var finished bool
		if cur != nil {
			end = cur.durable
			finished = cur.sealed && off >= cur.final
		}
		ib.mu.Unlock()

		switch {
		case cur != nil && off < end:
			started := time.Now()
			n, err := ib.moveFrom(cur, off, end, &buf)
			if err != nil {
				ib.mu.Lock()
				ib.moveErr = err
				ib.movedC.Broadcast()
				ib.mu.Unlock()
				select {
				case <-time.After(backoff):
				case <-ib.quit:
				}
				if quitting || ib.isQuitting() {
					return // left in the inbox; the next open moves it
				}
				backoff = min(2*backoff, 2*time.Second)
				continue
			}
			backoff = 10 * time.Millisecond
			off += n
			if !quitting {
				ib.yield(inspector.YieldFor(time.Since(started), ib.waiting()))
			}
		case finished:
			ib.recycle(cur)
			cur = nil
		case quitting:
			return
		default:
			// close waits for the last batch before it signals quit, so
			// after quit one more look finds everything there is to move.
			select {
			case <-ib.kick:
			case <-ib.quit:
				quitting = true
			}
		}
	}
}

// moveFrom moves the records in cur from off (up to end, at most one
// transaction's worth) and returns how many bytes it consumed.
func (ib *inbox) moveFrom(cur *segment, off, end int64, buf *[]byte) (int64, error) {
	n := min(end-off, moveMaxBytes)
	limit := moveMaxRecords
	if ib.waiting() > 0 {
		// Small steps while requests wait for acks: each step's pause
		// is then short enough to keep the mover's share even. The read
		// shrinks with the step (8 MiB copied for 64 records of 2 KB
		// was most of a busy step's cost).
		limit = moveBusyRecords
		n = min(n, moveBusyBytes)
	}
	if int64(cap(*buf)) < n {
		*buf = make([]byte, n)
	}
	b := (*buf)[:n]
	if _, err := cur.f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("read inbox: %w", err)
	}
	var ds []*inspector.Delivery
	used := int64(0)
	for len(b) >= recHeaderLen && len(ds) < limit {
		size := int(binary.LittleEndian.Uint32(b))
		if recHeaderLen+size > len(b) {
			if len(ds) == 0 {
				// One record bigger than a read: read exactly it.
				big := make([]byte, recHeaderLen+size)
				if _, err := cur.f.ReadAt(big, off); err != nil {
					return 0, fmt.Errorf("read inbox: %w", err)
				}
				b = big
				continue
			}
			break
		}
		d, err := decodeDelivery(b[recHeaderLen : recHeaderLen+size])
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
		b = b[recHeaderLen+size:]
		used += int64(recHeaderLen + size)
	}
	if err := ib.db.moveDeliveries(context.Background(), ds, false); err != nil {
		return 0, err
	}
	ib.mu.Lock()
	ib.moved = ds[len(ds)-1].ID
	ib.moveErr = nil
	ib.movedC.Broadcast()
	ib.mu.Unlock()
	return used, nil
}

// recycle retires a segment whose records are all moved: it becomes a
// spare (its blocks are all written, so reuse is fast) or is deleted.
func (ib *inbox) recycle(s *segment) {
	ib.mu.Lock()
	if len(ib.segs) > 0 && ib.segs[0] == s {
		ib.segs = ib.segs[1:]
	}
	keep := !s.oversize && len(ib.spares) < inboxKeepSpares && !ib.closed
	if keep {
		s.gen, s.off, s.durable, s.sealed, s.final = 0, 0, 0, false, 0
		ib.spares = append(ib.spares, s)
	}
	ib.mu.Unlock()
	if !keep {
		s.f.Close()
		os.Remove(s.path)
	}
}

// waitMoved returns once the delivery id handed out by this inbox is in
// SQLite (at once for ids it did not hand out), or with the mover's error.
func (ib *inbox) waitMoved(id int64) error {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	if id > ib.last {
		id = ib.last
	}
	for ib.moved < id {
		if ib.moveErr != nil {
			return fmt.Errorf("move deliveries from the inbox: %w", ib.moveErr)
		}
		if ib.err != nil && !ib.wrote {
			return ib.err
		}
		select {
		case ib.kick <- struct{}{}:
		default:
		}
		ib.movedC.Wait()
	}
	return nil
}

// close stops appends, lets the mover move everything written, marks the
// segments empty and releases the lock. Deliveries it could not move stay
// in the inbox for the next open.
func (ib *inbox) close() error {
	ib.mu.Lock()
	ib.closed = true
	for ib.syncing {
		ib.idle.Wait()
	}
	ib.mu.Unlock()
	close(ib.quit)
	ib.wg.Wait()
	ib.mu.Lock()
	defer ib.mu.Unlock()
	ib.movedC.Broadcast()
	var errs []error
	all := append(append([]*segment{}, ib.segs...), ib.spares...)
	if ib.moved >= ib.last || ib.last == 0 {
		for _, s := range ib.segs {
			if s.oversize {
				s.f.Close()
				os.Remove(s.path)
				continue
			}
			if err := s.clearHeader(); err != nil {
				errs = append(errs, err)
			}
		}
		if err := ib.db.releaseIDs(context.Background(), ib.last, ib.end-1); err != nil {
			errs = append(errs, err)
		}
	} else {
		errs = append(errs, fmt.Errorf("%d deliveries left in the inbox %s for the next start", ib.last-ib.moved, ib.dir))
	}
	ib.closeFiles(all)
	ib.lock.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close inbox: %w", err)
	}
	return nil
}

// waiting is how many requests wait for their acks, counting a receiver
// that acked within busyFor as one: under a flood of keep-alive requests
// there are instants with none waiting (a whole batch acked, the next
// requests not yet read), and a mover that resumed in each of them took
// enough CPU to cut the rate answered from 0.56 to 0.36 of a bare server
// (docs/benchmarks.md).
func (ib *inbox) waiting() int64 {
	if n := ib.appending.Load(); n > 0 {
		return n
	}
	if time.Now().UnixNano()-ib.lastAck.Load() < int64(busyFor) {
		return 1
	}
	return 0
}

// busyFor is how long after an ack the receiver still counts as busy.
const busyFor = 5 * time.Millisecond

// yield pauses the mover for up to d while the receiver is busy. It looks
// again every millisecond, so the rows of a burst reach the store (and
// other processes reading it) a few milliseconds after its last ack.
func (ib *inbox) yield(d time.Duration) {
	for end := time.Now().Add(d); ib.waiting() > 0 && time.Now().Before(end); {
		select {
		case <-ib.quit:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

func (ib *inbox) isQuitting() bool {
	select {
	case <-ib.quit:
		return true
	default:
		return false
	}
}
