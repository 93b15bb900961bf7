package forward

import "sync"

// hub hands events to subscribers. It is a minimal local pub/sub:
// internal/ is getting a shared generic one, which should replace it.
type hub struct {
	mu   sync.Mutex
	subs map[int]func(Event)
	next int
}

func (h *hub) subscribe(fn func(Event)) (cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[int]func(Event){}
	}
	id := h.next
	h.next++
	h.subs[id] = fn
	return func() {
		h.mu.Lock()
		delete(h.subs, id)
		h.mu.Unlock()
	}
}

func (h *hub) publish(ev Event) {
	h.mu.Lock()
	fns := make([]func(Event), 0, len(h.subs))
	for _, fn := range h.subs {
		fns = append(fns, fn)
	}
	h.mu.Unlock()
	for _, fn := range fns {
		fn(ev)
	}
}
