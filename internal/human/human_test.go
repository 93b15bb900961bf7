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

func TestCountAndBytes(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Count(0), "0"},
		{Count(999), "999"},
		{Count(1000), "1,000"},
		{Count(int64(5002)), "5,002"},
		{Count(uint64(1234567)), "1,234,567"},
		{Count(-12345), "-12,345"},
		{Count(uint64(18446744073709551615)), "18,446,744,073,709,551,615"},
		{Bytes(11), "11 B"},
		{Bytes(1023), "1023 B"},
		{Bytes(2458), "2.4 KiB"},
		{Bytes(int64(5 << 20)), "5.0 MiB"},
		{Bytes(uint64(3 << 30)), "3.0 GiB"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
