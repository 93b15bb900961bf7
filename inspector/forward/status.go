package forward

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/hookscope/hookscope/internal/human"
	"github.com/hookscope/hookscope/internal/plural"
)

// App names the route's app for a person: the target's host, and the
// route's glob when it has one ("localhost:3000", "localhost:3000
// (media.*)").
func (rs RouteStatus) App() string {
	host := rs.Target
	if u, err := url.Parse(rs.Target); err == nil && u.Host != "" {
		host = u.Host
	}
	if glob, _, ok := strings.Cut(rs.Name, "="); ok && !strings.Contains(glob, "://") {
		host += " (" + glob + ")"
	}
	return host
}

// DownText says that the route's app is down, for how long (when now is
// not zero), how many deliveries wait and why, in one line that both
// faces show: "your app at localhost:3000 is down (2 min 10 s); 41
// deliveries wait. Nothing is listening on localhost:3000: is your app
// running? Hookscope keeps trying every few seconds and sends them in
// order." In pass-through nothing waits: the service got 502 for each
// delivery and sends it again itself.
func (rs RouteStatus) DownText(now time.Time) string {
	how := ""
	if !now.IsZero() && !rs.Since.IsZero() {
		how = " (" + human.Duration(now.Sub(rs.Since).Round(time.Second)) + ")"
	}
	if rs.Mode == ModePassThrough {
		return fmt.Sprintf("your app at %s is down%s. %s The service gets 502 for each delivery meanwhile and sends it again later; Hookscope keeps nothing back.",
			rs.App(), how, sentence(rs.LastError))
	}
	return fmt.Sprintf("your app at %s is down%s; %s. %s Hookscope keeps trying every few seconds and sends them in order.",
		rs.App(), how, plural.Count(int(rs.Waiting), "delivery waits", "deliveries wait"), sentence(rs.LastError))
}

// BackText says that the route's app answers again after being down for
// downFor, and what happens to the deliveries that waited.
func (rs RouteStatus) BackText(downFor time.Duration) string {
	after := "less than a second"
	if d := downFor.Round(time.Second); d > 0 {
		after = human.Duration(d)
	}
	msg := fmt.Sprintf("your app at %s is back after %s", rs.App(), after)
	if rs.Waiting > 0 && rs.Mode != ModePassThrough {
		msg += fmt.Sprintf("; the %s that waited go now, in order", plural.Count(int(rs.Waiting), "delivery", "deliveries"))
	}
	return msg + "."
}

// sentence starts s with a capital letter and ends it with a stop.
func sentence(s string) string {
	if s == "" {
		return ""
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, "?") && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
