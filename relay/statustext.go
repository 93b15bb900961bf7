package relay

import (
	"fmt"
	"strings"
	"time"

	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// Text is the status in words, as `relay status` prints it.
func (st *Status) Text(now time.Time) string {
	var b strings.Builder
	public, laptops := st.PublicURL, st.LaptopURL
	if public == "" {
		public = "(not known yet: the relay records it once its tunnel is up or it is told its address)"
	}
	if laptops == "" {
		laptops = "(from the public URL, under /nats)"
	}
	fmt.Fprintf(&b, "Public URL (give it to the service): %s\n", public)
	fmt.Fprintf(&b, "Laptops connect to:                 %s\n", laptops)
	keeps := "for " + days(st.MaxAge)
	if st.MaxBytes > 0 {
		keeps += ", at most " + human.Bytes(uint64(st.MaxBytes))
	}
	fmt.Fprintf(&b, "Stream %s: %s, %s", st.Stream, plural.Count(int(st.Deliveries), "delivery", "deliveries"), human.Bytes(st.Bytes))
	if !st.First.IsZero() {
		fmt.Fprintf(&b, ", oldest %s ago", human.Duration(max(now.Sub(st.First), 0).Round(time.Second)))
	}
	fmt.Fprintf(&b, "; keeps each %s", keeps)
	if st.Replicas > 1 {
		fmt.Fprintf(&b, " on %d replicas", st.Replicas)
	}
	b.WriteString("\n")
	if len(st.Laptops) == 0 {
		b.WriteString("Laptops: none invited yet (hookscope relay invite NAME)\n")
		return b.String()
	}
	b.WriteString("Laptops:\n")
	for _, l := range st.Laptops {
		fmt.Fprintf(&b, "  %s\n", l.Line(now))
	}
	return b.String()
}

// Line is one laptop's position: "bob: 3,114 behind, last seen 9 h ago".
func (l LaptopStatus) Line(now time.Time) string {
	switch {
	case !l.RevokedAt.IsZero():
		return fmt.Sprintf("%s: revoked %s", l.Name, l.RevokedAt.Local().Format(time.DateOnly))
	case !l.Started:
		return fmt.Sprintf("%s: invited %s, not connected yet", l.Name, l.InvitedAt.Local().Format(time.DateOnly))
	}
	s := fmt.Sprintf("%s: %s behind", l.Name, human.Count(l.Behind))
	switch {
	case l.Connected:
		s += ", connected"
	case !l.LastSeen.IsZero():
		s += ", last seen " + human.Duration(max(now.Sub(l.LastSeen), 0).Round(time.Second)) + " ago"
	}
	return s
}

// days is a retention: "7 days", "36 h".
func days(d time.Duration) string {
	if d <= 0 {
		return "ever"
	}
	if d%(24*time.Hour) == 0 {
		return plural.Count(int(d/(24*time.Hour)), "day", "days")
	}
	return d.String()
}
