// Package pubsub is Hookscope's one subscriber registry: the inspector
// engine, the tunnel supervisor and the window each keep the functions that
// want their news in a Hub.
package pubsub

import "sync"

// Hub holds the subscribers of values of type T. The zero Hub is ready to
// use and is safe for concurrent use; it must not be copied after first use.
type Hub[T any] struct {
	mu sync.Mutex
	// subs is replaced, never changed in place, so Publish can call a
	// snapshot without holding mu.
	subs []entry[T]
	next uint64
}

type entry[T any] struct {
	id uint64
	fn func(T)
}

// Subscribe adds fn and returns the function that removes it again;
// calling that more than once is harmless.
func (h *Hub[T]) Subscribe(fn func(T)) (cancel func()) {
	h.mu.Lock()
	h.next++
	id := h.next
	subs := make([]entry[T], len(h.subs), len(h.subs)+1)
	copy(subs, h.subs)
	h.subs = append(subs, entry[T]{id: id, fn: fn})
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		subs := make([]entry[T], 0, len(h.subs))
		for _, e := range h.subs {
			if e.id != id {
				subs = append(subs, e)
			}
		}
		h.subs = subs
	}
}

// Publish calls every subscriber with v, in the order they subscribed, on
// the caller's goroutine and without holding the Hub's lock: a subscriber
// may subscribe, cancel or publish itself. One added or cancelled while
// Publish runs may or may not get v. A slow subscriber delays the others
// and the publisher, so publishers say in their own documentation which
// goroutine their subscribers run on.
func (h *Hub[T]) Publish(v T) {
	h.mu.Lock()
	subs := h.subs
	h.mu.Unlock()
	for _, e := range subs {
		e.fn(v)
	}
}
