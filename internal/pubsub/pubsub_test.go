package pubsub

import (
	"slices"
	"sync"
	"testing"
)

func TestPublishCallsSubscribersInOrderUntilCancelled(t *testing.T) {
	var h Hub[int]
	var got []string
	record := func(name string) func(int) {
		return func(v int) { got = append(got, name+":"+string(rune('0'+v))) }
	}
	cancelA := h.Subscribe(record("a"))
	h.Subscribe(record("b"))
	h.Publish(1)
	cancelA()
	cancelA() // twice is harmless
	h.Publish(2)
	want := []string{"a:1", "b:1", "b:2"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestSubscriberMayCancelItselfDuringPublish(t *testing.T) {
	var h Hub[string]
	calls := 0
	var cancel func()
	cancel = h.Subscribe(func(string) {
		calls++
		cancel() // would deadlock if Publish held the lock
	})
	h.Publish("x")
	h.Publish("y")
	if calls != 1 {
		t.Fatalf("calls = %d, want 1", calls)
	}
}

func TestConcurrentUse(t *testing.T) {
	var h Hub[int]
	var mu sync.Mutex
	sum := 0
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cancel := h.Subscribe(func(v int) {
				mu.Lock()
				sum += v
				mu.Unlock()
			})
			h.Publish(1)
			cancel()
		}()
	}
	wg.Wait()
	h.Publish(1000) // everyone cancelled: nobody gets it
	if sum < 8 || sum >= 1000 {
		t.Fatalf("sum = %d", sum)
	}
}
