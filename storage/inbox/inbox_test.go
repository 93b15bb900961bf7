package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// memSink is a store in memory: what Move was given, and its watermark.
type memSink struct {
	mu      sync.Mutex
	recs    map[int64][]byte
	moved   int64
	fail    error         // Move fails with it while set
	hold    chan struct{} // Move waits for it to close while set
	reject  map[int64]bool
	entered chan struct{}
}

func newSink() *memSink { return &memSink{recs: map[int64][]byte{}} }

func (s *memSink) Moved(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.moved, nil
}

func (s *memSink) Move(_ context.Context, recs []Record, recovered bool) ([]int64, error) {
	s.mu.Lock()
	hold := s.hold
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
	if hold != nil {
		<-hold
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	var rejected []int64
	for i, r := range recs {
		if i > 0 && r.ID <= recs[i-1].ID {
			return nil, fmt.Errorf("ids out of order: %d after %d", r.ID, recs[i-1].ID)
		}
		if s.reject[r.ID] {
			rejected = append(rejected, r.ID)
			continue
		}
		if _, dup := s.recs[r.ID]; dup && !recovered {
			return nil, fmt.Errorf("id %d moved twice", r.ID)
		}
		s.recs[r.ID] = bytes.Clone(r.Payload)
	}
	s.moved = max(s.moved, recs[len(recs)-1].ID)
	return rejected, nil
}

func (s *memSink) get(id int64) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.recs[id]
	return b, ok
}

func (s *memSink) ids() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for id := range s.recs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logf(f string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(f, a...))
}

func (l *logs) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// counter hands out ids from 1000, above every hand-made record.
func counter() func() int64 {
	var n atomic.Int64
	n.Store(999)
	return func() int64 { return n.Add(1) }
}

func openT(t *testing.T, dir string, sink Sink, l *logs) *Inbox {
	t.Helper()
	ib, err := Open(dir, sink, Options{NextID: counter(), Logf: l.logf})
	if err != nil {
		t.Fatal(err)
	}
	return ib
}

func payload(s string) func([]byte) []byte {
	return func(dst []byte) []byte { return append(dst, s...) }
}

func TestAppendMovesEveryRecordByteExact(t *testing.T) {
	sink, l := newSink(), &logs{}
	ib := openT(t, t.TempDir(), sink, l)
	const n = 300
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id, err := ib.Append(payload(fmt.Sprintf("record %d %s", i, strings.Repeat("x", i))))
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for i, id := range ids {
		if err := ib.WaitMoved(id); err != nil {
			t.Fatal(err)
		}
		got, ok := sink.get(id)
		if want := fmt.Sprintf("record %d %s", i, strings.Repeat("x", i)); !ok || string(got) != want {
			t.Fatalf("record %d (id %d): %q, want %q", i, id, got, want)
		}
	}
	if err := ib.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ib.Append(payload("late")); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v, want ErrClosed", err)
	}
	if l.all() != "" {
		t.Errorf("reports from a healthy run: %s", l.all())
	}
}

// segmentFile builds a segment by hand: records of gen, then tail bytes.
func segmentFile(gen uint64, recs []Record, tail []byte) []byte {
	b := segHeader(gen)
	for _, r := range recs {
		b = append(b, encoded(gen, r)...)
	}
	return append(append(b, tail...), make([]byte, 4096)...)
}

func encoded(gen uint64, r Record) []byte {
	b := append(appendRecordHeader(nil, r.ID), r.Payload...)
	stampRecord(b, gen)
	return b
}

func recs(ids ...int64) []Record {
	var out []Record
	for _, id := range ids {
		out = append(out, Record{ID: id, Payload: []byte(fmt.Sprintf("payload of %d", id))})
	}
	return out
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRecoveryStopsAtTornAndStaleRecords(t *testing.T) {
	dir := t.TempDir()
	torn := encoded(7, recs(4)[0])
	torn = torn[:len(torn)-3] // cut short: the process died in the write
	stale := encoded(6, recs(5)[0])
	write(t, filepath.Join(dir, "seg-000001"), segmentFile(7, recs(1, 2, 3), torn))
	write(t, filepath.Join(dir, "seg-000002"), segmentFile(9, recs(6), stale))
	write(t, filepath.Join(dir, "seg-000003"), make([]byte, 8192)) // an unused spare
	sink, l := newSink(), &logs{}
	if err := Recover(dir, sink, l.logf); err != nil {
		t.Fatal(err)
	}
	if got, want := sink.ids(), []int64{1, 2, 3, 6}; !slices.Equal(got, want) {
		t.Fatalf("recovered %v, want %v", got, want)
	}
	if got, _ := sink.get(6); string(got) != "payload of 6" {
		t.Fatalf("record 6: %q", got)
	}
	// Recovered once: the headers are cleared, a second run finds nothing.
	again := newSink()
	if err := Recover(dir, again, l.logf); err != nil || len(again.ids()) != 0 {
		t.Fatalf("second recovery: %v, %v", again.ids(), err)
	}
}

// One damaged byte costs the record it is in, never the ones after it;
// the reader says what it skipped, and the file is kept aside as it was.
func TestDamagedRecordCostsOnlyItself(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   func(first, second int) int // offset of the flipped byte, given the record offsets
	}{
		{"payload", func(_, second int) int { return second + recHeaderLen + idLen + 3 }},
		{"length", func(_, second int) int { return second }},
		{"checksum", func(_, second int) int { return second + 5 }},
		{"id", func(_, second int) int { return second + recHeaderLen }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			seg := segmentFile(7, recs(1, 2, 3, 4, 5), nil)
			second := segHeaderLen + len(encoded(7, recs(1)[0]))
			seg[tc.at(segHeaderLen, second)] ^= 0x5a
			path := filepath.Join(dir, "seg-000001")
			write(t, path, seg)
			sink, l := newSink(), &logs{}
			ib := openT(t, dir, sink, l)
			if got, want := sink.ids(), []int64{1, 3, 4, 5}; !slices.Equal(got, want) {
				t.Fatalf("recovered %v, want %v", got, want)
			}
			report := l.all()
			if !strings.Contains(report, "damaged bytes at offset ") || !strings.Contains(report, "between deliveries 1 and 3") {
				t.Errorf("report does not say what was skipped: %q", report)
			}
			kept, _ := filepath.Glob(filepath.Join(dir, "damaged", "*seg-000001"))
			if len(kept) != 1 {
				t.Fatalf("damaged file not kept aside: %v\n%s", kept, report)
			}
			if b, err := os.ReadFile(kept[0]); err != nil || !bytes.Equal(b, seg) {
				t.Errorf("the kept file differs from the damaged one (%v)", err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("damaged file still in use: %v", err)
			}
			// The inbox works on with fresh segments.
			id, err := ib.Append(payload("after"))
			if err != nil {
				t.Fatal(err)
			}
			if err := ib.WaitMoved(id); err != nil {
				t.Fatal(err)
			}
			if err := ib.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A record the store cannot read (its checksum matched) is reported and
// costs only itself.
func TestRejectedRecordIsReportedAndKept(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "seg-000001"), segmentFile(7, recs(1, 2, 3), nil))
	sink, l := newSink(), &logs{}
	sink.reject = map[int64]bool{2: true}
	if err := Recover(dir, sink, l.logf); err != nil {
		t.Fatal(err)
	}
	if got := sink.ids(); !slices.Equal(got, []int64{1, 3}) {
		t.Fatalf("stored %v", got)
	}
	if !strings.Contains(l.all(), "delivery 2") {
		t.Errorf("report: %q", l.all())
	}
	if kept, _ := filepath.Glob(filepath.Join(dir, "damaged", "*")); len(kept) != 1 {
		t.Errorf("kept aside: %v", kept)
	}
}

// The live mover checks what it reads too: damage between the write and
// the move costs the damaged record only, and nobody waits for it forever.
func TestMoverSkipsDamage(t *testing.T) {
	dir := t.TempDir()
	sink, l := newSink(), &logs{}
	sink.hold = make(chan struct{})
	sink.entered = make(chan struct{}, 1)
	ib := openT(t, dir, sink, l)
	first, err := ib.Append(payload("first"))
	if err != nil {
		t.Fatal(err)
	}
	<-sink.entered // the mover holds "first" and waits
	var ids []int64
	for i := range 3 {
		id, err := ib.Append(payload(fmt.Sprintf("record %d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Damage the middle record on disk.
	segs, _ := filepath.Glob(filepath.Join(dir, "seg-*"))
	var hit bool
	for _, p := range segs {
		b, _ := os.ReadFile(p)
		if i := bytes.Index(b, []byte("record 1")); i >= 0 {
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt([]byte("X"), int64(i))
			f.Close()
			hit = true
		}
	}
	if !hit {
		t.Fatal("record not found on disk")
	}
	close(sink.hold)
	for _, id := range append([]int64{first}, ids...) {
		if err := ib.WaitMoved(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := sink.get(ids[1]); ok {
		t.Error("the damaged record was moved")
	}
	for _, id := range []int64{first, ids[0], ids[2]} {
		if _, ok := sink.get(id); !ok {
			t.Errorf("record %d after the damaged one was lost", id)
		}
	}
	if !strings.Contains(l.all(), "the mover skipped") {
		t.Errorf("report: %q", l.all())
	}
	if err := ib.Close(); err != nil {
		t.Fatal(err)
	}
	if kept, _ := filepath.Glob(filepath.Join(dir, "damaged", "*")); len(kept) != 1 {
		t.Errorf("kept aside: %v", kept)
	}
}

// While the store cannot take records the inbox keeps them, says so once,
// and says so again once when it can; waiting for a record returns the
// failure instead of hanging, and Close does not hang either.
func TestMoverFaultIsReportedOnce(t *testing.T) {
	dir := t.TempDir()
	sink, l := newSink(), &logs{}
	sink.fail = errors.New("database or disk is full")
	ib := openT(t, dir, sink, l)
	id, err := ib.Append(payload("kept"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ib.WaitMoved(id); err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("WaitMoved while failing: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // several retries
	sink.mu.Lock()
	sink.fail = nil
	sink.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := ib.WaitMoved(id); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never moved after the store recovered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	report := l.all()
	if strings.Count(report, "cannot move") != 1 || strings.Count(report, "moving received deliveries into the store again") != 1 {
		t.Errorf("report: %q", report)
	}
	if err := ib.Close(); err != nil {
		t.Fatal(err)
	}
}

func FuzzScan(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add(encoded(7, recs(1)[0]), uint8(3))
	f.Fuzz(func(t *testing.T, noise []byte, at uint8) {
		// Arbitrary bytes: records or gaps, never a panic, and every
		// record found is valid.
		res := scan(noise, 7)
		for _, r := range res.recs {
			if validAt(noise[r.off:], 7) == 0 {
				t.Fatalf("invalid record reported at %d", r.off)
			}
		}
		// Noise dropped between valid records costs no record.
		good := recs(10, 11, 12)
		var b []byte
		for i, r := range good {
			b = append(b, encoded(7, r)...)
			if i == int(at)%len(good) {
				b = append(b, noise...)
			}
		}
		got := scan(b, 7)
		var ids []int64
		for _, r := range got.recs {
			ids = append(ids, r.id)
		}
		if !slices.Contains(ids, 10) || !slices.Contains(ids, 11) || !slices.Contains(ids, 12) {
			t.Fatalf("records lost to noise: %v", ids)
		}
	})
}
