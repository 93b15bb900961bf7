// Package human writes values for people to read: durations as Hookscope
// says them everywhere ("0.42 ms", "6.1 ms", "1.2 s", "3 min", "2 h 5 min"),
// counts with separators ("12,345") and sizes ("872 B", "2.5 KiB").
// Machine output (--json, stored rows) keeps its own units.
package human

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration writes d with a space before the unit and two or three
// significant digits below a minute, whole units above: 0.49 ms, 6.1 ms,
// 12 ms, 1.2 s, 45 s, 3 min, 2 min 10 s, 1 h 5 min, 2 d 3 h. A negative
// duration gets a minus sign; zero is "0 ms".
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	ms := func(step time.Duration) string {
		return strconv.FormatFloat(float64(d.Round(step).Microseconds())/1000, 'f', -1, 64) + " ms"
	}
	switch {
	case d < time.Millisecond:
		return ms(10 * time.Microsecond)
	case d < 10*time.Millisecond:
		return ms(100 * time.Microsecond)
	case d < time.Second-500*time.Microsecond: // 999.6 ms is said "1 s", not "1000 ms"
		return ms(time.Millisecond)
	case d < 10*time.Second-50*time.Millisecond: // 9.96 s is said "10 s"
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + " s"
	}
	switch d = d.Round(time.Second); {
	case d < time.Minute:
		return strconv.Itoa(int(d.Seconds())) + " s"
	case d < time.Hour:
		return pair(int(d/time.Minute), "min", int(d%time.Minute/time.Second), "s")
	}
	switch d = d.Round(time.Minute); {
	case d < 24*time.Hour:
		return pair(int(d/time.Hour), "h", int(d%time.Hour/time.Minute), "min")
	}
	d = d.Round(time.Hour)
	return pair(int(d/(24*time.Hour)), "d", int(d%(24*time.Hour)/time.Hour), "h")
}

// pair writes "2 min 10 s", or "3 min" when the smaller unit is zero.
func pair(big int, bigUnit string, small int, smallUnit string) string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(big) + " " + bigUnit)
	if small > 0 {
		b.WriteString(" " + strconv.Itoa(small) + " " + smallUnit)
	}
	return b.String()
}

// Thousands writes n with a comma between each group of three digits:
// 12,345 and -1,240.
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Bytes writes a size in binary units with one decimal above a KiB: 872
// B, 2.5 KiB, 10.0 MiB, 1.2 GiB.
func Bytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
