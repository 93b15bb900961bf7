package human

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 ms"},
		{3 * time.Microsecond, "0 ms"},
		{487 * time.Microsecond, "0.49 ms"},
		{6123 * time.Microsecond, "6.1 ms"},
		{9960 * time.Microsecond, "10 ms"},
		{12 * time.Millisecond, "12 ms"},
		{634400 * time.Microsecond, "634 ms"},
		{999600 * time.Microsecond, "1 s"},
		{1234 * time.Millisecond, "1.2 s"},
		{9960 * time.Millisecond, "10 s"},
		{45 * time.Second, "45 s"},
		{59600 * time.Millisecond, "1 min"},
		{3 * time.Minute, "3 min"},
		{130 * time.Second, "2 min 10 s"},
		{time.Hour - 300*time.Millisecond, "1 h"},
		{65 * time.Minute, "1 h 5 min"},
		{6 * time.Hour, "6 h"},
		{51 * time.Hour, "2 d 3 h"},
		{-1500 * time.Millisecond, "-1.5 s"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestThousandsAndBytes(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		thou  string
		bytes string
	}{
		{0, "0", "0 B"},
		{999, "999", "999 B"},
		{1024, "1,024", "1.0 KiB"},
		{12345, "12,345", "12.1 KiB"},
		{10 << 20, "10,485,760", "10.0 MiB"},
		{3 << 30, "3,221,225,472", "3.0 GiB"},
		{-1240, "-1,240", "-1240 B"},
	} {
		if got := Thousands(tc.n); got != tc.thou {
			t.Errorf("Thousands(%d) = %q, want %q", tc.n, got, tc.thou)
		}
		if got := Bytes(tc.n); got != tc.bytes {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.bytes)
		}
	}
}
