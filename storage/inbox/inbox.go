// Package inbox is the receiver's durable ack path in front of the SQLite
// store: Append makes a record durable with one fdatasync shared by every
// request that arrived meanwhile (group commit), a mover goroutine moves
// the records into the store (a Sink) a moment later, and Open or Recover
// moves what a killed process left behind.
//
// Why it exists: a SQLite commit per ack cost ~40 µs more CPU per ack
// than an append, and put every ack behind whatever the single SQLite
// writer was doing; with the inbox the listener answers a saturating
// flood at 0.6 of a bare net/http server, through SQLite at 0.2-0.3
// (docs/benchmarks.md, finding 3). An fdatasync of overwritten,
// already-allocated blocks takes 90-140 µs on the measured disk against
// 250-350 µs for an appending write, so segment files are zero-filled
// ahead of use and recycled once moved.
//
// Durability: Append returns only once its record is on disk. The mover
// removes nothing: a segment is reused only after the Sink committed all
// its records, and the Sink's watermark (the highest id moved, kept with
// the moved rows) makes recovery idempotent. A damaged record costs that
// record only; what the reader skipped is reported, and a file with
// damage in it is kept aside in damaged/, never overwritten.
//
// One process owns an inbox at a time (a lock file); Open in another
// returns ErrLocked.
package inbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hookscope/hookscope/internal/fault"
	"github.com/hookscope/hookscope/internal/pace"
)

// Record is one record as the inbox holds it: its id and the payload the
// store encoded.
type Record struct {
	ID      int64
	Payload []byte
}

// Sink is the store the inbox moves records into.
type Sink interface {
	// Moved returns the highest id the sink holds from an inbox (its
	// watermark); records at or below it are never passed again.
	Moved(ctx context.Context) (int64, error)
	// Move stores recs (ascending ids) and raises the watermark to the
	// last id, in one durable transaction. For recovered records it
	// leaves out ids it already holds. It returns the ids of records
	// whose payload it could not read (not stored: the inbox reports
	// them and keeps their file aside).
	Move(ctx context.Context, recs []Record, recovered bool) (rejected []int64, err error)
}

// Options configures Open.
type Options struct {
	// NextID hands out the id of each appended record; ids must increase.
	NextID func() int64
	// Logf receives reports (never payloads): what recovery or the mover
	// skipped, and the mover's faults as changes of state. Nil discards.
	Logf func(format string, args ...any)
}

var (
	// ErrLocked is returned by Open when another process owns the inbox.
	ErrLocked = errors.New("inbox is in use by another process")
	// ErrClosed is returned by Append once Close has begun.
	ErrClosed = errors.New("inbox is closed")
)

const (
	// SegSize is a segment file's size: rotations (a header write, and a
	// new file when no spare is ready) stay rare under a flood.
	SegSize = 16 << 20
	// keepSpares bounds the moved segments kept for reuse: a flood fills
	// one every second or two, and reuse skips the file's allocation.
	keepSpares = 2
	// leaderTurns bounds how many batches one appender writes in a row:
	// handing a batch on costs a scheduling delay on a busy machine, and
	// its own answer waits meanwhile.
	leaderTurns = 4
	// keepBatchBuf: a batch buffer up to this size is reused for the next
	// batch; a bigger one (a few huge bodies) goes back to the GC.
	keepBatchBuf = 4 << 20
	// zeroStep: a spare is zero-filled and synced in steps of this size,
	// so the receiver's fdatasyncs queue behind one MiB at most (one
	// flush of 16 MiB held them up for 6.7 ms).
	zeroStep = 1 << 20
	// A move transaction takes at most moveMaxRecords or moveMaxBytes: big
	// transactions write each hot page of the store once for many rows.
	moveMaxRecords = 512
	moveMaxBytes   = 8 << 20
	// While requests wait for acks a move step is small, so each pause
	// after it (pace) is short and the mover's share stays even.
	moveBusyRecords = 64
	moveBusyBytes   = 256 << 10
	// moveRetryMin and moveRetryMax bound the mover's wait before it tries
	// again after the Sink failed (a full disk, a locked store).
	moveRetryMin = 10 * time.Millisecond
	moveRetryMax = 2 * time.Second
)

// Inbox is an open inbox owned by this process.
type Inbox struct {
	sink   Sink
	dir    string
	lock   *os.File
	nextID func() int64
	logf   func(string, ...any)
	// load counts appends waiting for their fdatasync: the mover steps
	// back while it is busy (pace).
	load pace.Gauge
	// moving reports the mover's failures once per change of state.
	moving fault.State

	mu sync.Mutex
	// idle is broadcast when a batch leader finishes with nothing queued
	// behind it (Close waits for that).
	idle *sync.Cond
	// movedC is broadcast when moved advances or the mover's state changes.
	movedC *sync.Cond
	// cur is the batch being filled. While syncing, a leader is writing the
	// batch before it; cur's first appender waits to lead cur next.
	cur      *batch
	spareBuf []byte
	syncing  bool
	closed   bool

	written int64 // highest id of a record made durable
	moved   int64 // highest id the mover is done with (moved, or skipped as damaged)
	moveErr error // the mover's last failure, cleared by its next success

	segs   []*segment // in use, oldest first; the last is written
	spares []*segment // prepared, not in use
	seq    int        // last number used in a segment file name

	kick chan struct{} // wakes the mover
	prep chan struct{} // wakes the preparer
	quit chan struct{}
	wg   sync.WaitGroup
}

// Recover moves what a killed process left in the inbox in dir into sink,
// for a process that does not keep the inbox (a command reading or
// writing the store directly). It does nothing if there is no inbox or
// its owner is alive.
func Recover(dir string, sink Sink, logf func(string, ...any)) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	ib, err := open(dir, sink, Options{Logf: logf})
	if errors.Is(err, ErrLocked) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if err != nil {
		return err
	}
	ib.closeFiles(ib.spares)
	ib.lock.Close()
	return nil
}

// Read passes every valid record of the inbox in dir to fn, without
// taking it or changing anything (for reading a store that is damaged, or
// in use by another process), and returns what it skipped as damage.
// Records already moved may be among them.
func Read(dir string, fn func(Record)) ([]string, error) {
	names, err := filepath.Glob(filepath.Join(dir, "seg-*"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var damage []string
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			damage = append(damage, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		st, err := f.Stat()
		var gen uint64
		var data []byte
		if err == nil {
			gen, data, err = readSegment(f, st.Size())
		}
		f.Close()
		if err != nil {
			damage = append(damage, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		if gen == 0 {
			continue
		}
		res := scan(data, gen)
		for _, g := range res.gaps {
			damage = append(damage, describeGap(name, g, res.recs))
		}
		for _, r := range res.recs {
			fn(Record{ID: r.id, Payload: r.payload})
		}
	}
	return damage, nil
}

// Open takes the inbox in dir for this process (ErrLocked if another
// process has it; errors.ErrUnsupported where files cannot be locked),
// moves what a killed process left into sink, and starts the mover.
func Open(dir string, sink Sink, o Options) (*Inbox, error) {
	if o.NextID == nil {
		return nil, errors.New("open inbox: no id source")
	}
	ib, err := open(dir, sink, o)
	if err != nil {
		return nil, err
	}
	ib.wg.Add(2)
	go ib.moveLoop()
	go ib.prepLoop()
	ib.wakePrep()
	return ib, nil
}

// open locks dir and recovers it; the moved segments become spares.
func open(dir string, sink Sink, o Options) (*Inbox, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open inbox %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open inbox %s: %w", dir, err)
	}
	if err := lockFile(lock); err != nil {
		lock.Close()
		return nil, err
	}
	logf := o.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ib := &Inbox{sink: sink, dir: dir, lock: lock, nextID: o.NextID, logf: logf, cur: newBatch(nil),
		kick: make(chan struct{}, 1), prep: make(chan struct{}, 1), quit: make(chan struct{})}
	ib.idle = sync.NewCond(&ib.mu)
	ib.movedC = sync.NewCond(&ib.mu)
	ib.moving = fault.State{
		Failing:   "cannot move received deliveries into the store",
		Meanwhile: "they stay in the inbox " + dir + " (acknowledged, on disk) and moving is retried",
		Recovered: "moving received deliveries into the store again",
		Attempts:  "attempts failed",
		Logf:      logf,
	}
	segs, err := ib.recover()
	if err != nil {
		ib.closeFiles(segs)
		lock.Close()
		return nil, fmt.Errorf("recover inbox %s: %w", dir, err)
	}
	// Everything is moved: whole-size files become spares (written in
	// full, so their fdatasync has no metadata to journal).
	for _, s := range segs {
		if len(ib.spares) < keepSpares && s.size == SegSize {
			ib.spares = append(ib.spares, s)
			continue
		}
		s.f.Close()
		os.Remove(s.path)
	}
	return ib, nil
}

// recover reads every segment file and moves the records above the
// sink's watermark. A segment whose reading skipped anything is kept
// aside; the others get their header cleared, so the next open reads 32
// bytes of each.
func (ib *Inbox) recover() ([]*segment, error) {
	names, err := filepath.Glob(filepath.Join(ib.dir, "seg-*"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var segs []*segment
	var recs []Record
	from := map[int64]*segment{}
	damaged := map[*segment]bool{}
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
		gen, data, err := readSegment(f, st.Size())
		if err != nil {
			return segs, fmt.Errorf("read %s: %w", name, err)
		}
		if gen == 0 {
			continue
		}
		res := scan(data, gen)
		for _, g := range res.gaps {
			ib.logf("inbox recovery skipped %s", describeGap(filepath.Base(name), g, res.recs))
			damaged[s] = true
		}
		if res.tailRecord {
			ib.logf("inbox recovery: the record at offset %d of %s fails its checksum and nothing valid follows it: a write cut short by a crash before it was acknowledged, or damage",
				segHeaderLen+res.end, filepath.Base(name))
			damaged[s] = true
		}
		for _, r := range res.recs {
			recs = append(recs, Record{ID: r.id, Payload: r.payload})
			from[r.id] = s
		}
	}
	if len(recs) > 0 {
		watermark, err := ib.sink.Moved(context.Background())
		if err != nil {
			return segs, err
		}
		recs = slices.DeleteFunc(recs, func(r Record) bool { return r.ID <= watermark })
		slices.SortFunc(recs, func(a, b Record) int { return cmp.Compare(a.ID, b.ID) })
		for len(recs) > 0 {
			n := min(len(recs), moveMaxRecords)
			rejected, err := ib.sink.Move(context.Background(), recs[:n], true)
			if err != nil {
				return segs, err
			}
			for _, id := range rejected {
				s := from[id]
				ib.logf("inbox recovery: the record of delivery %d in %s passed its checksum but could not be read; it was not stored", id, filepath.Base(s.path))
				damaged[s] = true
			}
			recs = recs[n:]
		}
	}
	kept := segs[:0]
	for _, s := range segs {
		if damaged[s] {
			ib.keepAside(s)
			continue
		}
		if err := s.clearHeader(); err != nil {
			return segs, err
		}
		kept = append(kept, s)
	}
	return kept, nil
}

// keepAside moves a damaged segment into damaged/, where nothing writes
// to it again, and says where it went.
func (ib *Inbox) keepAside(s *segment) {
	s.f.Close()
	dir := filepath.Join(ib.dir, "damaged")
	to := filepath.Join(dir, time.Now().UTC().Format("20060102T150405Z-")+filepath.Base(s.path))
	err := os.MkdirAll(dir, 0o700)
	if err == nil {
		err = os.Rename(s.path, to)
	}
	if err == nil {
		err = syncDir(ib.dir)
	}
	if err != nil {
		ib.logf("inbox: could not keep the damaged file %s aside (%v); it stays where it is", s.path, err)
		return
	}
	ib.logf("inbox: the damaged file is kept as %s", to)
}

func (ib *Inbox) closeFiles(segs []*segment) {
	for _, s := range segs {
		s.f.Close()
	}
}

// batch is a group of records written with one write and one fdatasync.
type batch struct {
	// buf holds the records, each behind a record header whose length,
	// checksum and generation the leader fills in.
	buf []byte
	// ends are the offsets in buf where each record ends.
	ends []int
	// last is the highest id in the batch.
	last int64
	// lead is closed to hand the batch to its first appender, who writes
	// it; done is closed once it is written, err set before.
	lead, done chan struct{}
	err        error
}

func newBatch(buf []byte) *batch {
	return &batch{buf: buf[:0], lead: make(chan struct{}), done: make(chan struct{})}
}

// Append makes one record durable and returns the id it was given:
// encode appends the record's payload to dst and returns it. It returns
// once the record is on disk. Concurrent appends share one write and one
// fdatasync (group commit): records queue in the current batch; the first
// appender of a batch writes it as soon as the previous batch is written,
// and the others wait on the batch's done channel alone.
func (ib *Inbox) Append(encode func(dst []byte) []byte) (int64, error) {
	ib.load.Begin()
	defer ib.load.End()
	ib.mu.Lock()
	if ib.closed {
		ib.mu.Unlock()
		return 0, ErrClosed
	}
	id := ib.nextID()
	b := ib.cur
	first := len(b.buf) == 0
	b.buf = encode(appendRecordHeader(b.buf, id))
	b.ends = append(b.ends, len(b.buf))
	b.last = id
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
		ib.cur = newBatch(ib.spareBuf)
		ib.spareBuf = nil
		ib.mu.Unlock()
		err := ib.write(b)
		ib.mu.Lock()
		if err != nil {
			err = fmt.Errorf("write delivery inbox: %w", err)
		} else {
			ib.written = b.last
		}
		if cap(b.buf) <= keepBatchBuf {
			ib.spareBuf = b.buf[:0]
		}
		b.buf, b.ends = nil, nil
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
			// is scheduled.
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

// write places a batch's records in segments, rotating as they fill, and
// makes them durable. Only the leader of a batch calls it. If it fails,
// every segment it wrote to is sealed at its durable end, so no later
// record follows the failed ones and the next batch starts a new segment
// (which works again once the disk has room).
func (ib *Inbox) write(b *batch) (err error) {
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
	defer func() {
		if err == nil {
			return
		}
		ib.mu.Lock()
		defer ib.mu.Unlock()
		for _, r := range runs {
			r.s.sealed, r.s.final = true, r.s.durable
			r.s.off = r.s.durable
		}
	}()
	pos := 0
	for _, end := range b.ends {
		need := int64(end - pos)
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
		stampRecord(b.buf[pos:end], cur.gen)
		pos = end
		runs[len(runs)-1].end = pos
		cur.off += need
	}
	for _, r := range runs {
		if _, err := r.s.f.WriteAt(b.buf[r.start:r.end], r.at); err != nil {
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
func (ib *Inbox) rotate(cur *segment, need int64) (*segment, error) {
	ib.mu.Lock()
	if cur != nil && !cur.sealed {
		cur.sealed, cur.final = true, cur.off
	}
	var s *segment
	if len(ib.spares) > 0 && need <= SegSize-segHeaderLen {
		s = ib.spares[0]
		ib.spares = ib.spares[1:]
	}
	ib.mu.Unlock()
	ib.wakePrep()
	if s == nil {
		size := max(int64(SegSize), (segHeaderLen+need+4095)&^4095)
		var err error
		if s, err = ib.create(size, nil); err != nil {
			return nil, err
		}
		s.oversize = size > SegSize
	}
	s.gen = randomGen()
	if _, err := s.f.WriteAt(segHeader(s.gen), 0); err != nil {
		// Back among the spares: nothing of this use was written.
		ib.mu.Lock()
		s.gen = 0
		if !s.oversize {
			ib.spares = append(ib.spares, s)
		}
		ib.mu.Unlock()
		return nil, err
	}
	s.off, s.durable, s.sealed, s.final = segHeaderLen, segHeaderLen, false, 0
	ib.mu.Lock()
	ib.segs = append(ib.segs, s)
	ib.mu.Unlock()
	return s, nil
}

// create makes a new segment file of size bytes. With zeros (a zeroed
// buffer) it writes every block, so a later fdatasync has no allocation
// to journal; otherwise the file is sparse and its first use is slower.
func (ib *Inbox) create(size int64, zeros []byte) (*segment, error) {
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

func (ib *Inbox) wakePrep() {
	select {
	case ib.prep <- struct{}{}:
	default:
	}
}

// prepLoop keeps one zero-filled spare ready, so the writer rarely has to
// start a sparse file on the ack path.
func (ib *Inbox) prepLoop() {
	defer ib.wg.Done()
	zeros := make([]byte, zeroStep)
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
		s, err := ib.create(SegSize, zeros)
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

// moveLoop moves durable records into the sink in order, then retires
// each segment it has finished.
func (ib *Inbox) moveLoop() {
	defer ib.wg.Done()
	var cur *segment
	var off int64
	var buf []byte
	backoff := moveRetryMin
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
				ib.moving.Fail(err)
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
				backoff = min(2*backoff, moveRetryMax)
				continue
			}
			ib.moving.OK()
			backoff = moveRetryMin
			off += n
			if !quitting {
				ib.load.Pause(time.Since(started), ib.quit)
			}
		case finished:
			ib.retire(cur)
			cur = nil
		case quitting:
			return
		default:
			// Close waits for the last batch before it signals quit, so
			// after quit one more look finds everything there is to move.
			select {
			case <-ib.kick:
			case <-ib.quit:
				quitting = true
			}
		}
	}
}

// moveFrom moves the records of cur from off (up to end, at most one
// transaction's worth) and returns how many bytes it is done with. The
// bytes up to end are whole records this process wrote; any that fail
// their checksum are skipped and reported, and the segment is kept aside
// once it is finished.
func (ib *Inbox) moveFrom(cur *segment, off, end int64, buf *[]byte) (int64, error) {
	limit, size := moveMaxRecords, min(end-off, moveMaxBytes)
	if ib.load.Waiting() > 0 {
		limit, size = moveBusyRecords, min(size, moveBusyBytes)
	}
	var res scanResult
	for {
		if int64(cap(*buf)) < size {
			*buf = make([]byte, size)
		}
		b := (*buf)[:size]
		if _, err := cur.f.ReadAt(b, off); err != nil {
			return 0, fmt.Errorf("read inbox: %w", err)
		}
		res = scan(b, cur.gen)
		if len(res.recs) > 0 || off+size >= end {
			break
		}
		// Nothing whole in the read: one record bigger than it (read
		// exactly that one), or damage as long as it (read on to the end
		// of what is durable).
		if n := recordLen(b); n > size && off+n <= end {
			size = n
		} else {
			size = end - off
		}
	}
	if len(res.recs) > limit {
		res.recs = res.recs[:limit]
		res.gaps = slices.DeleteFunc(res.gaps, func(g gap) bool { return g.off > res.recs[limit-1].off })
		res.end = res.recs[limit-1].off + recHeaderLen + idLen + len(res.recs[limit-1].payload)
	} else if off+size >= end && int64(res.end) < size {
		// Everything up to end was written as whole records: what does
		// not read as one is damage, not a torn tail.
		res.gaps = append(res.gaps, gap{off: res.end, n: int(size) - res.end})
		res.end = int(size)
	}
	name := filepath.Base(cur.path)
	damaged := len(res.gaps) > 0
	for _, g := range res.gaps {
		g.off += int(off) - segHeaderLen
		ib.logf("inbox: the mover skipped %s (acknowledged deliveries in it are lost)", describeGap(name, g, res.recs))
	}
	recs := make([]Record, len(res.recs))
	for i, r := range res.recs {
		recs[i] = Record{ID: r.id, Payload: r.payload}
	}
	var lastID int64
	if len(recs) > 0 {
		rejected, err := ib.sink.Move(context.Background(), recs, false)
		if err != nil {
			return 0, err
		}
		for _, id := range rejected {
			ib.logf("inbox: the record of delivery %d in %s could not be read; it was not stored", id, name)
		}
		lastID = recs[len(recs)-1].ID
		damaged = damaged || len(rejected) > 0
	}
	ib.mu.Lock()
	cur.damaged = cur.damaged || damaged
	if lastID > ib.moved {
		ib.moved = lastID
	}
	if off+int64(res.end) >= cur.durable && cur == ib.segs[len(ib.segs)-1] && !ib.syncing && len(ib.cur.buf) == 0 {
		// Nothing durable is left to read: ids written but skipped as
		// damage are done with too.
		ib.moved = max(ib.moved, ib.written)
	}
	ib.moveErr = nil
	ib.movedC.Broadcast()
	ib.mu.Unlock()
	return int64(res.end), nil
}

// retire takes a segment whose records are all moved out of use: it
// becomes a spare (its blocks are all written, so reuse is fast), is kept
// aside (damaged) or is deleted.
func (ib *Inbox) retire(s *segment) {
	ib.mu.Lock()
	if len(ib.segs) > 0 && ib.segs[0] == s {
		ib.segs = ib.segs[1:]
	}
	keep := !s.oversize && !s.damaged && len(ib.spares) < keepSpares && !ib.closed
	if keep {
		s.gen, s.off, s.durable, s.sealed, s.final = 0, 0, 0, false, 0
		ib.spares = append(ib.spares, s)
	}
	ib.mu.Unlock()
	switch {
	case keep:
	case s.damaged:
		ib.keepAside(s)
	default:
		s.f.Close()
		os.Remove(s.path)
	}
}

// WaitMoved returns once the record id is in the sink (or skipped as
// damage), at once for ids this inbox did not write durably, or with the
// mover's current failure or ErrClosed.
func (ib *Inbox) WaitMoved(id int64) error {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	for ib.moved < min(id, ib.written) {
		if ib.moveErr != nil {
			return fmt.Errorf("move deliveries from the inbox: %w", ib.moveErr)
		}
		if ib.isQuitting() {
			return ErrClosed
		}
		select {
		case ib.kick <- struct{}{}:
		default:
		}
		ib.movedC.Wait()
	}
	return nil
}

// Close stops appends, lets the mover move everything written, marks the
// segments empty and releases the lock. Records it could not move stay in
// the inbox for the next open.
func (ib *Inbox) Close() error {
	ib.mu.Lock()
	ib.closed = true
	for ib.syncing {
		ib.idle.Wait()
	}
	ib.mu.Unlock()
	close(ib.quit)
	ib.mu.Lock()
	ib.movedC.Broadcast() // WaitMoved callers return ErrClosed
	ib.mu.Unlock()
	ib.wg.Wait()
	ib.mu.Lock()
	defer ib.mu.Unlock()
	var errs []error
	if ib.moved >= ib.written {
		for _, s := range ib.segs {
			switch {
			case s.damaged:
				ib.keepAside(s)
				continue
			case s.oversize:
				s.f.Close()
				os.Remove(s.path)
				continue
			}
			if err := s.clearHeader(); err != nil {
				errs = append(errs, err)
			}
			s.f.Close()
		}
	} else {
		errs = append(errs, fmt.Errorf("deliveries up to id %d left in the inbox %s for the next start", ib.written, ib.dir))
		ib.closeFiles(ib.segs)
	}
	ib.closeFiles(ib.spares)
	ib.lock.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close inbox: %w", err)
	}
	return nil
}

func (ib *Inbox) isQuitting() bool {
	select {
	case <-ib.quit:
		return true
	default:
		return false
	}
}
