package relay

import (
	"fmt"
	"strings"
	"time"

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
		keeps += ", at most " + bytesText(uint64(st.MaxBytes))
	}
	fmt.Fprintf(&b, "Stream %s: %s, %s", st.Stream, plural.Count(int(st.Deliveries), "delivery", "deliveries"), bytesText(st.Bytes))
	if !st.First.IsZero() {
		fmt.Fprintf(&b, ", oldest %s ago", ago(now.Sub(st.First)))
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
	s := fmt.Sprintf("%s: %s behind", l.Name, thousands(l.Behind))
	switch {
	case l.Connected:
		s += ", connected"
	case !l.LastSeen.IsZero():
		s += ", last seen " + ago(now.Sub(l.LastSeen)) + " ago"
	}
	return s
}

// ago is a rough duration: "40 s", "12 min", "9 h", "3 d".
func ago(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d d", int(d.Hours()/24))
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

// bytesText is a size in B, KB, MB or GB (decimal).
func bytesText(n uint64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	case n < 1000*1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}
